package ledger

import "context"

// Reader reads operations by ID, with the semantics of Store.Get: the
// operation and its attempts in order, the tombstone (Operation.Tombstone,
// no attempts) of an ID that Cleanup removed, an error wrapping ErrNotFound
// when there is neither, ErrInvalid for an empty id.
//
// Every Store is a Reader (it reads on a connection of its own). A store's
// ReaderTx (ledgerpg, ledgersqlite) returns one that reads through the
// caller's transaction instead: it sees the rows that transaction wrote and
// has not committed, and it needs no second connection while the
// transaction holds one. Why that matters: a service that holds a
// transaction (and a row lock on its order) while it prepares a refund
// would otherwise wait for a free connection of the pool it is itself
// exhausting; with every connection held by such a transaction, none
// comes back, and each call waits out its deadline.
type Reader interface {
	Get(ctx context.Context, id string) (Operation, []Attempt, error)
}

// A Store reads on its own connection.
var _ Reader = Store(nil)
