package ledgerpg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
)

// Cleanup implements ledger.Store. Each batch is one transaction: one
// DELETE statement returning the deleted operations (attempts and events go
// with them by ON DELETE CASCADE), then their tombstones. Then, with a
// TombstoneRetention, tombstones old enough are deleted in batches too.
// When ctx is cancelled between batches, Cleanup stops and returns what it
// did so far with the context's error.
func (s *Store) Cleanup(ctx context.Context, p ledger.CleanupParams) (ledger.CleanupReport, error) {
	if err := p.Validate(); err != nil {
		return ledger.CleanupReport{}, err
	}
	now := ledger.UTC(p.Now)
	finishedBefore := now.Add(-p.Retention)
	batch := p.EffectiveBatchSize()
	var report ledger.CleanupReport
	for {
		if err := ctx.Err(); err != nil {
			return report, fmt.Errorf("ledgerpg: cleanup: %w", err)
		}
		var n int
		err := s.durable(ctx, "cleanup", func(tx pgx.Tx) error {
			// Rule 6: only succeeded and failed rows, only after the
			// retention, and only once the provider has forgotten the key:
			// a row deleted earlier would let a late retry look new and be
			// sent again.
			rows, err := tx.Query(ctx, s.q.cleanupBatch, finishedBefore, now, batch)
			if err != nil {
				return err
			}
			ops, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.Operation, error) { return scanOp(row) })
			if err != nil {
				return err
			}
			// The tombstones commit with the delete: no transaction can
			// see the operation gone and its tombstone not yet there.
			b := &pgx.Batch{}
			for _, op := range ops {
				b.Queue(s.q.insertTombstone, tombstoneArgs(ledger.TombstoneOf(op, now))...)
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
		if err != nil {
			return report, translate("cleanup", err)
		}
		if n > 0 {
			report.Deleted += n
			report.Tombstoned += n
			report.Batches++
		}
		if n < batch {
			break
		}
	}
	for p.TombstoneRetention > 0 {
		if err := ctx.Err(); err != nil {
			return report, fmt.Errorf("ledgerpg: cleanup: %w", err)
		}
		// Not forced durable: a purge lost in a crash only keeps
		// tombstones longer.
		tag, err := s.pool.Exec(ctx, s.q.purgeTombstones, now.Add(-p.TombstoneRetention), batch)
		if err != nil {
			return report, translate("cleanup", err)
		}
		n := int(tag.RowsAffected())
		report.TombstonesPurged += n
		if n < batch {
			break
		}
	}
	var (
		oldest     pgtype.Timestamptz
		tombstones int
	)
	if err := s.pool.QueryRow(ctx, s.q.cleanupStats).Scan(&oldest, &tombstones); err != nil {
		return report, translate("cleanup", err)
	}
	report.OldestFinishedAt = timeOf(oldest)
	report.Tombstones = tombstones
	return report, nil
}
