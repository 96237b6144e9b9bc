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
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
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
	if err := ledgerdriver.ValidateClaimDue(p); err != nil {
		return nil, err
	}
	now, until := ledgerdriver.UTC(p.Now), ledgerdriver.UTC(p.LeaseUntil)
	statuses := []string{string(ledger.StatusPending), string(ledger.StatusUnknown), string(ledger.StatusInFlight)}
	if p.IncludeReview {
		// Read-only lookups only; Finish never lets manual_review go back
		// to sending.
		statuses = append(statuses, string(ledger.StatusManualReview))
	}
	type claimed struct {
		op    ledger.Operation
		dueAt time.Time
		xmin  uint32
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
		got, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (claimed, error) {
			var (
				dueAt pgtype.Timestamptz
				xmin  uint32
			)
			op, err := scanOp(row, &dueAt, &xmin)
			return claimed{op: op, dueAt: timeOf(dueAt), xmin: xmin}, err
		})
		if err != nil || len(got) == 0 {
			return err
		}
		return ledgerdriver.CheckLeaseGranted(fmt.Sprintf("%d due operations for %q", len(got), p.Owner), p.Now, p.LeaseUntil, time.Since(start))
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
		// The worker's next write (StartAttempt, or Finish after a lookup)
		// is then one statement.
		s.revs.Put(c.op.ID, revision{op: c.op, xmin: c.xmin})
	}
	return out, nil
}

// Claim implements ledger.Store. The row lock makes the check and the lease
// update one compare-and-set: concurrent claimers queue on the lock, and
// each one after the winner sees the winner's live lease.
func (s *Store) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Operation, error) {
	start := time.Now()
	if err := ledgerdriver.ValidateClaim(p); err != nil {
		return ledger.Operation{}, err
	}
	var out ledger.Operation
	err := s.durable(ctx, "claim", func(tx pgx.Tx) error {
		op, err := s.lock(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if out, err = ledgerdriver.ApplyClaim(op, p); err != nil {
			return err
		}
		if err := s.save(ctx, tx, out, nil, time.Time{}, nil); err != nil {
			return err
		}
		return sqlstore.LeaseGranted(p.ID, p.Now, p.LeaseUntil, start)
	})
	if err != nil {
		return ledger.Operation{}, translate("claim", err)
	}
	return out, nil
}

// StartAttempt implements ledger.Store. When it returns nil the attempt is
// committed, so a crash after sending still leaves a record that the
// request may have left. p.Events are recorded in the same transaction.
func (s *Store) StartAttempt(ctx context.Context, p ledger.StartAttemptParams) (ledger.Operation, ledger.Attempt, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	start := time.Now()
	if err := ledgerdriver.ValidateStartAttempt(p); err != nil {
		return ledger.Operation{}, ledger.Attempt{}, err
	}
	if ch, ok, err := s.startAttemptFast(ctx, p, start); ok || err != nil {
		if err != nil {
			return ledger.Operation{}, ledger.Attempt{}, translate("start attempt", err)
		}
		return ch.Op, *ch.Attempt, nil
	}
	var ch ledgerdriver.Change
	err := s.durable(ctx, "start attempt", func(tx pgx.Tx) error {
		op, err := s.lock(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if ch, err = ledgerdriver.ApplyStartAttempt(op, p); err != nil {
			return err
		}
		if err := s.save(ctx, tx, ch.Op, ch.Attempt, ledgerdriver.UTC(p.Now), ch.Events); err != nil {
			return err
		}
		// The caller sends once this commits: the lease it extends must
		// not have ended meanwhile.
		return sqlstore.LeaseGranted(p.ID, p.Now, p.LeaseUntil, start)
	})
	if err != nil {
		return ledger.Operation{}, ledger.Attempt{}, translate("start attempt", err)
	}
	return ch.Op, *ch.Attempt, nil
}

// startAttemptFast is StartAttempt as one statement on the store's copy of
// the operation (revision.go): one round trip instead of a transaction of
// four. ok is false when it wrote nothing (no copy, the rules refused the
// copy, the row had moved on, or the lease ended before the write): the
// long way then reads the row under its lock, decides again and reports a
// lease that ended.
func (s *Store) startAttemptFast(ctx context.Context, p ledger.StartAttemptParams, start time.Time) (ledgerdriver.Change, bool, error) {
	rev, ok := s.revs.Take(p.ID)
	if !ok || s.longWayOnly {
		return ledgerdriver.Change{}, false, nil
	}
	ch, err := ledgerdriver.ApplyStartAttempt(rev.op, p)
	if err != nil {
		// Only the row read under the lock may refuse the caller.
		return ledgerdriver.Change{}, false, nil
	}
	// The caller sends once this commits: the lease it extends must not
	// have ended by the write, which the statement checks against the
	// time left here, when the trip is sent.
	remaining := p.LeaseUntil.Sub(p.Now) - time.Since(start)
	if remaining <= 0 {
		return ledgerdriver.Change{}, false, nil
	}
	a := ch.Attempt
	args := append(saveArgs(ch.Op), rev.xmin, p.Owner, string(rev.op.Status), remaining.Microseconds(),
		a.Number, a.Key, ts(a.StartedAt))
	args = appendEvents(args, ledgerdriver.UTC(p.Now), ch.Events)
	xmin, wrote, err := s.writeIfUnchanged(ctx, "start attempt", s.q.startAttemptFast, args)
	if err != nil || !wrote {
		return ledgerdriver.Change{}, false, err
	}
	s.revs.Put(ch.Op.ID, revision{op: asStored(ch.Op), att: attemptAsStored(*a), xmin: xmin})
	return ch, true, nil
}
