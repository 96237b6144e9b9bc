package ledgerdriver

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/payonce/payonce/ledger"
)

// The functions in this file are the state machine every store applies, so
// that it is written once. A store reads the operation (and, for Finish, two
// facts about its attempts) under its lock, calls the function of the method,
// and writes what it returns in the same transaction; on an error it writes
// nothing and returns the error (wrapped). They are pure: no I/O and no
// clock. Times come from the parameters and are normalized with UTC; the
// operation passed in is never modified. Each function expects parameters
// that passed their Validate method.

// Change is what one call writes in its transaction.
type Change struct {
	// Op is the operation's new state: write its mutable columns.
	Op ledger.Operation
	// Attempt is the attempt row the call writes; nil when there is none.
	// From ApplyStartAttempt it is the attempt to insert; from ApplyFinish it
	// is the finished attempt, with its outcome, whose row to update.
	Attempt *ledger.Attempt
	// Events are the audit entries to append, in this order, numbered after
	// the operation's last one and stamped at the call's Now. Actor is set.
	Events []ledger.NewEvent
}

// ApplyCreate is the operation recorded for an ID seen for the first time
// (Begin, CreateOrGet): pending and due at once, so that background work
// sends it even if the caller dies right after recording it. KeyTTL is
// n.KeyTTL as given: a store that keeps it at a coarser precision returns
// what it kept.
func ApplyCreate(n ledger.NewOperation, now time.Time) ledger.Operation {
	now = UTC(now)
	return ledger.Operation{
		ID:          n.ID,
		Key:         n.Key,
		Provider:    n.Provider,
		Kind:        n.Kind,
		References:  slices.Clone(n.References),
		Generation:  n.Generation,
		Fingerprint: n.Fingerprint,
		Request:     bytes.Clone(n.Request),
		Status:      ledger.StatusPending,
		KeyTTL:      n.KeyTTL,
		PaymentRef:  n.PaymentRef,
		NextCheckAt: now,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
}

// CheckFingerprint refuses a second use of an ID for a different request
// (ErrFingerprintMismatch): the same identity with another request is a
// caller bug, and sending it would reuse the first request's key with other
// parameters. CreateOrGet calls it on the operation it found; ApplyBegin
// calls it itself.
func CheckFingerprint(op ledger.Operation, fingerprint string) error {
	if op.Fingerprint != fingerprint {
		return fmt.Errorf("%w: operation %q is recorded with fingerprint %s, this request has %s",
			ledger.ErrFingerprintMismatch, op.ID, op.Fingerprint, fingerprint)
	}
	return nil
}

// ApplyBegin is Begin on op as recorded: created by ApplyCreate, or read
// under the store's lock. Write nothing when it returns an error or a
// result with Claimed false. Otherwise write res.Op and insert res.Attempt
// when set. The store sets res.Created.
//
// A terminal operation comes back unchanged and unclaimed, with no error:
// its recorded result answers the caller. A live lease held by another owner
// returns ErrInProgress with res.Op set to op, so the caller sees who holds
// it. A fingerprint mismatch returns ErrFingerprintMismatch and a zero
// result.
func ApplyBegin(op ledger.Operation, p ledger.BeginParams) (ledger.BeginResult, error) {
	now, until := UTC(p.Now), UTC(p.LeaseUntil)
	if err := CheckFingerprint(op, p.Op.Fingerprint); err != nil {
		return ledger.BeginResult{}, err
	}
	if op.Status.Terminal() {
		return ledger.BeginResult{Op: op}, nil
	}
	if err := checkNoLiveLease(op, p.Owner, now); err != nil {
		return ledger.BeginResult{Op: op}, err
	}
	// The ledger's key wins over p.Op.Key: after an operator approved a
	// resend, the operation sends under its newer generation's key.
	op = takeLease(op, p.Owner, now, until)
	res := ledger.BeginResult{Op: op, Claimed: true}
	// Only a pending operation may be sent at once. An unknown one (or an
	// in_flight one that takeLease just made unknown) may have been sent:
	// the caller must look its status up first.
	if p.StartAttempt && op.Status == ledger.StatusPending {
		a := startAttempt(&op, now, until)
		res.Op, res.Attempt = op, &a
	}
	return res, nil
}

// ApplyClaim is Claim on op read under the store's lock: the compare-and-set
// of the lease. Errors: ErrTerminal, ErrInProgress.
func ApplyClaim(op ledger.Operation, p ledger.ClaimParams) (ledger.Operation, error) {
	if op.Status.Terminal() {
		// Automation is done with it: succeeded and failed are final, and
		// manual_review waits for an operator.
		return ledger.Operation{}, fmt.Errorf("%w: operation %q is %s", ledger.ErrTerminal, op.ID, op.Status)
	}
	if err := checkNoLiveLease(op, p.Owner, UTC(p.Now)); err != nil {
		return ledger.Operation{}, err
	}
	return takeLease(op, p.Owner, UTC(p.Now), UTC(p.LeaseUntil)), nil
}

// ApplyStartAttempt is StartAttempt on op read under the store's lock. The
// Change holds the new operation, the attempt to insert, and p.Events.
// Errors: ErrLeaseLost, ErrStateConflict.
func ApplyStartAttempt(op ledger.Operation, p ledger.StartAttemptParams) (Change, error) {
	if op.LeaseOwner != p.Owner {
		// Rule 3: only the lease holder sends. An expired lease that nobody
		// took is still the caller's: no one else can have acted. One taken
		// by another worker is not, and its new holder may be sending now.
		return Change{}, leaseLost(op, p.Owner)
	}
	if op.Status != ledger.StatusPending && op.Status != ledger.StatusUnknown {
		// in_flight: an attempt is already out; terminal: nothing may be
		// sent any more.
		return Change{}, fmt.Errorf("%w: operation %q is %s; an attempt starts only from pending or unknown",
			ledger.ErrStateConflict, op.ID, op.Status)
	}
	a := startAttempt(&op, UTC(p.Now), UTC(p.LeaseUntil))
	return Change{Op: op, Attempt: &a, Events: callerEvents(p.Events, p.Owner)}, nil
}

// ApplyFinish is Finish on op read under the store's lock. When p.Attempt is
// set, the store also reads in the same transaction:
//   - recorded: the attempt numbered p.Attempt.Number as stored, or nil when
//     there is none;
//   - othersWindowStart: the earliest StartedAt of the operation's other
//     attempts under its current Key that may have reached the provider, or
//     zero when there are none. That is where the key window starts if this
//     attempt proves never to have left.
//
// Both are ignored when p.Attempt is nil. The Change holds the new operation,
// the finished attempt when p.Attempt is set, and the events: p.Events, then
// the EventResolution entry of p.Resolution when it is set. Errors:
// ErrLeaseLost, ErrStateConflict, ErrCorrupt (the latest attempt is counted
// but not recorded).
func ApplyFinish(op ledger.Operation, p ledger.FinishParams, recorded *ledger.Attempt, othersWindowStart time.Time) (Change, error) {
	now := UTC(p.Now)
	if op.LeaseOwner != p.Owner {
		// A worker whose lease was taken over must not overwrite the new
		// owner's work: the outcome it holds may already be stale.
		return Change{}, leaseLost(op, p.Owner)
	}
	if op.Status != p.From {
		return Change{}, fmt.Errorf("%w: operation %q is %s, not %s", ledger.ErrStateConflict, op.ID, op.Status, p.From)
	}
	if err := CheckTransition(p.From, p.To); err != nil {
		return Change{}, err
	}
	var finished *ledger.Attempt
	if p.Attempt != nil {
		a, err := finishAttempt(&op, *p.Attempt, recorded, othersWindowStart, now)
		if err != nil {
			return Change{}, err
		}
		finished = &a
	}
	if err := checkBackToPending(op, p); err != nil {
		return Change{}, err
	}
	applyOutcome(&op, p, now)

	evs := callerEvents(p.Events, p.Owner)
	if r := p.Resolution; r != nil {
		d := ledger.ResolutionDetail{Outcome: r.Outcome, Note: r.Note, ProviderRef: p.ProviderRef}
		evs = append(evs, ledger.NewEvent{Kind: ledger.EventResolution, Actor: r.Actor, Detail: d.String()})
	}
	return Change{Op: op, Attempt: finished, Events: evs}, nil
}

// finishAttempt is the part of ApplyFinish that finishes out, the outcome
// of op's attempt in flight: recorded is that attempt as stored. It returns
// the finished attempt and, when the attempt proves never to have left,
// moves op's key window (see ApplyFinish for othersWindowStart).
func finishAttempt(op *ledger.Operation, out ledger.AttemptOutcome, recorded *ledger.Attempt, othersWindowStart, now time.Time) (ledger.Attempt, error) {
	// Only the attempt now in flight can be finished, and only once: a
	// late outcome of an older attempt must not rewrite history.
	if out.Number != op.Attempts {
		return ledger.Attempt{}, fmt.Errorf("%w: operation %q: attempt %d is not the latest (latest is %d)",
			ledger.ErrStateConflict, op.ID, out.Number, op.Attempts)
	}
	if recorded == nil {
		return ledger.Attempt{}, Corrupt(op.ID, "attempts", fmt.Errorf("attempt %d is counted but not recorded", out.Number))
	}
	if !recorded.FinishedAt.IsZero() {
		return ledger.Attempt{}, fmt.Errorf("%w: operation %q: attempt %d is already finished as %s",
			ledger.ErrStateConflict, op.ID, out.Number, recorded.Outcome)
	}
	a := *recorded
	a.FinishedAt = now
	a.MayHaveReached = out.Class.MayHaveReached()
	a.Outcome = out.Class
	a.HTTPStatus = out.HTTPStatus
	a.ProviderRequestID = out.ProviderRequestID
	a.Error = out.Error
	a.Replayed = out.Replayed
	if !a.MayHaveReached {
		// Proven never to have left: the window is what the other
		// attempts under this key opened, closed if none did, so a
		// refused connection does not eat into the time for resends.
		// Attempts under earlier key generations do not count: the
		// window belongs to the key the provider would see now.
		op.WindowStart = UTC(othersWindowStart)
		op.KeyExpiresAt = keyExpiry(*op)
	}
	return a, nil
}

// checkBackToPending is the rule of ApplyFinish for in_flight → pending,
// checked on op after its attempt is finished.
func checkBackToPending(op ledger.Operation, p ledger.FinishParams) error {
	if p.From == ledger.StatusInFlight && p.To == ledger.StatusPending {
		// Pending means "nothing can have been sent: safe to send at any
		// time". Only an attempt proven never to have left may return an
		// operation there, and only if no other attempt under this key may
		// have reached the provider; otherwise the operation is unknown,
		// and the next sender must look up and respect the key window.
		if p.Attempt.Class != ledger.OutcomeNotSent {
			return fmt.Errorf("%w: operation %q: a %s attempt may have reached the provider; record unknown, not pending",
				ledger.ErrStateConflict, op.ID, p.Attempt.Class)
		}
		if !op.WindowStart.IsZero() {
			return fmt.Errorf("%w: operation %q: an earlier attempt may have reached the provider; record unknown, not pending",
				ledger.ErrStateConflict, op.ID)
		}
	}
	return nil
}

// applyOutcome is the part of ApplyFinish that records p on op (status,
// outcome fields, schedule, resolution, lease) at now.
func applyOutcome(op *ledger.Operation, p ledger.FinishParams, now time.Time) {
	op.Status = p.To
	if p.ProviderRef != "" {
		op.ProviderRef = p.ProviderRef
	}
	if p.Result != nil {
		op.Result = bytes.Clone(p.Result)
	}
	switch p.To {
	case ledger.StatusPending, ledger.StatusUnknown:
		// Background work must come back to an operation that is not
		// final, or it would be lost; zero means at once.
		op.NextCheckAt = UTC(p.NextCheckAt)
		if op.NextCheckAt.IsZero() {
			op.NextCheckAt = now
		}
	case ledger.StatusManualReview:
		// Non-zero asks for further read-only lookups; zero waits for an
		// operator.
		op.NextCheckAt = UTC(p.NextCheckAt)
		op.ReviewCode, op.ReviewReason = p.ReviewCode, p.ReviewReason
		// ReviewAt is when the operation entered review: staying in review
		// (a lookup that settled nothing) keeps it, so that the oldest
		// reviews still list first.
		if p.From != ledger.StatusManualReview || op.ReviewAt.IsZero() {
			op.ReviewAt = now
		}
	case ledger.StatusSucceeded, ledger.StatusFailed:
		// Final: no background work, and retention counts from FinishedAt.
		op.NextCheckAt = time.Time{}
		op.FinishedAt = now
	}
	if r := p.Resolution; r != nil {
		at := UTC(r.At)
		if at.IsZero() {
			at = now
		}
		op.Resolution = &ledger.Resolution{Actor: r.Actor, Note: r.Note, Outcome: r.Outcome, At: at}
	}
	// A terminal status releases the lease whatever KeepLease says:
	// automation is done with the operation.
	if !p.KeepLease || p.To.Terminal() {
		op.LeaseOwner = ""
		op.LeaseExpiresAt = time.Time{}
	}
	op.UpdatedAt = now
}

// ApplyResolve is Resolve on op read under the store's lock. The Change holds
// the new operation and its EventResolution entry. A resend's NewKey that
// another operation uses is the store's to refuse (ErrKeyConflict, from its
// unique index on keys). Errors: ErrNotInReview, ErrStateConflict (a resend
// whose NewGeneration is not the next one), ErrInvalid (a resend whose
// NewKey is the current key).
func ApplyResolve(op ledger.Operation, p ledger.ResolveParams) (Change, error) {
	now := UTC(p.Now)
	if op.Status != ledger.StatusManualReview {
		return Change{}, fmt.Errorf("%w: operation %q is %s", ledger.ErrNotInReview, op.ID, op.Status)
	}
	d := ledger.ResolutionDetail{Outcome: p.Outcome, Note: p.Note}
	switch p.Outcome {
	case ledger.ResolveSucceeded, ledger.ResolveFailed:
		op.Status = ledger.StatusSucceeded
		if p.Outcome == ledger.ResolveFailed {
			op.Status = ledger.StatusFailed
		}
		if p.ProviderRef != "" {
			op.ProviderRef = p.ProviderRef
		}
		d.ProviderRef = p.ProviderRef
		op.NextCheckAt = time.Time{}
		op.FinishedAt = now
	case ledger.ResolveResend:
		if len(op.Request) == 0 {
			// Reopened from its tombstone (see reopened): Cleanup deleted
			// the request, so a new generation would have nothing to send.
			return Change{}, fmt.Errorf("%w: operation %q has no request to send (Cleanup deleted it before a provider event reopened the operation for review); resolve it as succeeded or failed",
				ledger.ErrStateConflict, op.ID)
		}
		// The next generation is derived from the current one; skipping or
		// repeating one would reuse a key the provider may still remember.
		if p.NewGeneration != op.Generation+1 {
			return Change{}, fmt.Errorf("%w: operation %q is at generation %d; a resend must move to generation %d, not %d",
				ledger.ErrStateConflict, op.ID, op.Generation, op.Generation+1, p.NewGeneration)
		}
		if p.NewKey == op.Key {
			return Change{}, &ledger.ValidationError{Field: "NewKey", Problem: "must differ from the current key: the provider may still remember it"}
		}
		op.Key = p.NewKey
		op.Generation = p.NewGeneration
		op.Status = ledger.StatusPending
		// The new key has never been sent: its window is closed until its
		// first attempt.
		op.WindowStart = time.Time{}
		op.KeyExpiresAt = time.Time{}
		op.NextCheckAt = now
		op.FinishedAt = time.Time{}
		// The new generation starts clean: the previous generation's
		// reference and result describe an object the operator judged not
		// to be this operation's outcome. Kept, they would be reported as
		// the outcome of the new key (a replay of a later call, a success
		// recorded without a reference) and could settle it wrongly. The
		// reference stays in the audit trail.
		d.PreviousProviderRef = op.ProviderRef
		op.ProviderRef = ""
		op.Result = nil
		d.NewKey, d.NewGeneration = p.NewKey, p.NewGeneration
	}
	// ReviewReason and ReviewAt stay as history of the review.
	op.Resolution = &ledger.Resolution{Actor: p.Actor, Note: p.Note, Outcome: p.Outcome, At: now}
	// The operator's decision overrides read-only lookups in progress.
	op.LeaseOwner = ""
	op.LeaseExpiresAt = time.Time{}
	op.UpdatedAt = now
	return Change{Op: op, Events: []ledger.NewEvent{{Kind: ledger.EventResolution, Actor: p.Actor, Detail: d.String()}}}, nil
}

// CheckLeaseGranted refuses to grant a lease that would already have lapsed
// (ErrLeaseLost). A store calls it before committing a call that grants or
// extends a lease (Begin, Claim, StartAttempt, ClaimDue), with waited the
// real time the call has taken so far, measured with the monotonic clock
// from its start. The lease is stamped with the caller's clock (Now,
// LeaseUntil) read before the call; a write that waited on a lock (a
// caller's open transaction holding the row, another writer) for longer
// than the lease lasts would otherwise hand back a lease that has already
// ended, and another worker could take the operation over and send while
// the first one sends too (rule 3). subject names what is leased, e.g.
// `operation "op-1"`.
func CheckLeaseGranted(subject string, now, until time.Time, waited time.Duration) error {
	if now.Add(waited).Before(until) {
		return nil
	}
	return fmt.Errorf("%w: %s: the lease would have lapsed before it was granted: the write waited %s",
		ledger.ErrLeaseLost, subject, waited.Round(time.Millisecond))
}

// checkNoLiveLease refuses the lease while another worker holds it and it
// has not expired (ErrInProgress): rule 3, one attempt in flight per
// operation.
func checkNoLiveLease(op ledger.Operation, owner string, now time.Time) error {
	if op.LeaseOwner != "" && op.LeaseOwner != owner && op.LeaseExpiresAt.After(now) {
		return fmt.Errorf("%w: operation %q is leased by %q until %s",
			ledger.ErrInProgress, op.ID, op.LeaseOwner, op.LeaseExpiresAt.Format(time.RFC3339Nano))
	}
	return nil
}

// takeLease gives the lease to owner. The caller has checked that the
// operation is not terminal and that nobody else holds a live lease.
func takeLease(op ledger.Operation, owner string, now, until time.Time) ledger.Operation {
	if op.Status == ledger.StatusInFlight {
		// The previous holder recorded an attempt and then lost its lease
		// (or the caller is taking over its own): the request may have
		// reached the provider, so the next step is a lookup, not a send.
		op.Status = ledger.StatusUnknown
	}
	op.LeaseOwner = owner
	op.LeaseExpiresAt = until
	// Due again when the lease ends, so that a worker that dies holding it
	// is taken over by background work.
	op.NextCheckAt = until
	op.UpdatedAt = now
	return op
}

// startAttempt records the next attempt on op and returns it. It is written
// before the request is sent (rule 2), so it may have reached the provider
// from the start, and the key window opens at the first such attempt.
func startAttempt(op *ledger.Operation, now, until time.Time) ledger.Attempt {
	op.Attempts++
	if op.WindowStart.IsZero() {
		op.WindowStart = now
	}
	op.KeyExpiresAt = keyExpiry(*op)
	op.Status = ledger.StatusInFlight
	op.LeaseExpiresAt = until
	op.NextCheckAt = until
	op.UpdatedAt = now
	return ledger.Attempt{
		OperationID:    op.ID,
		Number:         op.Attempts,
		Key:            op.Key,
		StartedAt:      now,
		MayHaveReached: true,
	}
}

// keyExpiry is WindowStart + KeyTTL, zero while the window is closed.
func keyExpiry(op ledger.Operation) time.Time {
	if op.WindowStart.IsZero() {
		return time.Time{}
	}
	return UTC(op.WindowStart.Add(op.KeyTTL))
}

func leaseLost(op ledger.Operation, owner string) error {
	holder := "nobody"
	if op.LeaseOwner != "" {
		holder = fmt.Sprintf("%q", op.LeaseOwner)
	}
	return fmt.Errorf("%w: operation %q is leased by %s, not %q", ledger.ErrLeaseLost, op.ID, holder, owner)
}

// callerEvents are the events a caller passed, each one's actor defaulting
// to the lease owner.
func callerEvents(evs []ledger.NewEvent, owner string) []ledger.NewEvent {
	out := make([]ledger.NewEvent, 0, len(evs)+1)
	for _, e := range evs {
		if e.Actor == "" {
			e.Actor = owner
		}
		out = append(out, e)
	}
	return out
}
