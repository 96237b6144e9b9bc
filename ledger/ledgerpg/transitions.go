package ledgerpg

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/payonce/payonce/ledger"
)

// The functions in this file compute the state an operation moves to. They
// are pure: the store methods read the row under a lock, call them, and
// write the result back in the same transaction.

// newOperation is the row recorded for an ID seen for the first time:
// pending and due at once, so that background work sends it even if the
// caller dies right after recording it.
func newOperation(n ledger.NewOperation, now time.Time) ledger.Operation {
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
		KeyTTL:      storedTTL(n.KeyTTL),
		NextCheckAt: now,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
}

// storedTTL is the key TTL as the store keeps it: whole milliseconds,
// rounded up so that a sub-millisecond TTL does not become zero.
func storedTTL(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// checkFingerprint refuses a second use of an ID for a different request:
// sending it would reuse the first request's key for other parameters.
func checkFingerprint(op ledger.Operation, fingerprint string) error {
	if op.Fingerprint != fingerprint {
		return fmt.Errorf("%w: operation %q is recorded with fingerprint %s, this request has %s",
			ledger.ErrFingerprintMismatch, op.ID, op.Fingerprint, fingerprint)
	}
	return nil
}

// checkNoLiveLease refuses the lease while another worker holds it and it
// has not expired: rule 3, one attempt in flight per operation.
func checkNoLiveLease(op ledger.Operation, owner string, now time.Time) error {
	if op.LeaseOwner != "" && op.LeaseOwner != owner && op.LeaseExpiresAt.After(now) {
		return fmt.Errorf("%w: operation %q is leased by %q until %s",
			ledger.ErrInProgress, op.ID, op.LeaseOwner, op.LeaseExpiresAt.Format(time.RFC3339Nano))
	}
	return nil
}

// takeLease gives the lease to owner. The caller has checked that the
// operation is not terminal and that nobody else holds a live lease.
func takeLease(op *ledger.Operation, owner string, now, until time.Time) {
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
}

// checkCanStart enforces StartAttempt's preconditions.
func checkCanStart(op ledger.Operation, owner string) error {
	if op.LeaseOwner != owner {
		// An expired lease not yet taken by anyone is still the caller's;
		// one taken by another worker is not, and its new holder may be
		// sending right now.
		return leaseLost(op, owner)
	}
	if op.Status != ledger.StatusPending && op.Status != ledger.StatusUnknown {
		// in_flight: an attempt is already out; terminal: nothing may be
		// sent any more.
		return fmt.Errorf("%w: operation %q is %s; an attempt starts only from pending or unknown",
			ledger.ErrStateConflict, op.ID, op.Status)
	}
	return nil
}

// startAttempt records the next attempt on op and returns it. The row is
// written before the request is sent (rule 2), and the key window opens at
// the first attempt that may reach the provider.
func startAttempt(op *ledger.Operation, now, until time.Time) ledger.Attempt {
	op.Attempts++
	if op.WindowStart.IsZero() {
		op.WindowStart = now
	}
	op.KeyExpiresAt = op.WindowStart.Add(op.KeyTTL)
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

func leaseLost(op ledger.Operation, owner string) error {
	holder := "nobody"
	if op.LeaseOwner != "" {
		holder = fmt.Sprintf("%q", op.LeaseOwner)
	}
	return fmt.Errorf("%w: operation %q is leased by %s, not %q", ledger.ErrLeaseLost, op.ID, holder, owner)
}

// applyFinish moves op to p.To. The caller has checked the lease, the
// expected status and the attempt.
func applyFinish(op *ledger.Operation, p ledger.FinishParams, now time.Time) {
	op.Status = p.To
	if p.ProviderRef != "" {
		op.ProviderRef = p.ProviderRef
	}
	if p.Result != nil {
		op.Result = bytes.Clone(p.Result)
	}
	switch p.To {
	case ledger.StatusPending, ledger.StatusUnknown:
		op.NextCheckAt = ledger.UTC(p.NextCheckAt)
		if op.NextCheckAt.IsZero() {
			op.NextCheckAt = now
		}
	case ledger.StatusManualReview:
		op.NextCheckAt = ledger.UTC(p.NextCheckAt) // zero: no further lookups
		op.ReviewReason = p.ReviewReason
		if p.From != ledger.StatusManualReview || op.ReviewAt.IsZero() {
			op.ReviewAt = now
		}
	case ledger.StatusSucceeded, ledger.StatusFailed:
		op.NextCheckAt = time.Time{}
		op.FinishedAt = now
	}
	if r := p.Resolution; r != nil {
		at := ledger.UTC(r.At)
		if at.IsZero() {
			at = now
		}
		op.Resolution = &ledger.Resolution{Actor: r.Actor, Note: r.Note, Outcome: r.Outcome, At: at}
	}
	if !p.KeepLease || p.To.Terminal() {
		op.LeaseOwner = ""
		op.LeaseExpiresAt = time.Time{}
	}
	op.UpdatedAt = now
}

// applyResolve records an operator's decision on an operation in review.
// The caller has checked that op is in manual_review.
func applyResolve(op *ledger.Operation, p ledger.ResolveParams, now time.Time) error {
	switch p.Outcome {
	case ledger.ResolveSucceeded, ledger.ResolveFailed:
		op.Status = ledger.StatusSucceeded
		if p.Outcome == ledger.ResolveFailed {
			op.Status = ledger.StatusFailed
		}
		if p.ProviderRef != "" {
			op.ProviderRef = p.ProviderRef
		}
		op.NextCheckAt = time.Time{}
		op.FinishedAt = now
	case ledger.ResolveResend:
		// The next generation is derived from the current one; skipping or
		// repeating one would reuse a key the provider may still remember.
		if p.NewGeneration != op.Generation+1 {
			return fmt.Errorf("%w: operation %q is at generation %d; a resend must move to generation %d, not %d",
				ledger.ErrStateConflict, op.ID, op.Generation, op.Generation+1, p.NewGeneration)
		}
		if p.NewKey == op.Key {
			return &ledger.ValidationError{Field: "NewKey", Problem: "must differ from the current key: the provider may still remember it"}
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
	}
	// ReviewReason and ReviewAt stay as history of the review.
	op.Resolution = &ledger.Resolution{Actor: p.Actor, Note: p.Note, Outcome: p.Outcome, At: now}
	op.LeaseOwner = ""
	op.LeaseExpiresAt = time.Time{}
	op.UpdatedAt = now
	return nil
}
