package ledgersqlite

import (
	"bytes"

	"github.com/payonce/payonce/ledger"
)

// The copy of the store's last write.
//
// A Charge writes its operation twice: Begin journals the attempt, Finish
// records the outcome. The long Finish reads the row and the attempt back
// inside its write transaction before it writes, although the store has
// just written both itself and knows exactly what they hold. So Begin (of a
// new operation with its first attempt) and a Finish that keeps the lease
// keep what they wrote here, with the row's revision (the column of
// migration 007, advanced by every update of the row), and the next Finish
// of that operation applies ledgerdriver.ApplyFinish to that copy and writes the
// result in one conditional statement: UPDATE … WHERE id = ? AND revision
// = ? AND lease_owner = ? AND status = ?, then the attempt's outcome only if
// the attempt is still unfinished (AND finished_at IS NULL). Both must
// write their row, or the transaction is rolled back (finishFast). The
// statement writes only if the row is still that revision, so the decision
// was taken on what the database holds, as it would have been on the row
// read inside the write transaction; the lease check is the write's own
// condition.
//
// The copy is never an authority. When the row has moved on (another
// process sharing the file, a webhook, an operator's SQL, an older payonce
// binary, Cleanup), the statement writes nothing, and Finish is done again
// the long way: read, rules, write. The same happens when the rules refuse
// the copy (a lease lost, a state conflict): only a row read inside the
// write transaction may turn into an error for the caller.
//
// Why the revision advances on every write: a trigger (migration 007) adds
// one on any UPDATE that does not change the column itself, whoever runs
// it, and the store's own writes add one themselves (saveOpSQL). A false
// match needs the row deleted and inserted again with the same ID, the same
// revision, the same lease owner (owners are unique per call) and the same
// status: nothing in payonce deletes a row that is not final (Cleanup),
// and a deleted ID is tombstoned and never inserted again.

// revisionAfterBegin is the revision of a row Begin created: inserted at 0
// (the column's default), then written once by saveOp in the same
// transaction, which holds the file's write lock.
const revisionAfterBegin = 1

// revision is an operation as the store last wrote it: the row (as getOp
// would read it back), the attempt in flight as Begin inserted it (nil
// after a Finish), and the row's revision column.
type revision struct {
	op  ledger.Operation
	att *ledger.Attempt
	rev int64
}

// keep puts rev in the store's copies. The result bytes are copied: the
// operation returned to the caller shares them, and a later Finish writes
// the copy's result back.
func (s *Store) keep(rev revision) {
	rev.op.Result = bytes.Clone(rev.op.Result)
	s.revs.Put(rev.op.ID, rev)
}
