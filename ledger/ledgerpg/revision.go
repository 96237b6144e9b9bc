package ledgerpg

import (
	"time"

	"github.com/payonce/payonce/ledger"
)

// The one-statement writes.
//
// A Charge writes its operation twice: Begin journals the attempt, Finish
// records the outcome. Read under a row lock, then written, the second write
// costs two round trips; but the store has just written the row itself and
// knows exactly what it holds. So every write that knows its result keeps
// it here, with the row version PostgreSQL gave it (the xmin system column:
// the ID of the transaction that wrote that version of the row), and the
// next write of the same operation applies the ledger's rules (ApplyFinish,
// ApplyStartAttempt) to that copy and sends the result as one conditional
// statement: UPDATE … WHERE id = $1 AND xmin = $n AND lease_owner = $owner
// AND status = $from. The statement writes only if the row is still that
// version, so the decision was taken on what the database holds, as it
// would have been under the row lock; the lease check is the write's own
// condition.
//
// The copy is never an authority. When the row has moved on (another
// worker, a webhook, an operator, another process), the statement writes
// nothing, and the write is done again the long way: row lock, read, rules,
// write. The same happens when the rules refuse the copy (a lease lost, a
// state conflict): only a row read under the lock may turn into an error
// for the caller. A false match needs another transaction with the same ID
// to have written the row, which PostgreSQL's transaction-ID horizon rules
// out for a row that is not frozen; the statement also checks the owner and
// the status.

// revision is an operation as the store last wrote it: the row (as
// PostgreSQL would read it back), the attempt in flight as it was inserted
// when the write started one, and the row version.
type revision struct {
	op   ledger.Operation
	att  *ledger.Attempt
	xmin uint32
}

// asStored is op as PostgreSQL reads it back: timestamps in UTC and whole
// microseconds (pgx sends time.Time truncated to the microsecond), the key
// TTL in whole milliseconds. A decision taken on the copy then writes what
// a decision on the row read back would write.
func asStored(op ledger.Operation) ledger.Operation {
	for _, t := range []*time.Time{&op.WindowStart, &op.KeyExpiresAt, &op.LeaseExpiresAt, &op.NextCheckAt,
		&op.ReviewAt, &op.CreatedAt, &op.UpdatedAt, &op.FinishedAt} {
		*t = storedTime(*t)
	}
	if op.Resolution != nil {
		r := *op.Resolution
		r.At = storedTime(r.At)
		op.Resolution = &r
	}
	op.KeyTTL = storedTTL(op.KeyTTL)
	return op
}

// attemptAsStored is a journaled attempt as PostgreSQL reads it back.
func attemptAsStored(a ledger.Attempt) *ledger.Attempt {
	a.StartedAt = storedTime(a.StartedAt)
	a.FinishedAt = storedTime(a.FinishedAt)
	return &a
}

func storedTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Microsecond).UTC()
}
