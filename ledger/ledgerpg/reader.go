package ledgerpg

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/payonce/payonce/ledger"
)

// ReaderTx returns a ledger.Reader that reads through tx, the caller's own
// transaction, with exactly the semantics of Get (tombstones, ErrNotFound,
// validation). It sees what tx wrote and has not committed (an operation
// recorded with CreateOrGetTx), and it takes no connection from the pool:
// a service that holds tx, and a row lock on its order, while it prepares
// a payment reads through tx instead of waiting for a pool connection that
// the transactions like its own may all be holding.
//
// The reads take tx's snapshot rules (READ COMMITTED: each statement sees
// what was committed before it started); they lock nothing. A nil tx
// returns a Reader whose every call fails with ErrInvalid. An error from a
// statement (the context ended) leaves tx aborted: roll it back.
func (s *Store) ReaderTx(tx pgx.Tx) ledger.Reader {
	return txReader{s: s, tx: tx}
}

type txReader struct {
	s  *Store
	tx pgx.Tx
}

func (r txReader) Get(ctx context.Context, id string) (ledger.Operation, []ledger.Attempt, error) {
	if r.tx == nil {
		return ledger.Operation{}, nil, &ledger.ValidationError{Field: "tx", Problem: "must not be nil: pass the caller's pgx.Tx"}
	}
	return r.s.getAll(ctx, r.tx, "get in caller's transaction", id)
}
