package payonce

import (
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
)

// The decision table, both halves, as pure functions: decideSend says what
// the classified answer to a send means for the operation, decide what a
// status lookup's answer means after a "maybe sent" outcome, and
// decideInReview what a read-only lookup of an operation in review means.
// attempt.go carries their decisions out; nothing here reads a clock or a
// ledger.

// sendDecision is what the answer to one send means for the operation.
type sendDecision struct {
	// To is the operation's next status.
	To ledger.Status
	// ReviewReason is set when To is manual_review.
	ReviewReason string
	// Note, when set, is an audit note recorded with the transition.
	Note string
	// Release reports that the run gives the lease up and ends the call:
	// the operation waits for background work or a person.
	Release bool
	// CheckLater asks background work to look the operation up after
	// CheckInterval.
	CheckLater bool
}

// decideSend is the first half of the decision table: the next status after
// the classified answer out to an attempt. windowOpenBefore reports that an
// earlier attempt may already have reached the provider.
//
//	answer                               next status
//	contradicts the request (sent)       manual_review (contradicted), lease released
//	success                              succeeded
//	success, still processing            unknown, lease released, look up later
//	refused                              failed
//	not sent, no earlier attempt out     pending
//	not sent, an earlier attempt out     unknown
//	key in use with other parameters     manual_review (key mismatch)
//	maybe sent, key in use (409)         unknown
func decideSend(out Outcome, windowOpenBefore bool) sendDecision {
	switch {
	case out.Contradiction != "" && out.Class != ledger.OutcomeNotSent:
		// The answer names an object that is not this request's (another
		// operation, amount or currency): recording it as this operation's
		// success or failure would make the ledger disagree with the
		// provider, and a resend could move money a second time.
		return sendDecision{To: ledger.StatusManualReview, ReviewReason: ReasonContradicted, Release: true,
			Note: "answer contradicts the request: " + out.Contradiction}
	case out.Class == ledger.OutcomeSuccess && out.Processing:
		return sendDecision{To: ledger.StatusUnknown, Release: true, CheckLater: true}
	case out.Class == ledger.OutcomeSuccess:
		return sendDecision{To: ledger.StatusSucceeded}
	case out.Class == ledger.OutcomeRefused:
		return sendDecision{To: ledger.StatusFailed}
	case out.Class == ledger.OutcomeNotSent && windowOpenBefore:
		// This attempt provably never left, but an earlier one may have
		// reached the provider: the operation is still "maybe sent".
		// Back to pending, the next call would send without a lookup and
		// without the key-window check, possibly after the provider
		// forgot the key.
		return sendDecision{To: ledger.StatusUnknown}
	case out.Class == ledger.OutcomeNotSent:
		return sendDecision{To: ledger.StatusPending}
	case out.Class == ledger.OutcomeKeyMismatch:
		return sendDecision{To: ledger.StatusManualReview, ReviewReason: ReasonKeyMismatch}
	default: // maybe_sent, key_in_use
		return sendDecision{To: ledger.StatusUnknown}
	}
}

// action is what the decision table says to do after a status lookup.
type action string

const (
	// actRecordSucceeded: the provider confirms the operation took effect.
	actRecordSucceeded action = "record_succeeded"
	// actRecordFailed: the provider confirms the operation definitively failed.
	actRecordFailed action = "record_failed"
	// actResend: the provider has no record and still remembers keys sent
	// when the first attempt did: resend with the same key.
	actResend action = "resend"
	// actCheckLater: nothing to conclude yet; look up again at NextCheckAt.
	actCheckLater action = "check_later"
	// actReview: automation must stop; an operator decides. NextCheckAt,
	// when set, asks for further read-only lookups while in review.
	actReview action = "review"
)

// Review reasons recorded with ActReview. They are stable strings that
// operators filter on.
const (
	ReasonWindowPassed = "key window passed with the outcome unknown"
	ReasonDuplicated   = ledger.ReasonDuplicated
	ReasonProcessing   = "provider still processing after the configured age"
	ReasonKeyMismatch  = "provider holds this key with other parameters"
	ReasonContradicted = ledger.ReasonContradicted
)

// decideInput is everything the decision table looks at.
type decideInput struct {
	// Op is the operation as the ledger holds it (WindowStart, KeyExpiresAt).
	Op ledger.Operation
	// LastAttemptAt is when the operation's latest attempt ended: its last
	// transmission's answer or error, or its timeout when it never finished.
	// An eventually consistent lookup's lag counts from there.
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
	// window has passed. Zero or negative (-1 in Config): never for its age.
	ProcessingReviewAfter time.Duration
	// KeyAnswered reports that the provider replayed a stored error for an
	// attempt under the current key: every resend under that key gets the
	// same answer, so "not found" leads to a later lookup, never a resend.
	KeyAnswered bool
	// ResendNotBefore, when set, is the earliest time a resend may start:
	// before it, a "not found" inside the window means "check later at
	// ResendNotBefore". It paces resends of one operation.
	ResendNotBefore time.Time
}

// decision is the decision table's answer.
type decision struct {
	Action      action
	Reason      string
	NextCheckAt time.Time
}

// status is the operation's next status under d, for every action but
// actResend (which journals an attempt instead): unchanged means unknown.
func (d decision) status() ledger.Status {
	switch d.Action {
	case actRecordSucceeded:
		return ledger.StatusSucceeded
	case actRecordFailed:
		return ledger.StatusFailed
	case actReview:
		return ledger.StatusManualReview
	}
	return ledger.StatusUnknown
}

// insideWindow reports whether a resend with the operation's current key is
// still safe at now: no attempt may have reached the provider yet (the window
// is not open), or the provider still remembers the key, with margin to spare.
func insideWindow(op ledger.Operation, now time.Time, margin time.Duration) bool {
	if op.WindowStart.IsZero() {
		// Rule 2 makes this a proof: every attempt is journaled before it
		// is sent, so no open window means nothing can have been sent.
		return true
	}
	return now.Before(op.KeyExpiresAt.Add(-margin))
}

// decide is the decision table of docs/ARCHITECTURE.md as a pure function:
// after a "maybe sent" outcome, what the status lookup's answer means.
//
//	lookup says            inside key window        window passed
//	succeeded              record succeeded         record succeeded
//	failed                 record failed            record failed
//	processing             check later              check later; review after ProcessingReviewAfter
//	multiple objects       review (duplicated)      review (duplicated)
//	not found              resend, same key         review (never a new POST)
//	lookup failed          check later (backoff)    review, keep looking
//	contradicts the op     review (contradicted)    review (contradicted)
//
// A "not found" from an eventually consistent lookup (Lag > 0) counts only
// once Lag has passed since the end of the last attempt; before that it is
// "check later". Inside the window, "not found" resends only when the key's
// answer is not a replayed stored error (KeyAnswered) and ResendNotBefore
// has come; otherwise it is "check later".
func decide(in decideInput) decision {
	inside := insideWindow(in.Op, in.Now, in.Margin)
	later := in.Now.Add(in.CheckAfter)
	if in.LookupErr != nil {
		if inside {
			return decision{Action: actCheckLater, NextCheckAt: later}
		}
		// Rule 5: outside the window nothing may be sent, and a failing
		// lookup cannot prove the money did not move. Keep looking read-only.
		return decision{Action: actReview, Reason: ReasonWindowPassed, NextCheckAt: later}
	}
	if in.Lookup.Contradiction != "" {
		// The object found is not this operation's (another amount,
		// currency or operation id): neither its success nor its failure
		// can be recorded, and a resend could move money again.
		return decision{Action: actReview, Reason: ReasonContradicted}
	}
	switch in.Lookup.State {
	case LookupSucceeded:
		return decision{Action: actRecordSucceeded}
	case LookupFailed:
		return decision{Action: actRecordFailed}
	case LookupMultiple:
		// Money already moved more than once: no automation can fix that.
		return decision{Action: actReview, Reason: ReasonDuplicated}
	case LookupProcessing:
		if !inside && in.ProcessingReviewAfter > 0 && !in.Op.WindowStart.IsZero() &&
			in.Now.Sub(in.Op.WindowStart) >= in.ProcessingReviewAfter {
			return decision{Action: actReview, Reason: ReasonProcessing, NextCheckAt: later}
		}
		return decision{Action: actCheckLater, NextCheckAt: later}
	case LookupNotFound:
		// An eventually consistent search may not show an object created by
		// the last attempt yet: "not found" proves nothing until the lag has
		// passed, and acting on it early could send a second charge.
		if settled := in.LastAttemptAt.Add(in.Lookup.Lag); in.Lookup.Lag > 0 && in.Now.Before(settled) {
			return decision{Action: actCheckLater, NextCheckAt: settled}
		}
		if inside && in.KeyAnswered {
			// The provider stored an error under this key and replays it:
			// a resend cannot change the answer, and each one counts
			// against the provider's limits. Keep looking until the window
			// passes.
			return decision{Action: actCheckLater, NextCheckAt: later}
		}
		if inside && in.Now.Before(in.ResendNotBefore) {
			next := in.ResendNotBefore
			if closes := in.Op.KeyExpiresAt.Add(-in.Margin); !in.Op.WindowStart.IsZero() && closes.Before(next) {
				// No resend can come before the window closes: come back
				// when it does, to hand the operation to a person then.
				next = closes
			}
			return decision{Action: actCheckLater, NextCheckAt: next}
		}
		if inside {
			return decision{Action: actResend}
		}
		// Rule 5: the provider may have forgotten the key; a resend would be
		// processed as a new request, so only a person may decide.
		return decision{Action: actReview, Reason: ReasonWindowPassed, NextCheckAt: later}
	}
	return decision{Action: actCheckLater, NextCheckAt: later, Reason: fmt.Sprintf("unrecognised lookup state %q", in.Lookup.State)}
}

// reviewDecision is what a read-only lookup of an operation in review means.
type reviewDecision struct {
	// Settle, when set, settles the operation with that outcome (a
	// payonce-reconciler resolution); otherwise it stays in review.
	Settle ledger.ResolutionOutcome
	// ReviewReason, when set, replaces the operation's review reason.
	ReviewReason string
	// StopChecking ends the read-only lookups: a later one is not likely to
	// change the answer.
	StopChecking bool
}

// action is the review decision as the action its lookup is counted under
// (payonce.lookups): settled succeeded or failed, or kept in review.
func (d reviewDecision) action() action {
	switch d.Settle {
	case ledger.ResolveSucceeded:
		return actRecordSucceeded
	case ledger.ResolveFailed:
		return actRecordFailed
	}
	return actReview
}

// decideInReview is the table for operations in review. Automation never
// sends for them; a lookup may only settle one the provider definitively
// answers for, or sharpen why it needs a person.
//
//	lookup answer                        decision
//	lookup failed                        stay in review, look again later
//	object contradicts the operation     review (contradicted), stop looking
//	succeeded / failed                   settle succeeded / failed
//	more than one object                 review (duplicated), stop looking
//	not found, processing                stay in review, look again later
func decideInReview(lr LookupResult, lerr error) reviewDecision {
	switch {
	case lerr != nil:
		return reviewDecision{}
	case lr.Contradiction != "":
		// Not this operation's object: nothing to settle, and nothing a
		// later lookup is likely to change.
		return reviewDecision{ReviewReason: ReasonContradicted, StopChecking: true}
	case lr.State == LookupSucceeded:
		return reviewDecision{Settle: ledger.ResolveSucceeded}
	case lr.State == LookupFailed:
		return reviewDecision{Settle: ledger.ResolveFailed}
	case lr.State == LookupMultiple:
		return reviewDecision{ReviewReason: ReasonDuplicated, StopChecking: true}
	default:
		return reviewDecision{}
	}
}
