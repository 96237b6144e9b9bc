package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Get implements ledger.Store: the operation and its attempts, read in one
// statement so that they are consistent with each other.
func (s *Store) Get(ctx context.Context, id string) (ledger.Operation, []ledger.Attempt, error) {
	if id == "" {
		return ledger.Operation{}, nil, &ledger.ValidationError{Field: "ID", Problem: "must not be empty"}
	}
	rows, err := s.pool.Query(ctx, s.q.getWithAttempts, id)
	if err != nil {
		return ledger.Operation{}, nil, translate("get", err)
	}
	defer rows.Close()
	var (
		op       ledger.Operation
		found    bool
		attempts []ledger.Attempt
	)
	for rows.Next() {
		var as attemptScan
		row, err := scanOp(rows, as.dest()...)
		if err != nil {
			return ledger.Operation{}, nil, translate("get", err)
		}
		op, found = row, true
		a, ok, err := as.attempt()
		if err != nil {
			return ledger.Operation{}, nil, translate("get", err)
		}
		if ok {
			attempts = append(attempts, a)
		}
	}
	if err := rows.Err(); err != nil {
		return ledger.Operation{}, nil, translate("get", err)
	}
	if !found {
		// A later statement than the read: an operation deleted meanwhile
		// has its tombstone committed with the delete.
		tomb, found, err := s.tombstone(ctx, id)
		if err != nil {
			return ledger.Operation{}, nil, translate("get", err)
		}
		if found {
			return tomb.Operation(), nil, nil
		}
		return ledger.Operation{}, nil, fmt.Errorf("ledgerpg: get: %w: %q", ledger.ErrNotFound, id)
	}
	return op, attempts, nil
}

// tombstone reads the tombstone of id; found is false when there is none.
func (s *Store) tombstone(ctx context.Context, id string) (ledgerdriver.Tombstone, bool, error) {
	var ts tombstoneScan
	err := s.pool.QueryRow(ctx, s.q.selectTombstone, id).Scan(ts.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledgerdriver.Tombstone{}, false, nil
	}
	if err != nil {
		return ledgerdriver.Tombstone{}, false, err
	}
	return ts.tombstone()
}

// List implements ledger.Store: operations ordered by ID, at most
// ledgerdriver.ListLimit(f), after f.AfterID when set.
func (s *Store) List(ctx context.Context, f ledger.ListFilter) ([]ledger.Operation, error) {
	if err := ledgerdriver.ValidateList(f); err != nil {
		return nil, err
	}
	var w where
	sqlstore.ListConds(f, w.add)
	return s.listOps(ctx, "list", w, "id", ledgerdriver.ListLimit(f))
}

// ListReview implements ledger.Store: operations in manual_review, oldest
// review first.
func (s *Store) ListReview(ctx context.Context, f ledger.ReviewFilter) ([]ledger.Operation, error) {
	if err := ledgerdriver.ValidateReviewFilter(f); err != nil {
		return nil, err
	}
	var w where
	// Literal, to match the review index's predicate.
	w.conds = append(w.conds, "status = 'manual_review'")
	sqlstore.ReviewConds(f, func(t time.Time) any { return ledgerdriver.UTC(t) }, w.add)
	return s.listOps(ctx, "list review", w, "review_at, id", ledgerdriver.ReviewLimit(f))
}

// listOps reads at most limit operations matching w, sorted by orderBy, for
// method.
func (s *Store) listOps(ctx context.Context, method string, w where, orderBy string, limit int) ([]ledger.Operation, error) {
	w.args = append(w.args, limit)
	sql := fmt.Sprintf("%s%s ORDER BY %s LIMIT $%d", s.q.listOps, w.String(), orderBy, len(w.args))
	ops, err := s.queryOps(ctx, sql, w.args)
	return ops, translate(method, err)
}

func (s *Store) queryOps(ctx context.Context, sql string, args []any) ([]ledger.Operation, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, rowToOp)
}

// get reads one operation without its attempts.
func (s *Store) get(ctx context.Context, db querier, id string) (ledger.Operation, error) {
	op, err := scanOp(db.QueryRow(ctx, s.q.selectOp, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Operation{}, fmt.Errorf("%w: %q", ledger.ErrNotFound, id)
	}
	return op, err
}

// querier is what get and whyNotInserted need: a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
