package ledgersqlite

import (
	"context"
	"database/sql"

	"github.com/payonce/payonce/ledger"
)

// ReaderTx returns a ledger.Reader that reads through tx, the caller's own
// transaction, with exactly the semantics of Get (tombstones, ErrNotFound,
// validation). It sees what tx wrote and has not committed (an operation
// recorded with CreateOrGetTx), and it needs no other connection while tx
// holds one: with a *sql.DB limited to few connections (SetMaxOpenConns),
// transactions that each wait on a second connection for their reads would
// otherwise wait for each other.
//
// tx must be on the same database file as the Store (see CreateOrGetTx).
// A nil tx returns a Reader whose every call fails with ErrInvalid.
func (s *Store) ReaderTx(tx *sql.Tx) ledger.Reader {
	return txReader{tx: tx}
}

type txReader struct{ tx *sql.Tx }

func (r txReader) Get(ctx context.Context, id string) (ledger.Operation, []ledger.Attempt, error) {
	const method = "get in caller's transaction"
	switch {
	case r.tx == nil:
		return ledger.Operation{}, nil, fail(method, &ledger.ValidationError{Field: "tx", Problem: "must not be nil: pass the caller's *sql.Tx"})
	case id == "":
		return ledger.Operation{}, nil, fail(method, &ledger.ValidationError{Field: "ID", Problem: "must not be empty"})
	}
	op, attempts, err := getAll(ctx, r.tx, id)
	if err != nil {
		return ledger.Operation{}, nil, fail(method, err)
	}
	return op, attempts, nil
}
