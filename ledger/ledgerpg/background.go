package ledgerpg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
)

// ClaimDue implements ledger.Store. The selection and the lease update are
// one statement (row locks taken with SKIP LOCKED), so concurrent callers in
// any number of processes never lease the same operation; it runs inside a
// transaction so that a row that cannot be read back undoes the leases, and
// so that a call that took too long grants none: when the leases would have
// lapsed before the commit, the whole batch is rolled back (every lease of
// the batch ends at the same LeaseUntil, so none of them would be worth
// anything) and the error wraps ledger.ErrLeaseLost.
func (s *Store) ClaimDue(ctx context.Context, p ledger.ClaimDueParams) ([]ledger.Operation, error) {
	start := time.Now()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	now, until := ledger.UTC(p.Now), ledger.UTC(p.LeaseUntil)
	statuses := []string{string(ledger.StatusPending), string(ledger.StatusUnknown), string(ledger.StatusInFlight)}
	if p.IncludeReview {
		// Read-only lookups only; Finish never lets manual_review go back
		// to sending.
		statuses = append(statuses, string(ledger.StatusManualReview))
	}
	type claimed struct {
		op    ledger.Operation
		dueAt time.Time
	}
	var got []claimed
	err := s.durable(ctx, "claim due", func(tx pgx.Tx) error {
		got = nil
		// The UPDATE turns in_flight into unknown: an expired lease on an
		// in_flight operation means its worker died after recording an
		// attempt that may have been sent.
		rows, err := tx.Query(ctx, s.q.claimDue, now, statuses, p.Provider, p.Limit, p.Owner, until)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var dueAt pgtype.Timestamptz
			op, err := scanOp(rows, &dueAt)
			if err != nil {
				return err
			}
			got = append(got, claimed{op: op, dueAt: timeOf(dueAt)})
		}
		if err := rows.Err(); err != nil || len(got) == 0 {
			return err
		}
		return ledger.CheckLeaseGranted(fmt.Sprintf("%d due operations for %q", len(got), p.Owner), p.Now, p.LeaseUntil, time.Since(start))
	})
	if err != nil {
		return nil, translate("claim due", err)
	}
	// RETURNING has no order: restore the selection's (oldest due first).
	slices.SortFunc(got, func(a, b claimed) int {
		if c := a.dueAt.Compare(b.dueAt); c != 0 {
			return c
		}
		return strings.Compare(a.op.ID, b.op.ID)
	})
	out := make([]ledger.Operation, len(got))
	for i, c := range got {
		out[i] = c.op
	}
	return out, nil
}

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
