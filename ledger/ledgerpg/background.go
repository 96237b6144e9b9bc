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
// transaction only so that a row that cannot be read back undoes the leases.
func (s *Store) ClaimDue(ctx context.Context, p ledger.ClaimDueParams) ([]ledger.Operation, error) {
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
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
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
		return rows.Err()
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

// Cleanup implements ledger.Store. Each batch is one DELETE statement (its
// own transaction); attempts and events go with their operation by ON
// DELETE CASCADE.
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
		// Rule 6: only succeeded and failed rows, only after the retention,
		// and only once the provider has forgotten the key: a row deleted
		// earlier would let a late retry look new and be sent again.
		tag, err := s.pool.Exec(ctx, s.q.cleanupBatch, finishedBefore, now, batch)
		if err != nil {
			return report, translate("cleanup", err)
		}
		n := int(tag.RowsAffected())
		if n > 0 {
			report.Deleted += n
			report.Batches++
		}
		if n < batch {
			break
		}
	}
	var oldest pgtype.Timestamptz
	if err := s.pool.QueryRow(ctx, s.q.oldestFinished).Scan(&oldest); err != nil {
		return report, translate("cleanup", err)
	}
	report.OldestFinishedAt = timeOf(oldest)
	return report, nil
}
