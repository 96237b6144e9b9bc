package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Get returns one operation and its attempts ordered by number, read from one
// snapshot, the tombstone (Operation.Tombstone, no attempts) of an ID that
// Cleanup removed, or an error wrapping ledger.ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (ledger.Operation, []ledger.Attempt, error) {
	if id == "" {
		return ledger.Operation{}, nil, fail("get", &ledger.ValidationError{Field: "ID", Problem: "must not be empty"})
	}
	var (
		op       ledger.Operation
		attempts []ledger.Attempt
	)
	err := s.read(ctx, func(c *sql.Conn) error {
		tx, err := c.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // read-only snapshot
		op, attempts, err = getAll(ctx, tx, id)
		return err
	})
	if err != nil {
		return ledger.Operation{}, nil, fail("get", err)
	}
	return op, attempts, nil
}

// getAll is Get on q, a transaction: the store's read-only snapshot, or the
// caller's (ReaderTx).
func getAll(ctx context.Context, q querier, id string) (ledger.Operation, []ledger.Attempt, error) {
	op, err := getOp(ctx, q, id)
	if errors.Is(err, ledger.ErrNotFound) {
		// Removed by Cleanup: its tombstone, without attempts.
		tomb, found, terr := getTombstone(ctx, q, id)
		if terr != nil || !found {
			return ledger.Operation{}, nil, errors.Join(err, terr)
		}
		return tomb.Operation(), nil, nil
	}
	if err != nil {
		return ledger.Operation{}, nil, err
	}
	attempts, err := collect(ctx, q, scanAttempt, `SELECT `+attemptColumns+`
		FROM payonce_attempts WHERE operation_id = ? ORDER BY number`, id)
	if err != nil {
		return ledger.Operation{}, nil, err
	}
	return op, attempts, nil
}

// List returns operations matching f ordered by ID, at most
// ledgerdriver.ListLimit(f) of them, starting after f.AfterID.
func (s *Store) List(ctx context.Context, f ledger.ListFilter) ([]ledger.Operation, error) {
	if err := ledgerdriver.ValidateList(f); err != nil {
		return nil, fail("list", err)
	}
	var (
		w  where
		ok bool
	)
	err := s.read(ctx, func(c *sql.Conn) error {
		var err error
		w, ok, err = listWhere(ctx, c, f)
		return err
	})
	if err != nil {
		return nil, fail("list", err)
	}
	if !ok {
		return []ledger.Operation{}, nil
	}
	return s.listOps(ctx, "list", w, "id", ledgerdriver.ListLimit(f))
}

// listWhere is the WHERE clause of List for f, read on c (the provider
// reference's (provider, kind) pairs, sqlstore.RefConds); ok is false when
// nothing can match.
func listWhere(ctx context.Context, c *sql.Conn, f ledger.ListFilter) (where, bool, error) {
	var w where
	sqlstore.ListConds(f, micros, w.add)
	ok, err := sqlstore.RefConds(f, func(after sqlstore.ProviderKind, first bool) (sqlstore.ProviderKind, bool, error) {
		q, args := sqlstore.NextRefPairQuery("payonce_operations", f, after, first)
		var pk sqlstore.ProviderKind
		err := c.QueryRowContext(ctx, q, args...).Scan(&pk.Provider, &pk.Kind)
		if errors.Is(err, sql.ErrNoRows) {
			return pk, false, nil
		}
		return pk, err == nil, err
	}, w.add)
	return w, ok, err
}

// ListReview returns operations in manual_review matching f, oldest review
// first (by review time, then ID), at most ledgerdriver.ReviewLimit(f) of them.
func (s *Store) ListReview(ctx context.Context, f ledger.ReviewFilter) ([]ledger.Operation, error) {
	if err := ledgerdriver.ValidateReviewFilter(f); err != nil {
		return nil, fail("list review", err)
	}
	return s.listOps(ctx, "list review", reviewWhere(f), "review_at, id", ledgerdriver.ReviewLimit(f))
}

// reviewWhere is the WHERE clause of ListReview for f.
func reviewWhere(f ledger.ReviewFilter) where {
	// Literal, to match the review index's predicate.
	w := where{conds: []string{"status = 'manual_review'"}}
	sqlstore.ReviewConds(f, micros, w.add)
	return w
}

// listSQL is the statement of listOps and its arguments.
func listSQL(w where, orderBy string, limit int) (string, []any) {
	return `SELECT ` + opColumns + ` FROM payonce_operations` + w.String() + ` ORDER BY ` + orderBy + ` LIMIT ?`, append(w.args, limit)
}

// listOps reads at most limit operations matching w, sorted by orderBy, for
// method op.
func (s *Store) listOps(ctx context.Context, op string, w where, orderBy string, limit int) ([]ledger.Operation, error) {
	query, args := listSQL(w, orderBy, limit)
	var ops []ledger.Operation
	err := s.read(ctx, func(c *sql.Conn) error {
		var err error
		ops, err = queryOps(ctx, c, query, args...)
		return err
	})
	if err != nil {
		return nil, fail(op, err)
	}
	return ops, nil
}
