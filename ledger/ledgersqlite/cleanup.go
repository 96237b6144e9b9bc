package ledgersqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Cleanup deletes succeeded and failed operations, with their attempts and
// events, that finished before p.Now - p.Retention and whose key window has
// closed, one write transaction per batch of at most ledgerdriver.CleanupBatchSize(p)
// operations, so writers are never blocked for long. Each deleted operation
// leaves a tombstone (ledgerdriver.TombstoneOf), written in the transaction of its
// delete. It never deletes an operation that is not final. With
// p.TombstoneRetention, tombstones whose operation finished longer ago than
// that are then deleted, in batches too; then webhook inbox entries received
// before p.Now - ledgerdriver.InboxRetention(p), with their outcomes, likewise. When ctx ends between batches, the
// report counts the batches already committed and the error wraps
// ctx.Err().
func (s *Store) Cleanup(ctx context.Context, p ledger.CleanupParams) (ledger.CleanupReport, error) {
	if err := ledgerdriver.ValidateCleanup(p); err != nil {
		return ledger.CleanupReport{}, fail("cleanup", err)
	}
	return sqlstore.Cleanup(ctx, p, sqlstore.CleanupSteps{
		DeleteBatch: func(now, finishedBefore time.Time, batch int) (int, error) {
			var n int
			err := s.write(ctx, func(c *sql.Conn) error {
				var err error
				n, err = deleteFinished(ctx, c, now, ledgerdriver.UTC(finishedBefore), batch)
				return err
			})
			if err != nil {
				return 0, fail("cleanup", err)
			}
			return n, nil
		},
		PurgeTombstones: func(finishedBefore time.Time, batch int) (int, error) {
			var n int
			err := s.write(ctx, func(c *sql.Conn) error {
				res, err := c.ExecContext(ctx, `DELETE FROM payonce_tombstones WHERE id IN (
				SELECT id FROM payonce_tombstones WHERE finished_at < ? ORDER BY finished_at LIMIT ?)`,
					micros(finishedBefore), batch)
				if err != nil {
					return err
				}
				purged, err := res.RowsAffected()
				n = int(purged)
				return err
			})
			if err != nil {
				return 0, fail("cleanup", err)
			}
			return n, nil
		},
		PurgeInbox: s.purgeStep(ctx, purgeInbox),
		PurgeFeed:  s.purgeStep(ctx, purgeFeed),
		Stats: func(rep *ledger.CleanupReport) error {
			err := s.read(ctx, func(c *sql.Conn) error {
				var oldest sql.NullInt64
				if err := c.QueryRowContext(ctx, `SELECT (SELECT MIN(finished_at) FROM payonce_operations
			WHERE status IN ('succeeded', 'failed')), (SELECT count(*) FROM payonce_tombstones)`).Scan(&oldest, &rep.Tombstones); err != nil {
					return err
				}
				rep.OldestFinishedAt = fromMicros(oldest)
				return nil
			})
			if err != nil {
				return fail("cleanup", err)
			}
			return nil
		},
		Stopped: func(err error) error { return fail("cleanup", err) },
	})
}

// deleteFinished deletes, in the write transaction on c, up to batch final
// operations that Cleanup may remove at now (finished before cutoff, key
// window closed), leaving their tombstones, and returns how many it
// deleted.
func deleteFinished(ctx context.Context, c *sql.Conn, now, cutoff time.Time, batch int) (int, error) {
	// Rule 6: only final rows, kept at least Retention (>= key TTL)
	// after they finished, and only once the provider has forgotten
	// their key: a row deleted earlier would let a late retry with
	// that key look new to the ledger.
	ops, err := queryOps(ctx, c, `SELECT `+opColumns+` FROM payonce_operations
		WHERE status IN ('succeeded', 'failed') AND finished_at < ?
		AND (key_expires_at IS NULL OR key_expires_at <= ?)
		ORDER BY finished_at, id LIMIT ?`,
		micros(cutoff), micros(now), batch)
	if err != nil || len(ops) == 0 {
		return 0, err
	}
	ids := make([]string, len(ops))
	for i, op := range ops {
		ids[i] = op.ID
		// The tombstone commits with the delete: a late duplicate
		// finds either the operation or its tombstone, never
		// nothing.
		if err := insertTombstone(ctx, c, ledgerdriver.TombstoneOf(op, now)); err != nil {
			return 0, err
		}
	}
	idJSON, err := json.Marshal(ids)
	if err != nil {
		return 0, err
	}
	// Attempts and events are deleted explicitly: with New the
	// caller's connections may not enforce foreign keys (ON DELETE
	// CASCADE).
	for _, table := range []string{"payonce_attempts", "payonce_events"} {
		if _, err := c.ExecContext(ctx, `DELETE FROM `+table+`
			WHERE operation_id IN (SELECT value FROM json_each(?))`, string(idJSON)); err != nil {
			return 0, err
		}
	}
	res, err := c.ExecContext(ctx, `DELETE FROM payonce_operations
		WHERE id IN (SELECT value FROM json_each(?))`, string(idJSON))
	if err != nil {
		return 0, err
	}
	deleted, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if int(deleted) != len(ids) {
		return 0, fmt.Errorf("deleted %d operations, selected %d", deleted, len(ids))
	}
	return len(ids), nil
}

// purgeStep runs purge (purgeInbox, purgeFeed) as one Cleanup step: one
// write transaction per batch.
func (s *Store) purgeStep(ctx context.Context, purge func(context.Context, *sql.Conn, time.Time, int) (int, error)) func(time.Time, int) (int, error) {
	return func(before time.Time, batch int) (int, error) {
		var n int
		err := s.write(ctx, func(c *sql.Conn) error {
			var err error
			n, err = purge(ctx, c, ledgerdriver.UTC(before), batch)
			return err
		})
		if err != nil {
			return 0, fail("cleanup", err)
		}
		return n, nil
	}
}
