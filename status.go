package payonce

import (
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
)

// Action is what the decision table says to do after a status lookup.
type Action string

const (
	// ActRecordSucceeded: the provider confirms the operation took effect.
	ActRecordSucceeded Action = "record_succeeded"
	// ActRecordFailed: the provider confirms the operation definitively failed.
	ActRecordFailed Action = "record_failed"
	// ActResend: the provider has no record and still remembers keys sent
	// when the first attempt did: resend with the same key.
	ActResend Action = "resend"
	// ActCheckLater: nothing to conclude yet; look up again at NextCheckAt.
	ActCheckLater Action = "check_later"
	// ActReview: automation must stop; an operator decides. NextCheckAt,
	// when set, asks for further read-only lookups while in review.
	ActReview Action = "review"
)

// Review reasons recorded with ActReview. They are stable strings that
// operators filter on.
const (
	ReasonWindowPassed = "key window passed with the outcome unknown"
	ReasonDuplicated   = "provider holds more than one object for this operation"
	ReasonProcessing   = "provider still processing after the configured age"
	ReasonKeyMismatch  = "provider holds this key with other parameters"
	ReasonContradicted = "provider answer contradicts the ledger"
)

// DecideInput is everything the decision table looks at.
type DecideInput struct {
	// Op is the operation as the ledger holds it (WindowStart, KeyExpiresAt).
	Op ledger.Operation
	// LastAttemptAt is the start of the operation's latest attempt.
	LastAttemptAt time.Time
	// Lookup is the lookup's answer; ignored when LookupErr is set.
	Lookup    LookupResult
	LookupErr error
	Now       time.Time
	// Margin is subtracted from the key expiry: clock skew plus one attempt
	// timeout, so that a resend started inside the window also lands inside it.
	Margin time.Duration
	// CheckAfter is how long to wait before the next lookup.
	CheckAfter time.Duration
	// ProcessingReviewAfter is how long after the window start an operation
	// the provider still reports as processing goes to review once its key
	// window has passed.
	ProcessingReviewAfter time.Duration
}

// Decision is the decision table's answer.
type Decision struct {
	Action      Action
	Reason      string
	NextCheckAt time.Time
}

// InsideWindow reports whether a resend with the operation's current key is
// still safe at now: no attempt may have reached the provider yet (the window
// is not open), or the provider still remembers the key, with margin to spare.
func InsideWindow(op ledger.Operation, now time.Time, margin time.Duration) bool {
	if op.WindowStart.IsZero() {
		// Rule 2 makes this a proof: every attempt is journaled before it
		// is sent, so no open window means nothing can have been sent.
		return true
	}
	return now.Before(op.KeyExpiresAt.Add(-margin))
}

// Decide is the decision table of docs/ARCHITECTURE.md as a pure function:
// after a "maybe sent" outcome, what the status lookup's answer means.
//
//	lookup says            inside key window        window passed
//	succeeded              record succeeded         record succeeded
//	failed                 record failed            record failed
//	processing             check later              check later; review after ProcessingReviewAfter
//	multiple objects       review (duplicated)      review (duplicated)
//	not found              resend, same key         review (never a new POST)
//	lookup failed          check later (backoff)    review, keep looking
//
// A "not found" from an eventually consistent lookup (Lag > 0) counts only
// once Lag has passed since the last attempt; before that it is "check later".
func Decide(in DecideInput) Decision {
	inside := InsideWindow(in.Op, in.Now, in.Margin)
	later := in.Now.Add(in.CheckAfter)
	if in.LookupErr != nil {
		if inside {
			return Decision{Action: ActCheckLater, NextCheckAt: later}
		}
		// Rule 5: outside the window nothing may be sent, and a failing
		// lookup cannot prove the money did not move. Keep looking read-only.
		return Decision{Action: ActReview, Reason: ReasonWindowPassed, NextCheckAt: later}
	}
	switch in.Lookup.State {
	case LookupSucceeded:
		return Decision{Action: ActRecordSucceeded}
	case LookupFailed:
		return Decision{Action: ActRecordFailed}
	case LookupMultiple:
		// Money already moved more than once: no automation can fix that.
		return Decision{Action: ActReview, Reason: ReasonDuplicated}
	case LookupProcessing:
		if !inside && in.ProcessingReviewAfter > 0 && !in.Op.WindowStart.IsZero() &&
			in.Now.Sub(in.Op.WindowStart) >= in.ProcessingReviewAfter {
			return Decision{Action: ActReview, Reason: ReasonProcessing, NextCheckAt: later}
		}
		return Decision{Action: ActCheckLater, NextCheckAt: later}
	case LookupNotFound:
		// An eventually consistent search may not show an object created by
		// the last attempt yet: "not found" proves nothing until the lag has
		// passed, and acting on it early could send a second charge.
		if settled := in.LastAttemptAt.Add(in.Lookup.Lag); in.Lookup.Lag > 0 && in.Now.Before(settled) {
			return Decision{Action: ActCheckLater, NextCheckAt: settled}
		}
		if inside {
			return Decision{Action: ActResend}
		}
		// Rule 5: the provider may have forgotten the key; a resend would be
		// processed as a new request, so only a person may decide.
		return Decision{Action: ActReview, Reason: ReasonWindowPassed, NextCheckAt: later}
	}
	return Decision{Action: ActCheckLater, NextCheckAt: later, Reason: fmt.Sprintf("unrecognised lookup state %q", in.Lookup.State)}
}
