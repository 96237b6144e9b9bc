package ledgersqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Feed implements ledger.Store: one read of the page in seq order, made
// durable before it is returned (syncFeed). SQLite commits one writer at a
// time (every write transaction holds the file's write lock from BEGIN
// IMMEDIATE to COMMIT, and AUTOINCREMENT draws seq under it), so seq is
// commit order, every committed row is at or below the largest seq a
// reader can see, and two entries of one operation are numbered in the
// order they were made: ordering by seq is gap-safe and keeps each
// operation's order without further conditions (see migration 006).
// Cursors carry epoch 0.
func (s *Store) Feed(ctx context.Context, p ledger.FeedParams) ([]ledger.FeedEntry, error) {
	wrap := func(err error) error { return fail("feed", err) }
	return sqlstore.ReadFeed(p, sqlstore.FeedSteps{
		Beyond: func(epoch, seq int64) (bool, error) {
			if epoch != 0 {
				return true, nil // a PostgreSQL ledger's cursor
			}
			// sqlite_sequence keeps the largest seq ever handed out, also
			// once the rows are purged.
			var last int64
			err := s.read(ctx, func(c *sql.Conn) error {
				return c.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'payonce_feed'), 0)`).Scan(&last)
			})
			return seq > last, err
		},
		Page: func(_, seq int64, limit int, provider string, statuses []string) ([]sqlstore.FeedRow, error) {
			statusJSON, err := json.Marshal(statuses)
			if err != nil {
				return nil, err
			}
			var out []sqlstore.FeedRow
			err = s.read(ctx, func(c *sql.Conn) error {
				var err error
				out, err = collect(ctx, c, scanFeedRow, `SELECT seq, operation_id, key, generation, provider, kind, refs,
						coalesce(from_status, ''), to_status, coalesce(provider_ref, ''), coalesce(review_code, ''), coalesce(review_reason, ''), at
					FROM payonce_feed
					WHERE seq > ?1
					  AND (?2 = '' OR provider = ?2)
					  AND (?3 = '[]' OR to_status IN (SELECT value FROM json_each(?3)))
					ORDER BY seq LIMIT ?4`, seq, provider, string(statusJSON), limit)
				return err
			})
			return out, err
		},
		Durable: func(last sqlstore.FeedRow) error { return s.syncFeed(ctx, last.Seq) },
	}, wrap)
}

// feedSyncLevel is PRAGMA synchronous FULL: in WAL mode, "an additional
// sync operation of the WAL file happens after each transaction commit"
// (https://www.sqlite.org/pragma.html#pragma_synchronous).
const feedSyncLevel = 2

// syncFeed makes everything committed up to feed entry seq durable, so
// that Feed never hands out an entry an OS crash or a power cut can take
// back (see migration 008).
//
// How: a write transaction at synchronous=FULL, whatever the Store's
// level, that raises payonce_feed_durable.seq to seq. Its commit syncs the
// WAL file, and a sync covers the whole file: every frame written before
// it, among them those of the lazily committed transactions the read saw,
// which were in the WAL before this transaction's frames. (Frames that a
// checkpoint has already copied into the database file were synced with it.)
//
// Why not a checkpoint: a PASSIVE checkpoint syncs the WAL only when it
// has frames to copy, and it copies none past the snapshot of any open
// reader (walCheckpoint in SQLite's wal.c: the sync runs only when
// nBackfill < mxSafeFrame), so it may sync nothing; the other modes wait
// for readers or writers.
//
// A page that ends at or below the recorded seq needs nothing: that seq
// was written by a FULL commit, synced before it became visible, after a
// read that saw every entry up to it. The write changes the row only when
// it raises seq (an unchanged row writes no page, so it would not sync),
// and when another Feed raised it as far meanwhile, that Feed's sync
// covered this page too.
func (s *Store) syncFeed(ctx context.Context, seq int64) error {
	var durable int64
	err := s.read(ctx, func(c *sql.Conn) error {
		return c.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM payonce_feed_durable WHERE id = 1), 0)`).Scan(&durable)
	})
	if err != nil || seq <= durable {
		return err
	}
	return s.writeAt(ctx, feedSyncLevel, func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO payonce_feed_durable (id, seq) VALUES (1, ?1)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq WHERE seq < excluded.seq`, seq)
		return err
	})
}

// scanFeedRow reads one row of Feed's page.
func scanFeedRow(sc scanner) (sqlstore.FeedRow, error) {
	var (
		r    sqlstore.FeedRow
		refs string
		at   sql.NullInt64
	)
	head, tail := r.Dest()
	dest := append(append(append([]any{&r.Seq}, head...), &refs), tail...)
	if err := sc.Scan(append(dest, &at)...); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(refs), &r.Entry.References); err != nil {
		return r, ledgerdriver.Corrupt(r.Entry.OperationID, "feed.refs", err)
	}
	r.Entry.At = fromMicros(at)
	return r, nil
}

// purgeFeed deletes, of the feed's first batch rows, those before the
// first one made at or after madeBefore (a running min over seq order): the
// purge only ever removes a prefix of the feed (see sqlstore.Cleanup).
//
// Nor does it pass the cursor of any named consumer (migration 011; the
// seq after the cursor's '.', 0 for the empty cursor): an entry a
// registered consumer has yet to apply is kept whatever its age, because a
// consumer reads on after its cursor and would never see an entry purged
// before it got there (silent loss). A consumer no longer run holds the
// purge back until its row is deleted (its lag shows in Stats).
func purgeFeed(ctx context.Context, c *sql.Conn, madeBefore time.Time, batch int) (int, error) {
	res, err := c.ExecContext(ctx, `DELETE FROM payonce_feed WHERE seq IN (
			SELECT seq FROM (
				SELECT seq, min(at < ?1 AND seq <= coalesce(
					(SELECT min(CAST(substr(cursor, instr(cursor, '.') + 1) AS INTEGER)) FROM payonce_feed_consumers),
					seq)) OVER (ORDER BY seq) AS old
				FROM (SELECT seq, at FROM payonce_feed ORDER BY seq LIMIT ?2))
			WHERE old)`, micros(madeBefore), batch)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
