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

// Claim takes the lease on one operation by compare-and-set inside a write
// transaction; of concurrent claimers (in any process) exactly one wins.
// Errors wrap ledger.ErrNotFound, ledger.ErrTerminal or ledger.ErrInProgress.
func (s *Store) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Operation, error) {
	start := time.Now()
	if err := ledgerdriver.ValidateClaim(p); err != nil {
		return ledger.Operation{}, fail("claim", err)
	}
	var op ledger.Operation
	err := s.write(ctx, func(c *sql.Conn) error {
		var err error
		if op, err = getOp(ctx, c, p.ID); err != nil {
			return err
		}
		if op, err = ledgerdriver.ApplyClaim(op, p); err != nil {
			return err
		}
		if err := saveOp(ctx, c, &op); err != nil {
			return err
		}
		return sqlstore.LeaseGranted(p.ID, p.Now, p.LeaseUntil, start)
	})
	if err != nil {
		return ledger.Operation{}, fail("claim", err)
	}
	return op, nil
}

// StartAttempt durably records the start of the next attempt (rule 2: the
// caller sends only after this commits), with p.Events. The caller must hold
// the lease and the operation must be pending or unknown; errors wrap
// ledger.ErrLeaseLost, ledger.ErrStateConflict or ledger.ErrNotFound.
func (s *Store) StartAttempt(ctx context.Context, p ledger.StartAttemptParams) (ledger.Operation, ledger.Attempt, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	start := time.Now()
	if err := ledgerdriver.ValidateStartAttempt(p); err != nil {
		return ledger.Operation{}, ledger.Attempt{}, fail("start attempt", err)
	}
	// This write makes the copy of a Finish that kept the lease out of
	// date (revision.go): drop it, so that the next Finish does not try it
	// first.
	s.revs.Take(p.ID)
	var ch ledgerdriver.Change
	err := s.write(ctx, func(c *sql.Conn) error {
		op, err := getOp(ctx, c, p.ID)
		if err != nil {
			return err
		}
		if ch, err = ledgerdriver.ApplyStartAttempt(op, p); err != nil {
			return err
		}
		if err := insertAttempt(ctx, c, *ch.Attempt); err != nil {
			return err
		}
		if err := saveOp(ctx, c, &ch.Op); err != nil {
			return err
		}
		if err := insertEvents(ctx, c, op.ID, ledgerdriver.UTC(p.Now), ch.Events); err != nil {
			return err
		}
		// The caller sends once this commits: the lease it extends must not
		// have ended meanwhile.
		return sqlstore.LeaseGranted(p.ID, p.Now, p.LeaseUntil, start)
	})
	if err != nil {
		return ledger.Operation{}, ledger.Attempt{}, fail("start attempt", err)
	}
	return ch.Op, *ch.Attempt, nil
}

// ClaimDue leases up to p.Limit due operations, oldest due first, in one
// write transaction: concurrent callers in any process never receive the
// same operation, and operations under a live lease are skipped. When the
// leases would have lapsed before the commit (the write lock was waited for
// too long), the whole batch is rolled back, since every lease of it ends
// at the same time, and the error wraps ledger.ErrLeaseLost.
func (s *Store) ClaimDue(ctx context.Context, p ledger.ClaimDueParams) ([]ledger.Operation, error) {
	start := time.Now()
	if err := ledgerdriver.ValidateClaimDue(p); err != nil {
		return nil, fail("claim due", err)
	}
	now, until := ledgerdriver.UTC(p.Now), ledgerdriver.UTC(p.LeaseUntil)
	statuses := `'pending', 'unknown', 'in_flight'`
	if p.IncludeReview {
		// Read-only lookups only: Finish never lets manual_review go back
		// to sending (CheckTransition).
		statuses += `, 'manual_review'`
	}
	query := `SELECT id FROM payonce_operations
		WHERE next_check_at <= ? AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
		AND status IN (` + statuses + `)`
	args := []any{micros(now), micros(now)}
	if p.Provider != "" {
		query += ` AND provider = ?`
		args = append(args, p.Provider)
	}
	query += ` ORDER BY next_check_at, id LIMIT ?`
	args = append(args, p.Limit)

	var out []ledger.Operation
	err := s.write(ctx, func(c *sql.Conn) error {
		out = nil
		ids, err := queryIDs(ctx, c, query, args...)
		if err != nil || len(ids) == 0 {
			return err
		}
		idJSON, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		// An in_flight operation whose lease expired becomes unknown, never
		// pending: its attempt may have been sent by the worker that died.
		ops, err := queryOps(ctx, c, `UPDATE payonce_operations SET
			status = CASE status WHEN 'in_flight' THEN 'unknown' ELSE status END,
			lease_owner = ?, lease_expires_at = ?, next_check_at = ?, updated_at = ?
			WHERE id IN (SELECT value FROM json_each(?))
			RETURNING `+opColumns,
			p.Owner, micros(until), micros(until), micros(now), string(idJSON))
		if err != nil {
			return err
		}
		// RETURNING has no defined order: restore the due order.
		byID := make(map[string]ledger.Operation, len(ops))
		for _, op := range ops {
			byID[op.ID] = op
		}
		out = make([]ledger.Operation, 0, len(ids))
		for _, id := range ids {
			if op, ok := byID[id]; ok {
				out = append(out, op)
			}
		}
		return ledgerdriver.CheckLeaseGranted(fmt.Sprintf("%d due operations for %q", len(out), p.Owner), p.Now, p.LeaseUntil, time.Since(start))
	})
	if err != nil {
		return nil, fail("claim due", err)
	}
	return out, nil
}

func queryIDs(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	return collect(ctx, q, func(sc scanner) (string, error) {
		var id string
		err := sc.Scan(&id)
		return id, err
	}, query, args...)
}
