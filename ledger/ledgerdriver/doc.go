// Package ledgerdriver is the toolkit of a ledger.Store implementation: the
// state machine every store applies (Apply*), the checks it makes (Validate*,
// Check*), the tombstone Cleanup leaves, the rules a provider event follows
// (ApplyWebhook), the feed's cursor encoding and the parsing of stored
// values. A service that uses a store never needs it; package ledger is what
// it reads. Package ledgertest is the conformance suite that proves a store
// correct: a store built with this package and not passing it is not done.
//
// This package imports ledger; ledger never imports it.
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
// by ledger.ResolutionDetail). Validate the parameters first (the Validate
// function of the method; ValidateCreate for CreateOrGet). The store itself
// enforces what only the database can: keys unique across operations
// (ledger.ErrKeyConflict), the numbering of events, and ClaimDue and
// Cleanup, whose selection and update run as statements over many rows.
// They follow the rules of package ledger: ClaimDue turns an expired
// in_flight into unknown, as ApplyClaim does.
//
// Times are kept as UTC microseconds (see UTC). next_check_at drives
// background work: Begin, Claim and StartAttempt set it to the lease expiry
// (so a dead worker's operation becomes due when its lease ends); Finish sets
// it to NextCheckAt (or Now when zero) for pending and unknown, to
// NextCheckAt (possibly zero) for manual_review, and clears it for succeeded
// and failed. ClaimDue picks rows with next_check_at <= Now and no live lease.
// Finish releases the lease unless KeepLease is set and the new status is not
// terminal. Begin, Claim, StartAttempt and ClaimDue call CheckLeaseGranted
// with the real time the call took before they commit. Every method
// validates its parameters with the Validate functions in this package
// before touching the database, and returns ledger.ErrCorrupt (through
// Corrupt) for a stored value it cannot read back.
//
// Events are the operation's audit trail, written in the transaction of the
// change they document: Seq counts from 1 per operation, At is the call's
// Now, Actor defaults to the call's Owner; in Finish the caller's events come
// first, then the resolution entry. A resolution's Detail is JSON:
// {"outcome","note"} plus "provider_ref" or "new_key", "new_generation" and
// "previous_provider_ref".
package ledgerdriver
