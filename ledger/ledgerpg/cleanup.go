package ledgerpg

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Cleanup implements ledger.Store. Each batch is one transaction: one
// DELETE statement returning the deleted operations (attempts and events go
// with them by ON DELETE CASCADE), then their tombstones. Then, with a
// TombstoneRetention, tombstones old enough are deleted in batches too;
// then webhook inbox entries received before p.Now -
// ledgerdriver.InboxRetention(p) (their outcomes go with them by ON DELETE
// CASCADE), likewise; then the settlement feed's old entries (purgeFeed).
// When ctx is cancelled between batches, Cleanup stops and returns what it
// did so far with the context's error.
func (s *Store) Cleanup(ctx context.Context, p ledger.CleanupParams) (ledger.CleanupReport, error) {
	if err := ledgerdriver.ValidateCleanup(p); err != nil {
		return ledger.CleanupReport{}, err
	}
	return sqlstore.Cleanup(ctx, p, sqlstore.CleanupSteps{
		DeleteBatch: func(now, finishedBefore time.Time, batch int) (int, error) {
			var n int
			err := s.durable(ctx, "cleanup", func(tx pgx.Tx) error {
				// Rule 6: only succeeded and failed rows, only after the
				// retention, and only once the provider has forgotten the
				// key: a row deleted earlier would let a late retry look new
				// and be sent again.
				rows, err := tx.Query(ctx, s.q.cleanupBatch, finishedBefore, now, batch)
				if err != nil {
					return err
				}
				ops, err := pgx.CollectRows(rows, rowToOp)
				if err != nil {
					return err
				}
				// The tombstones commit with the delete: no transaction can
				// see the operation gone and its tombstone not yet there.
				b := &pgx.Batch{}
				for _, op := range ops {
					b.Queue(s.q.insertTombstone, tombstoneArgs(ledgerdriver.TombstoneOf(op, now))...)
				}
				if err := tx.SendBatch(ctx, b).Close(); err != nil {
					return err
				}
				if s.afterCleanupBatch != nil {
					s.afterCleanupBatch()
				}
				n = len(ops)
				return nil
			})
			return n, translate("cleanup", err)
		},
		PurgeTombstones: func(finishedBefore time.Time, batch int) (int, error) {
			// Not forced durable: a purge lost in a crash only keeps
			// tombstones longer.
			tag, err := s.pool.Exec(ctx, s.q.purgeTombstones, finishedBefore, batch)
			if err != nil {
				return 0, translate("cleanup", err)
			}
			return int(tag.RowsAffected()), nil
		},
		PurgeInbox: func(receivedBefore time.Time, batch int) (int, error) {
			// Not forced durable either: a purge lost in a crash only keeps
			// entries longer.
			tag, err := s.pool.Exec(ctx, s.q.purgeInbox, receivedBefore, batch)
			if err != nil {
				return 0, translate("cleanup", err)
			}
			return int(tag.RowsAffected()), nil
		},
		PurgeFeed: func(madeBefore time.Time, batch int) (int, error) {
			return s.purgeFeed(ctx, madeBefore, batch)
		},
		Stats: func(rep *ledger.CleanupReport) error {
			var (
				oldest     pgtype.Timestamptz
				tombstones int
			)
			if err := s.pool.QueryRow(ctx, s.q.cleanupStats).Scan(&oldest, &tombstones); err != nil {
				return translate("cleanup", err)
			}
			rep.OldestFinishedAt = timeOf(oldest)
			rep.Tombstones = tombstones
			return nil
		},
		Stopped: func(err error) error { return fmt.Errorf("ledgerpg: cleanup: %w", err) },
	})
}
