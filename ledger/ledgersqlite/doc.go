// Package ledgersqlite is the embedded default ledger.Store: one SQLite file,
// through modernc.org/sqlite (pure Go, no cgo). It suits a single service
// process (several processes on one host may share the file); replicas on
// several hosts share a PostgreSQL ledger (ledgerpg) instead.
//
// The smallest working use:
//
//	store, err := ledgersqlite.Open("payonce.db", ledgersqlite.Config{})
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//	if err := store.Migrate(ctx); err != nil {
//		return err
//	}
//
// Durability: Open uses WAL with synchronous=FULL, so every committed
// attempt is on disk before its request is sent (rule 2), even across a power
// loss. Concurrency: write transactions are serialized inside a Store and
// start with BEGIN IMMEDIATE, so goroutines never see SQLITE_BUSY; reads run
// concurrently. The fast path of a call that succeeds costs two commits
// (Begin, then Finish). Each write transaction reads the operation, applies
// the rules of package ledger to it (ledgerdriver.ApplyFinish and its siblings) and
// writes the result back. Audit entries (Events) are written in the write
// transaction of the change they document.
//
// The copy of the last write: Begin of a new operation with its first
// attempt, and a Finish that keeps the lease, keep what they wrote (the
// row, the attempt, the row's revision), and the next Finish of that
// operation applies the rules to the copy and writes without reading the
// row first: UPDATE … WHERE id, revision, lease owner and status are still
// the copy's, then the attempt only if it is still unfinished. The revision
// column (migration 007) advances on every update of the row, whoever
// writes it: the store's own statements set it, and a trigger advances it
// for any other (an older build, an operator's or a caller's SQL). When
// the row moved on, or the rules refuse the copy, nothing is written and
// Finish takes the long way, so only a row read inside the write
// transaction ever turns into an error for the caller.
//
// Statements: the pool Open creates keeps every statement the Store runs
// prepared on each connection (finalized when the connection closes), so a
// write does not parse and plan its SQL again; the statements inside a
// write transaction run without the driver's per-statement interrupt
// watch, and stop at the next statement once the caller's context ends.
//
// With New, the Store shares the caller's *sql.DB: it sets busy_timeout and
// synchronous on a connection only while it uses it, and puts the caller's
// values back before the connection returns to the pool, so a lazily
// durable Finish never leaves a connection at synchronous=NORMAL for the
// caller's own transactions.
//
// Cleanup leaves a tombstone of each operation it deletes, in the same
// write transaction; Begin and CreateOrGet (CreateOrGetTx too) answer an ID
// with a tombstone with the recorded outcome and create nothing. SQLite's
// single writer means no Cleanup runs between that check and an insert.
//
// Stats is one read-only statement on a read connection, which under WAL
// neither waits for the writer nor holds it up; the open operations are
// read from the partial open-work index of migration 005 and the review
// index, never by a scan of the settled history (unless
// StatsParams.IncludeSettled asks for the settled counts).
//
// Feed reads the payonce_feed table of migration 006, whose rows triggers
// on payonce_operations write in the transaction of each creation and each
// change into or out of a terminal status (one insert each). SQLite's one
// writer at a time makes seq commit order, so reading in seq order never
// skips an entry that commits later, and one operation's entries are in
// the order they were made. Before Feed returns a page, it syncs the WAL
// up to it with a small write at synchronous=FULL (migration 008), unless
// an earlier Feed did: a lazily committed Finish (synchronous=NORMAL) is
// on disk before a consumer sees its entry, so an OS crash or a power cut
// cannot take back an entry Feed returned. Cursors are "0.seq".
//
// Audit findings live in payonce_audit_findings (migration 012): one row
// per difference, upserted on its unique (provider, class, operation_id,
// provider_ref) in one write transaction per RecordFindings call, and
// counted for Stats from a partial index of the open ones. Cleanup never
// deletes them.
//
// CreateOrGetTx records an operation inside the caller's own *sql.Tx on the
// same file, so that a payment is enqueued if and only if the caller's
// business data commits with it (transactional outbox); see its
// documentation for how to open that transaction.
package ledgersqlite
