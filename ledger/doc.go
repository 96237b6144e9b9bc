// Package ledger defines the durable record payonce keeps of every operation
// and every attempt: the Store interface, its record types and the rules
// every store enforces. Concrete stores live in ledgerpg (PostgreSQL, shared
// by replicas) and ledgersqlite (embedded, one process); ledgertest is the
// conformance suite both pass.
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
//   - Deleting an operation leaves a tombstone (Tombstone), in the same
//     transaction: a late duplicate call with the same ID gets the recorded
//     outcome and nothing is created, where a new operation would be sent
//     again under a key the provider has forgotten. No live operation row
//     and tombstone of one ID ever coexist.
//   - A lease is never granted already lapsed: a call that waited (on a
//     lock) until Now plus the time it took reaches LeaseUntil writes
//     nothing and fails with ErrLeaseLost (CheckLeaseGranted).
//
// Store.Feed is the settlement feed: a cursor-ordered, gap-safe list of
// every operation's creation and of every change into succeeded, failed or
// manual review (and out of review), written in the transaction of the
// change. A consumer marks its order and stores the entry's cursor in one
// transaction of its own, so it learns each settlement exactly once, after
// any crash (feed.go). Store.Stats is a read-only summary of open work for
// dashboards, one statement whose cost is bounded by the open operations
// (stats.go).
//
// # Implementing a store
//
// A store keeps records and makes each method one transaction. It does not
// write the rules again: this package computes every state change, so all
// stores apply them alike. Each write method reads the operation under the
// store's lock (a row lock, a write transaction), calls the function of the
// method with it, and writes what that returns in the same transaction. On an
// error it writes nothing and returns the error, wrapped:
//
//   - Begin: ApplyCreate for a new ID, then ApplyBegin (which also checks the
//     fingerprint); insert the attempt it starts. An ID with a tombstone and
//     no operation row is not new: ApplyBegin on Tombstone.Operation, which
//     returns it unclaimed.
//   - CreateOrGet: ApplyCreate for a new ID, CheckFingerprint on an existing
//     one (or on the tombstone's Operation, returned with created false).
//   - Cleanup: TombstoneOf each deleted operation, inserted in the
//     transaction of the delete.
//   - Claim: ApplyClaim.
//   - StartAttempt: ApplyStartAttempt; insert its attempt and its events.
//   - Finish: ApplyFinish. With an attempt outcome, the store also reads the
//     attempt being finished and the earliest start of the other attempts
//     under the current key that may have reached the provider, and updates
//     the finished attempt it returns.
//   - Resolve: ApplyResolve.
//
// Change holds what one call writes: the operation's new state, its
// attempt row, and its audit entries (Actor set, Detail of resolutions made
// by ResolutionDetail). Validate the parameters first (ValidateCreate for
// CreateOrGet). The store itself enforces what only the database can: keys
// unique across operations (ErrKeyConflict), the numbering of events, and
// ClaimDue and Cleanup, whose selection and update run as statements over
// many rows. They follow the rules below: ClaimDue turns an expired in_flight
// into unknown, as ApplyClaim does.
//
// Times are kept as UTC microseconds (see UTC). next_check_at drives
// background work: Begin, Claim and StartAttempt set it to the lease expiry
// (so a dead worker's operation becomes due when its lease ends); Finish sets
// it to NextCheckAt (or Now when zero) for pending and unknown, to
// NextCheckAt (possibly zero) for manual_review, and clears it for succeeded
// and failed. ClaimDue picks rows with next_check_at <= Now and no live lease.
// Finish releases the lease unless KeepLease is set and the new status is not
// terminal. Begin, Claim, StartAttempt and ClaimDue call CheckLeaseGranted
// with the real time the call took before they commit. Every method validates its parameters with the Validate methods
// in this package before touching the database, and returns ErrCorrupt
// (through Corrupt) for a stored value it cannot read back.
//
// Events are the operation's audit trail, written in the transaction of the
// change they document: Seq counts from 1 per operation, At is the call's
// Now, Actor defaults to the call's Owner; in Finish the caller's events come
// first, then the resolution entry. A resolution's Detail is JSON:
// {"outcome","note"} plus "provider_ref" or "new_key", "new_generation" and
// "previous_provider_ref".
package ledger
