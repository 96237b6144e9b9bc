// Package ledger defines the durable record payonce keeps of every operation
// and every attempt: the Store interface, its record types and the rules
// every store enforces. Concrete stores live in ledgerpg (PostgreSQL, shared
// by replicas) and ledgersqlite (embedded, one process); they are built with
// package ledgerdriver (the state rules, validation, tombstones and cursor
// helpers they share), and ledgertest is the conformance suite both pass.
//
// The ledger is the only source of truth inside a service and the outbox that
// background jobs drain. Its rules, each enforced inside one transaction:
//
//   - An operation is identified by ID (the key of its identity at
//     generation 0). Recording an ID again with another fingerprint is refused
//     (ErrFingerprintMismatch) and changes nothing.
//   - At most one worker acts on an operation at a time: the lease (owner,
//     expiry) is taken by compare-and-set. Owners must be unique per worker
//     or call, not per process: two goroutines sharing an owner would both
//     hold the lease.
//   - An attempt is recorded (StartAttempt, or Begin with StartAttempt) before
//     its request is sent; the key window opens at the start of the first
//     attempt that may have reached the provider.
//   - An outcome is recorded only by the lease holder and only from the
//     status it expects (Finish), so a worker whose lease was taken cannot
//     overwrite the new owner's work.
//   - An in_flight operation whose lease expired becomes unknown (its attempt
//     may have been sent), never pending.
//   - Only succeeded and failed operations whose key window has closed are
//     ever deleted, and never sooner than the provider's key TTL.
//   - Deleting an operation leaves a tombstone (Operation.Tombstone), in the same
//     transaction: a late duplicate call with the same ID gets the recorded
//     outcome and nothing is created, where a new operation would be sent
//     again under a key the provider has forgotten. No live operation row
//     and tombstone of one ID ever coexist.
//   - A lease is never granted already lapsed: a call that waited (on a
//     lock) until Now plus the time it took reaches LeaseUntil writes
//     nothing and fails with ErrLeaseLost (ledgerdriver.CheckLeaseGranted).
//
// Store.Feed is the settlement feed: a cursor-ordered, gap-safe list of
// every operation's creation and of every change into succeeded, failed or
// manual review (and out of review), written in the transaction of the
// change. A consumer marks its order and stores the entry's cursor in one
// transaction of its own, so it learns each settlement exactly once, after
// any crash (see "The settlement feed" below). Store.Stats is a read-only
// summary of open work for dashboards, one statement whose cost is bounded
// by the open operations (see Stats).
//
// # The settlement feed
//
// The settlement feed (Store.Feed) is a durable, ordered, cursor-based
// list of the status changes of operations, so that a service learns every settlement made in
// the background (by ClaimDue workers, webhooks, operators) exactly once,
// across crashes. The consumer's loop is the processed-event pattern:
//
//	entries, _ := store.Feed(ctx, ledger.FeedParams{After: cursor, Limit: 100})
//	for _, e := range entries {
//		// in the consumer's own transaction: mark the order paid (or
//		// failed) for e, and store e.Cursor as its new cursor.
//	}
//
// A crash between reading and committing reads the same entries again; a
// crash after the commit resumes after them. Nothing is skipped and nothing
// is applied twice, because the cursor commits with what it stands for.
//
// What is recorded: one entry when an operation is created (From is empty,
// To is pending, also when Begin starts its first attempt in the same
// transaction), one for every change of status into succeeded, failed or
// manual_review, and one for every change out of manual_review (an
// operator's resend back to pending). The churn of sending (pending,
// in_flight, unknown and back) is not recorded: it is the hot path, and no
// consumer acts on it. So the common life of an operation costs two feed
// rows: its creation and its settlement. An update that keeps the status
// (manual_review to manual_review) records nothing.
//
// Entries are written by the database in the transaction of the change
// itself (a trigger on the operations table, so that no writing path can
// forget one): a change that commits has its entry, a change that rolls
// back has none, and a crash can neither lose nor duplicate one.
//
// Order: entries come in cursor order, and a cursor never goes back. An
// entry committed after a reader passed its position is never skipped:
// each store returns only entries whose position no later commit can
// precede (see each store's Feed). The order is not strictly commit order
// nor creation order, but two entries of one operation are always in the
// order they were made, also when the changes were made by transactions
// that waited for each other (a webhook waiting for the Finish that
// settled its operation first).
//
// Durability: Feed returns an entry only once it is durable, with
// everything committed before it (PostgreSQL: flushed to the write-ahead
// log; SQLite: the WAL file synced), also when the change itself was
// committed lazily (Finish, see each store's DurableOutcomes). A crash of
// the database server, the operating system or the machine can therefore
// neither take back an entry a consumer was given nor make the store
// write later entries before a cursor it handed out. This costs a small
// write and one flush per page that returns entries no Feed returned
// before, nothing per change.
//
// A ledger upgraded to the feed's schema starts with an empty feed: what
// happened before the upgrade has no entries; the changes made after it
// have.
//
// Retention: Cleanup deletes feed entries older than
// CleanupParams.FeedRetention (default DefaultFeedRetention), counted from
// their At. Entries outlive the operations they name: an operation deleted
// by Cleanup keeps its entries until then. A consumer must read the feed
// more often than that.
//
// Which statuses to follow: all of them. A consumer that keeps an order's
// state (paid, failed, in review, pending) must act on every entry,
// pending included: an operation that an operator sends out of review
// again (a resend) records manual_review -> pending, and a consumer that
// follows only succeeded, failed and manual_review never sees it, so its
// order keeps showing "review" while the payment is being sent again. Read
// the feed without FeedParams.Statuses, and let the handler decide what
// each entry means; a Statuses filter suits only a consumer that acts on
// settlements and never shows a state in between.
//
// Named consumers: the stores ship the loop above, so that a service
// writes only the handler. ledgerpg.NewConsumer (a pgx.Tx) and
// ledgersqlite.NewConsumer (a *sql.Tx) keep a named consumer's cursor in
// the ledger's own database (table payonce_feed_consumers) and call the
// handler with each entry inside the transaction that moves the cursor:
//
//	c, err := ledgerpg.NewConsumer(store, "orders",
//		func(ctx context.Context, tx pgx.Tx, e ledger.FeedEntry) error {
//			// write the entry's effect through tx
//			return nil
//		}, ledger.ConsumerOptions{})
//	// ...
//	err = c.Run(ctx) // until ctx ends, then a last bounded pass
//
// Each page is one transaction whose first statement is a compare-and-set
// of the cursor (so two replicas of one consumer never both apply a page:
// the second waits for the row, finds the cursor moved, rolls back and
// reads on), then the handler for each entry, then COMMIT. The consumer
// passes every entry (ConsumerOptions has no status filter, see above); a
// handler error rolls the page back and it is tried again with backoff,
// so an entry the handler always refuses blocks the consumer (by design:
// exactly once, in order). Its lag (now minus At of the oldest entry it
// has yet to apply) is the gauge payonce.feed.consumer.lag and a line of
// Stats.Consumers (`payonce stats`).
//
// # Audit findings
//
// An audit (payonce's Client.Audit, `payonce audit`) compares the ledger
// with a provider's own records for a period and records each difference
// as a Finding (Store.RecordFindings): money the provider moved for an
// operation the ledger has no record of, an outcome the two sides disagree
// on, a duplicate, a contradicted amount, a success the provider does not
// hold. The same difference found by a later audit (same provider, class,
// operation and provider object) is the same finding: LastFoundAt and
// Times move, FirstFoundAt stays.
//
// An audit only reads and records: it never sends a request that moves
// money, and RecordFindings never changes an operation's status or
// anything else of it. What to do about a difference is an operator's
// decision, recorded with AckFinding (who, why, when); an acknowledged
// finding is no longer open (Stats.Findings counts the open ones) but
// stays, and finding it again does not reopen it.
//
// Findings are the audits' history: Cleanup never deletes them, whatever
// its retentions, nor does deleting an operation (a finding names its
// operation by ID, without a foreign key; it may name one the ledger never
// had).
//
// # Implementing a store
//
// A store is built with package ledgerdriver, which computes every state
// change, and proven by package ledgertest, the conformance suite every
// store passes.
package ledger
