package ledgerpg

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// feedQueries returns the statements of Feed and of its purge, with the
// table names of r filled in.
func feedQueries(r *strings.Replacer) (page, beyond, durable, purge string) {
	// Gap safety is enforced here, by the second condition: a row is
	// returned only when its position is below the xmin of the statement's
	// snapshot. A row's position is at least the id of the transaction
	// that wrote it (migration 008), and a row this snapshot cannot see
	// yet was written by a transaction still running at the snapshot or
	// begun after it, whose id is at least xmin: every row that commits
	// later sorts after every row returned here. Rows are numbered by a
	// sequence when they are inserted, not when they commit, and
	// concurrent transactions commit out of that order: ordering by seq
	// alone would let a reader pass seq 5 while seq 4 is still in flight,
	// and skip it for good when it commits. The price: an entry is returned
	// only once every transaction that was running when it was written has
	// ended, so a long transaction anywhere in the cluster (xids are
	// cluster-wide) holds the feed back for as long as it runs.
	// The position is read as text under another name: an output column
	// named pos would be what ORDER BY pos sorts, as text, putting 10000
	// before 9999 and moving a consumer's cursor backwards.
	page = r.Replace(`SELECT pos::text AS pos_text, seq, operation_id, key, generation, provider, kind, refs,
			coalesce(from_status, ''), to_status, coalesce(provider_ref, ''), coalesce(review_code, ''), coalesce(review_reason, ''), at
		FROM {{feed}}
		WHERE (pos, seq) > ($1::text::xid8, $2::bigint)
		  AND pos < pg_snapshot_xmin(pg_current_snapshot())
		  AND ($3::text = '' OR provider = $3::text)
		  AND (cardinality($4::text[]) = 0 OR to_status = ANY ($4::text[]))
		ORDER BY pos, seq
		LIMIT $5`)
	// A position at or past the snapshot's xmax, or numbered past the
	// sequence, was never handed out by this feed.
	beyond = r.Replace(`SELECT $1::text::xid8 >= pg_snapshot_xmax(pg_current_snapshot())
			OR $2::bigint > (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {{feedseq}})`)
	// Raises the durable mark (migration 008) to (pos, seq), writing
	// nothing when it is there already: then no row is locked, no WAL is
	// written, and the COMMIT waits for no flush (see Feed).
	durable = r.Replace(`INSERT INTO {{feeddurable}} AS d (id, pos, seq)
		SELECT 1, $1::text::xid8, $2::bigint
		WHERE NOT EXISTS (SELECT 1 FROM {{feeddurable}} WHERE (pos, seq) >= ($1::text::xid8, $2::bigint))
		ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, seq = excluded.seq
		WHERE (d.pos, d.seq) < (excluded.pos, excluded.seq)`)
	// The old rows of the feed's first batch rows, up to the first one that
	// is not old (bool_and over the running window): the purge only ever
	// removes a prefix of the feed (see sqlstore.Cleanup). SKIP LOCKED
	// lets two Cleanups run at once without waiting on each other.
	// Nor does the purge pass the cursor of any named consumer (migration
	// 011; the empty cursor is the start of the feed): an entry a
	// registered consumer has yet to apply is kept whatever its age,
	// because a consumer reads on after its cursor and would never see an
	// entry purged before it got there (silent loss). A consumer no longer
	// run holds the purge back until its row is deleted (its lag shows in
	// Stats).
	purge = r.Replace(`DELETE FROM {{feed}} f USING (
			SELECT pos, seq, bool_and(at < $1 AND NOT EXISTS (
				SELECT 1 FROM {{consumers}} c
				WHERE (head.pos, head.seq) > (CASE WHEN c.cursor = '' THEN '0' ELSE split_part(c.cursor, '.', 1) END::xid8,
				                              CASE WHEN c.cursor = '' THEN 0 ELSE split_part(c.cursor, '.', 2)::bigint END)
			)) OVER (ORDER BY pos, seq) AS old
			FROM (SELECT pos, seq, at FROM {{feed}} ORDER BY pos, seq LIMIT $2 FOR UPDATE SKIP LOCKED) AS head
		) AS h
		WHERE f.pos = h.pos AND f.seq = h.seq AND h.old`)
	return page, beyond, durable, purge
}

// Feed implements ledger.Store: the page is read in a transaction, ordered
// by (pos, seq), returning only what no running transaction can still
// precede (see feedQueries), and handed out only once everything it holds
// is durable.
//
// Why: a lazily durable Finish (synchronous_commit off, see
// Config.DurableOutcomes) is visible before its commit reaches the disk.
// Handed out then, a crash of the server would take the entry back (the
// consumer has settled an order the ledger no longer holds), and the
// server would hand the lost transactions' ids out again: later entries
// would sort before the consumer's cursor and never be read.
//
// How: after a read that found rows, the same transaction raises the
// feed's durable mark to the page's last position (a write, so that its
// COMMIT writes WAL and, with synchronous_commit on, waits for the flush:
// PostgreSQL commits a transaction that wrote no WAL asynchronously,
// whatever synchronous_commit says, even when it took a transaction id),
// and the rows are returned only if that COMMIT succeeds. Its commit
// record follows the commit record of every transaction the read saw (a
// commit is visible only once its record is in the write-ahead log, which
// is written in order), so the flush covers them all (and reaches the
// synchronous standbys, where configured). After a crash the server hands
// out ids above the id of the transaction that raised the mark, which it
// took after its read, so above every position that read returned (each
// below the read's xmin): nothing written after the crash sorts before a
// cursor handed out. A page at or below the mark needs no write:
// everything at or below the mark was visible to the read that raised it
// (gap safety: whatever commits later has a position above that read's
// xmin) and was flushed with it. The cost is one small write and one WAL
// flush per page with new entries, nothing per Charge; an empty page, or
// one read before, waits for nothing.
func (s *Store) Feed(ctx context.Context, p ledger.FeedParams) ([]ledger.FeedEntry, error) {
	if err := ledgerdriver.ValidateFeed(p); err != nil {
		return nil, err // before a round trip
	}
	var out []ledger.FeedEntry
	err := s.durable(ctx, "feed", func(tx pgx.Tx) error {
		var err error
		out, err = sqlstore.ReadFeed(p, sqlstore.FeedSteps{
			Beyond: func(epoch, seq int64) (bool, error) {
				var beyond bool
				err := tx.QueryRow(ctx, s.q.feedBeyond, strconv.FormatInt(epoch, 10), seq).Scan(&beyond)
				return beyond, err
			},
			Page: func(epoch, seq int64, limit int, provider string, statuses []string) ([]sqlstore.FeedRow, error) {
				rows, err := tx.Query(ctx, s.q.feedPage, strconv.FormatInt(epoch, 10), seq, provider, statuses, limit)
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, scanFeedRow)
			},
			// The flush is the COMMIT's, which s.durable runs after this
			// function returns; out is returned only if it succeeds.
			Durable: func(last sqlstore.FeedRow) error {
				_, err := tx.Exec(ctx, s.q.feedDurable, strconv.FormatInt(last.Epoch, 10), last.Seq)
				return err
			},
		}, func(err error) error { return err }) // wrapped below, once
		return err
	})
	if err != nil {
		var ve *ledger.ValidationError
		if errors.As(err, &ve) {
			return nil, err // a cursor beyond the end of the feed
		}
		return nil, translate("feed", err)
	}
	return out, nil
}

// scanFeedRow reads one row of Feed's page.
func scanFeedRow(row pgx.CollectableRow) (sqlstore.FeedRow, error) {
	var (
		r   sqlstore.FeedRow
		pos string
		at  pgtype.Timestamptz
	)
	head, tail := r.Dest()
	dest := append(append(append([]any{&pos, &r.Seq}, head...), &r.Entry.References), tail...)
	if err := row.Scan(append(dest, &at)...); err != nil {
		return r, err
	}
	epoch, err := strconv.ParseInt(pos, 10, 64)
	if err != nil {
		return r, err
	}
	r.Epoch, r.Entry.At = epoch, timeOf(at)
	return r, nil
}

// purgeFeed deletes the old entries at the head of the feed (see
// feedQueries).
func (s *Store) purgeFeed(ctx context.Context, madeBefore time.Time, batch int) (int, error) {
	// Not forced durable: a purge lost in a crash only keeps entries longer.
	tag, err := s.pool.Exec(ctx, s.q.purgeFeed, madeBefore, batch)
	if err != nil {
		return 0, translate("cleanup", err)
	}
	return int(tag.RowsAffected()), nil
}
