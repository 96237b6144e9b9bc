package ledgerpg

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/feedsql"
)

// feedQueries returns the statements of Feed and of its purge, with the
// table names of r filled in.
func feedQueries(r *strings.Replacer) (page, beyond, purge string) {
	// Gap safety is enforced here, by the second condition: a row is
	// returned only when its transaction id is below the xmin of the
	// statement's snapshot, so every transaction that could still write a
	// row at an earlier (txid, seq) position has ended. Rows are numbered by
	// a sequence when they are inserted, not when they commit, and
	// concurrent transactions commit out of that order: ordering by seq
	// alone would let a reader pass seq 5 while seq 4 is still in flight,
	// and skip it for good when it commits. The price: an entry is returned
	// only once every transaction that was running when it committed has
	// ended, so a long transaction anywhere in the cluster (xids are
	// cluster-wide) holds the feed back for as long as it runs.
	page = r.Replace(`SELECT txid::text, seq, operation_id, key, generation, provider, kind, refs,
			coalesce(from_status, ''), to_status, coalesce(provider_ref, ''), coalesce(review_reason, ''), at
		FROM {{feed}}
		WHERE (txid, seq) > ($1::text::xid8, $2::bigint)
		  AND txid < pg_snapshot_xmin(pg_current_snapshot())
		  AND ($3::text = '' OR provider = $3::text)
		  AND (cardinality($4::text[]) = 0 OR to_status = ANY ($4::text[]))
		ORDER BY txid, seq
		LIMIT $5`)
	// A position at or past the snapshot's xmax, or numbered past the
	// sequence, was never handed out by this feed.
	beyond = r.Replace(`SELECT $1::text::xid8 >= pg_snapshot_xmax(pg_current_snapshot())
			OR $2::bigint > (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {{feedseq}})`)
	// The old rows of the feed's first batch rows, up to the first one that
	// is not old (bool_and over the running window): the purge only ever
	// removes a prefix of the feed (see storeflow.Cleanup). SKIP LOCKED
	// lets two Cleanups run at once without waiting on each other.
	purge = r.Replace(`DELETE FROM {{feed}} f USING (
			SELECT txid, seq, bool_and(at < $1) OVER (ORDER BY txid, seq) AS old
			FROM (SELECT txid, seq, at FROM {{feed}} ORDER BY txid, seq LIMIT $2 FOR UPDATE SKIP LOCKED) AS head
		) AS h
		WHERE f.txid = h.txid AND f.seq = h.seq AND h.old`)
	return page, beyond, purge
}

// Feed implements ledger.Store: one read-only statement for the page (and
// one before it for a cursor's bounds), ordered by (txid, seq), returning
// only what no running transaction can still precede (see feedQueries).
func (s *Store) Feed(ctx context.Context, p ledger.FeedParams) ([]ledger.FeedEntry, error) {
	wrap := func(err error) error { return translate("feed", err) }
	return feedsql.Read(p, feedsql.Steps{
		Beyond: func(epoch, seq int64) (bool, error) {
			var beyond bool
			err := s.pool.QueryRow(ctx, s.q.feedBeyond, strconv.FormatInt(epoch, 10), seq).Scan(&beyond)
			return beyond, err
		},
		Page: func(epoch, seq int64, limit int, provider string, statuses []string) ([]feedsql.Row, error) {
			rows, err := s.pool.Query(ctx, s.q.feedPage, strconv.FormatInt(epoch, 10), seq, provider, statuses, limit)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, func(row pgx.CollectableRow) (feedsql.Row, error) {
				var (
					r    feedsql.Row
					txid string
					at   pgtype.Timestamptz
				)
				head, tail := r.Dest()
				dest := append(append(append([]any{&txid, &r.Seq}, head...), &r.Entry.References), tail...)
				if err := row.Scan(append(dest, &at)...); err != nil {
					return r, err
				}
				epoch, err := strconv.ParseInt(txid, 10, 64)
				if err != nil {
					return r, err
				}
				r.Epoch, r.Entry.At = epoch, timeOf(at)
				return r, nil
			})
		},
	}, wrap)
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
