package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Get implements ledger.Store: the operation and its attempts, read in one
// statement so that they are consistent with each other.
func (s *Store) Get(ctx context.Context, id string) (ledger.Operation, []ledger.Attempt, error) {
	return s.getAll(ctx, s.pool, "get", id)
}

// getAll is Get on db (the pool, or a caller's transaction for ReaderTx),
// its errors prefixed with method.
func (s *Store) getAll(ctx context.Context, db querier, method, id string) (ledger.Operation, []ledger.Attempt, error) {
	if id == "" {
		return ledger.Operation{}, nil, &ledger.ValidationError{Field: "ID", Problem: "must not be empty"}
	}
	rows, err := db.Query(ctx, s.q.getWithAttempts, id)
	if err != nil {
		return ledger.Operation{}, nil, translate(method, err)
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
			return ledger.Operation{}, nil, translate(method, err)
		}
		op, found = row, true
		a, ok, err := as.attempt()
		if err != nil {
			return ledger.Operation{}, nil, translate(method, err)
		}
		if ok {
			attempts = append(attempts, a)
		}
	}
	if err := rows.Err(); err != nil {
		return ledger.Operation{}, nil, translate(method, err)
	}
	if !found {
		// A later statement than the read: an operation deleted meanwhile
		// has its tombstone committed with the delete. (In a caller's
		// REPEATABLE READ transaction both statements share one snapshot,
		// which holds both the row and no tombstone, or neither.)
		tomb, found, err := s.tombstone(ctx, db, id)
		if err != nil {
			return ledger.Operation{}, nil, translate(method, err)
		}
		if found {
			return tomb.Operation(), nil, nil
		}
		return ledger.Operation{}, nil, fmt.Errorf("ledgerpg: %s: %w: %q", method, ledger.ErrNotFound, id)
	}
	return op, attempts, nil
}

// tombstone reads the tombstone of id; found is false when there is none.
func (s *Store) tombstone(ctx context.Context, db querier, id string) (ledgerdriver.Tombstone, bool, error) {
	var ts tombstoneScan
	err := db.QueryRow(ctx, s.q.selectTombstone, id).Scan(ts.dest()...)
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
	sqlstore.ListConds(f, func(t time.Time) any { return ledgerdriver.UTC(t) }, w.add)
	ok, err := sqlstore.RefConds(f, func(after sqlstore.ProviderKind, first bool) (sqlstore.ProviderKind, bool, error) {
		q, args := sqlstore.NextRefPairQuery(s.q.ops, f, after, first)
		var pk sqlstore.ProviderKind
		err := s.pool.QueryRow(ctx, pgPlaceholders(q), args...).Scan(&pk.Provider, &pk.Kind)
		if errors.Is(err, pgx.ErrNoRows) {
			return pk, false, nil
		}
		return pk, err == nil, err
	}, w.add)
	if err != nil {
		return nil, translate("list", err)
	}
	if !ok {
		return []ledger.Operation{}, nil
	}
	return s.listOps(ctx, "list", w, "id", ledgerdriver.ListLimit(f))
}

// pgPlaceholders numbers the "?"s of q ($1, $2...).
func pgPlaceholders(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
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

// querier is what get, getAll and whyNotInserted need: a pool or a
// transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
