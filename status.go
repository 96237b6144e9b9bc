package payonce

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
	"github.com/payonce/payonce/semconv"
)

// The status query before any resend, and what its answer decides. After
// a "maybe sent" outcome an operation is unknown, and nothing is sent for
// it again until the provider has been asked what became of it:
// lookupAndDecide reads the operation's history, asks the provider
// (lookup, with every earlier key generation's keys and references:
// lookupQuery) and carries out decide, the decision table as a pure
// function; lookupInReview asks, read-only, about an operation in review
// and carries out decideInReview. decide and decideInReview read no clock
// and no ledger. What the answer to a send means (decideSend) is in
// attempt.go.

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

// Review reasons: the text a person reads beside the review code that
// Operation.ReviewCode and Result.ReviewCode carry. A program compares the
// code (ledger.ReviewCodeWindowPassed, ...); the text may grow a detail.
const (
	ReasonWindowPassed = "key window passed with the outcome unknown"
	ReasonDuplicated   = ledger.ReasonDuplicated
	ReasonProcessing   = "provider still processing after the configured age"
	ReasonKeyMismatch  = "provider holds this key with other parameters"
	ReasonContradicted = ledger.ReasonContradicted
	// ReasonStoredError (ledger.ReviewCodeStoredError) is followed by the
	// evidence: the lookups that found nothing and the stored answer.
	ReasonStoredError = "provider replayed a stored error and lookups found nothing"
	// ReasonNothingMoved is the failure message of an operation that
	// Config.FailStoredErrors recorded as failed on the same evidence; the
	// DeclinedError's Code is then CodeStoredError.
	ReasonNothingMoved = "nothing moved, per the lookups: the provider replayed a stored error"
)

// CodeStoredError is the DeclinedError.Code (and Result.Code) of an
// operation recorded as failed by Config.FailStoredErrors: not the
// provider's code, payonce's, since the provider refused nothing.
const CodeStoredError = "stored_error"

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
	// ProvesAbsence is ProviderInfo.LookupProvesAbsence: without it a "not
	// found" is no evidence, and a stored error waits for the window.
	ProvesAbsence bool
	// StoredError is the evidence the ledger holds for a KeyAnswered
	// operation: the earlier lookups that count (storedErrorHistory).
	StoredError storedErrorEvidence
	// FailStoredErrors is Config.FailStoredErrors: on enough evidence,
	// record failed instead of review.
	FailStoredErrors bool
	// StoredErrorsFinal is ProviderInfo.StoredErrorsFinal: without it
	// FailStoredErrors never records failed.
	StoredErrorsFinal bool
	// ResendNotBefore, when set, is the earliest time a resend may start:
	// before it, a "not found" inside the window means "check later at
	// ResendNotBefore". It paces resends of one operation.
	ResendNotBefore time.Time
}

// storedErrorEvidence is what the ledger shows of a replayed stored error
// under the operation's current key and of the lookups made since.
type storedErrorEvidence struct {
	// HTTPStatus and Error are the replayed attempt's answer.
	HTTPStatus int
	Error      string
	// NotFound counts the recorded lookups that prove absence (storedErrorHistory),
	// the first at First and the last at Last; the lookup being decided is
	// not among them.
	NotFound    int
	First, Last time.Time
}

// storedErrorMinLookups is how many lookups, each made once the lookup's lag
// had passed since the last attempt and at distinct times, must have found
// nothing: one could be a stale read (a replica behind, an index not yet
// caught up), two at different times are the evidence that nothing moved.
const storedErrorMinLookups = 2

// storedErrorSettled reports whether the lookup being decided (a "not found"
// whose lag has passed) completes the evidence that a replayed stored error
// moved nothing, and the evidence with it counted. A stored error means the
// provider processed the key and answered it with an error, which it will
// replay for the key's whole window: waiting for the window tells nothing
// more than the lookups already did, it only keeps the order "processing"
// for a day (Stripe) or a month (Adyen). Only a lookup that proves absence
// counts (ProviderInfo.LookupProvesAbsence): Adyen's "not found" proves
// nothing, so its stored errors still wait for the window.
func storedErrorSettled(in decideInput) (storedErrorEvidence, bool) {
	ev := in.StoredError
	if !in.KeyAnswered || !in.ProvesAbsence {
		return ev, false
	}
	if ev.NotFound == 0 {
		ev.First = in.Now
	}
	ev.NotFound++
	ev.Last = in.Now
	// Two reads at the same instant are one view of the provider.
	return ev, ev.NotFound >= storedErrorMinLookups && ev.Last.After(ev.First)
}

// storedErrorDetail is the evidence, for the reason and the audit entry.
func storedErrorDetail(ev storedErrorEvidence) string {
	d := fmt.Sprintf("%d lookups found nothing from %s to %s; stored answer HTTP %d",
		ev.NotFound, ev.First.UTC().Format(time.RFC3339), ev.Last.UTC().Format(time.RFC3339), ev.HTTPStatus)
	if ev.Error != "" {
		d += ": " + truncate(ev.Error, 200)
	}
	return d
}

// decision is the decision table's answer.
type decision struct {
	Action action
	// Code is the review code with actReview; Reason says it for a person
	// (or, with actCheckLater, why).
	Code        ledger.ReviewCode
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
//	not found, stored err  check later; after 2     check later; after 2 lookups
//	  replayed for the key   lookups past the lag:    past the lag: review (stored
//	                         review (stored error),   error), or failed; else review
//	                         or failed (opt-in)       (window passed)
//	lookup failed          check later (backoff)    review, keep looking
//	contradicts the op     review (contradicted)    review (contradicted)
//
// A "not found" from an eventually consistent lookup (Lag > 0) counts only
// once Lag has passed since the end of the last attempt; before that it is
// "check later". Inside the window, "not found" resends only when the key's
// answer is not a replayed stored error (KeyAnswered) and ResendNotBefore
// has come; otherwise it is "check later". After a replayed stored error,
// a lookup that proves absence (ProvesAbsence) and is made past the lag
// counts as evidence; once storedErrorMinLookups of them, at distinct
// times, found nothing, the operation goes to review (stored error), or
// is recorded failed with FailStoredErrors, in or after the window.
func decide(in decideInput) decision {
	inside := insideWindow(in.Op, in.Now, in.Margin)
	later := in.Now.Add(in.CheckAfter)
	if in.LookupErr != nil {
		if inside {
			return decision{Action: actCheckLater, NextCheckAt: later}
		}
		// Rule 5: outside the window nothing may be sent, and a failing
		// lookup cannot prove the money did not move. Keep looking read-only.
		return decision{Action: actReview, Code: ledger.ReviewCodeWindowPassed, Reason: ReasonWindowPassed, NextCheckAt: later}
	}
	if in.Lookup.Contradiction != "" {
		// The object found is not this operation's (another amount,
		// currency or operation id): neither its success nor its failure
		// can be recorded, and a resend could move money again.
		return decision{Action: actReview, Code: ledger.ReviewCodeContradicted, Reason: ReasonContradicted}
	}
	switch in.Lookup.State {
	case LookupSucceeded:
		return decision{Action: actRecordSucceeded}
	case LookupFailed:
		return decision{Action: actRecordFailed}
	case LookupMultiple:
		// Money already moved more than once: no automation can fix that.
		return decision{Action: actReview, Code: ledger.ReviewCodeDuplicated, Reason: ReasonDuplicated}
	case LookupProcessing:
		if !inside && in.ProcessingReviewAfter > 0 && !in.Op.WindowStart.IsZero() &&
			in.Now.Sub(in.Op.WindowStart) >= in.ProcessingReviewAfter {
			return decision{Action: actReview, Code: ledger.ReviewCodeProcessing, Reason: ReasonProcessing, NextCheckAt: later}
		}
		return decision{Action: actCheckLater, NextCheckAt: later}
	case LookupNotFound:
		// An eventually consistent search may not show an object created by
		// the last attempt yet: "not found" proves nothing until the lag has
		// passed, and acting on it early could send a second charge.
		if settled := in.LastAttemptAt.Add(in.Lookup.Lag); in.Lookup.Lag > 0 && in.Now.Before(settled) {
			return decision{Action: actCheckLater, NextCheckAt: settled}
		}
		if ev, ok := storedErrorSettled(in); ok {
			detail := storedErrorDetail(ev)
			if in.FailStoredErrors && in.StoredErrorsFinal {
				// Opt-in: the service may retry under a new operation. The
				// risk is a provider whose stored error hides an object its
				// lookup cannot see; the audit is the safety net. Only a
				// provider that declares its stored errors final qualifies:
				// lookups that find nothing now say nothing of an object
				// the provider creates later. Stripe documents exactly that
				// for a stored 500: "treat the result of a 500 request as
				// indeterminate", charges may be rolled forward during the
				// incident's remediation, the cached 500 unchanged
				// (https://docs.stripe.com/error-low-level, Server errors).
				// Without the declaration a person decides (review below).
				return decision{Action: actRecordFailed, Code: ledger.ReviewCodeStoredError, Reason: ReasonNothingMoved + ": " + detail}
			}
			// A person decides, at once rather than after the window:
			// read-only lookups continue in review.
			return decision{Action: actReview, Code: ledger.ReviewCodeStoredError, Reason: ReasonStoredError + ": " + detail, NextCheckAt: later}
		}
		if inside && in.KeyAnswered {
			// The provider stored an error under this key and replays it:
			// a resend cannot change the answer, and each one counts
			// against the provider's limits. Keep looking until the
			// evidence is complete or the window passes.
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
		return decision{Action: actReview, Code: ledger.ReviewCodeWindowPassed, Reason: ReasonWindowPassed, NextCheckAt: later}
	}
	return decision{Action: actCheckLater, NextCheckAt: later, Reason: fmt.Sprintf("unrecognised lookup state %q", in.Lookup.State)}
}

// reviewDecision is what a read-only lookup of an operation in review means.
type reviewDecision struct {
	// Settle, when set, settles the operation with that outcome (a
	// payonce-reconciler resolution); otherwise it stays in review.
	Settle ledger.ResolutionOutcome
	// ReviewCode and ReviewReason, when set, replace the operation's.
	ReviewCode   ledger.ReviewCode
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
		return reviewDecision{ReviewCode: ledger.ReviewCodeContradicted, ReviewReason: ReasonContradicted, StopChecking: true}
	case lr.State == LookupSucceeded:
		return reviewDecision{Settle: ledger.ResolveSucceeded}
	case lr.State == LookupFailed:
		return reviewDecision{Settle: ledger.ResolveFailed}
	case lr.State == LookupMultiple:
		return reviewDecision{ReviewCode: ledger.ReviewCodeDuplicated, ReviewReason: ReasonDuplicated, StopChecking: true}
	default:
		return reviewDecision{}
	}
}

// lookupAndDecide asks the provider what became of an unknown operation and
// applies the decision table. done reports that the call is over. When
// mayResend is false (the call used its attempts), a resend is left to
// background work.
func (c *Client) lookupAndDecide(ctx context.Context, r *run, mayResend bool) (done bool, res Result, err error) {
	h, herr := c.history(ctx, r)
	if herr != nil {
		// Without the attempts the lag, the pacing and the earlier
		// generations are unknown: deciding anyway could resend too early.
		res, err := c.release(ctx, r, ErrOutcomeUnknown)
		return true, res, err
	}
	lctx, span := c.tel.startLookup(ctx, r.op.Kind)
	lr, lerr := c.lookup(lctx, h.query)
	if lerr != nil {
		c.lookupFailed(ctx, r.op.ID, lerr)
	}
	now := c.cfg.Now()
	in := decideInput{
		Op: r.op, LastAttemptAt: h.lastEnd, Lookup: lr, LookupErr: lerr, Now: now,
		Margin: c.cfg.SafetyMargin, CheckAfter: c.checkAfter(r.op, now), ProcessingReviewAfter: c.cfg.ProcessingReviewAfter,
		KeyAnswered: h.keyAnswered, ProvesAbsence: c.info.LookupProvesAbsence, StoredError: h.storedError,
		FailStoredErrors: c.cfg.FailStoredErrors, StoredErrorsFinal: c.info.StoredErrorsFinal,
	}
	if r.sent == 0 {
		// The first resend of a call or a reconciler pass waits a growing
		// time after the operation's latest attempt, so that no operation
		// is sent more than a handful of times within its window, whatever
		// the faults and however often it is called or claimed. Resends
		// within one call are bounded by Retry.MaxAttempts and its backoff.
		in.ResendNotBefore = h.lastEnd.Add(c.resendDelay(r.op.Attempts, r.op.KeyTTL))
	}
	d := decide(in)
	span.end(ctx, lr, lerr, d.Action)
	if d.Action == actResend && !mayResend {
		res, err := c.release(ctx, r, ErrOutcomeUnknown)
		return true, res, err
	}
	event := lookupEvent(lr, lerr)
	if d.Action == actResend && c.http.breakerRefuses() {
		// The resend would be refused before it leaves: no attempt is
		// journaled (an outage spends no attempts); looked up again later.
		res, err := c.release(ctx, r, ErrProviderUnavailable)
		return true, res, err
	}
	if d.Action == actResend {
		if err := c.startAttempt(ctx, r, event); err != nil {
			res, err := c.leaseError(ctx, r, err)
			return true, res, err
		}
		return false, Result{}, nil
	}
	fp := ledger.FinishParams{ID: r.op.ID, Owner: r.owner, Now: now, From: r.op.Status, NextCheckAt: d.NextCheckAt,
		Events: []ledger.NewEvent{event}}
	if lerr == nil && lr.Contradiction == "" {
		fp.ProviderRef = lr.ProviderRef
		fp.Result = encodeResult(Outcome{ProviderRef: lr.ProviderRef, Code: lr.Code, DeclineCode: lr.DeclineCode, Message: lr.Message})
	}
	fp.To = d.status()
	if fp.To == ledger.StatusManualReview {
		fp.ReviewCode, fp.ReviewReason = d.Code, d.Reason
	}
	if d.Code == ledger.ReviewCodeStoredError {
		// The evidence stays in the audit trail beside the lookup that
		// completed it, whatever an operator later writes in the reason.
		fp.Events = append(fp.Events, ledger.NewEvent{Kind: ledger.EventNote, Detail: truncate(d.Reason, 2000)})
		if fp.To == ledger.StatusFailed {
			fp.Result = encodeResult(Outcome{Code: CodeStoredError, Message: d.Reason, HTTPStatus: h.storedError.HTTPStatus})
		}
	}
	rctx, rcancel := recordCtx(ctx)
	defer rcancel()
	op, err := c.cfg.Store.Finish(rctx, fp)
	if settled, ok := c.settledMeanwhile(rctx, r, err); ok {
		return true, ResultOf(settled), errorOf(settled, c.cfg.Provider.Name())
	}
	if err != nil {
		return true, ResultOf(r.op), &recordError{what: "the lookup's decision", err: err}
	}
	c.recorded(ctx, fp.From, op)
	r.op = op
	if fp.To == ledger.StatusUnknown {
		return true, ResultOf(op), ErrOutcomeUnknown
	}
	return true, ResultOf(op), errorOf(op, c.cfg.Provider.Name())
}

// history is what a lookup needs from the operation's past: the query
// (with every earlier key generation), when the latest attempt ended, and
// whether the provider replayed a stored error under the current key.
type history struct {
	query       LookupQuery
	lastEnd     time.Time
	keyAnswered bool
	// storedError is read only when keyAnswered and the lookup proves
	// absence: otherwise nothing would count.
	storedError storedErrorEvidence
}

// history reads the operation's attempts (and, after a resend under a new
// key generation, its resolution events) from the ledger.
func (c *Client) history(ctx context.Context, r *run) (history, error) {
	op := r.op
	_, atts, err := c.cfg.Store.Get(ctx, op.ID)
	if err != nil {
		return history{}, fmt.Errorf("payonce: reading the attempts of %s: %w", op.ID, err)
	}
	h := history{keyAnswered: r.keyAnswered, lastEnd: r.lastAttemptEnd}
	for _, a := range atts {
		if a.Key == op.Key && answeredByReplay(a.Replayed, a.Outcome) {
			h.keyAnswered = true
			h.storedError.HTTPStatus, h.storedError.Error = a.HTTPStatus, a.Error
		}
	}
	if h.lastEnd.IsZero() {
		h.lastEnd = c.lastAttemptEnd(atts)
	}
	if h.lastEnd.IsZero() && !op.WindowStart.IsZero() {
		// Attempts unknown but the window open: assume the latest possible
		// end, so that the lag protects the longest.
		h.lastEnd = c.cfg.Now()
	}
	if h.keyAnswered && c.info.LookupProvesAbsence {
		evs, err := c.cfg.Store.Events(ctx, op.ID)
		if err != nil {
			return history{}, fmt.Errorf("payonce: reading the lookups of %s: %w", op.ID, err)
		}
		h.storedError = storedErrorHistory(h.storedError, evs, h.lastEnd)
	}
	h.query, err = c.lookupQuery(ctx, op, r.req, atts)
	return h, err
}

// storedErrorHistory counts the recorded lookups that are evidence that a
// replayed stored error moved nothing: "not found" answers recorded once
// their own lag had passed since lastEnd, the end of the operation's latest
// attempt. The lookup audit entries (EventLookup, written in the same
// transaction as each lookup's decision) are the durable record; counting
// from lastEnd keeps an earlier key generation's lookups, and lookups made
// before the replayed attempt, out: only lookups after the current key's
// last answer speak for it. A lookup that saw an object (processing, a
// result, a contradiction) restarts the count: the provider has something,
// and a later "not found" would contradict it rather than prove absence. A
// failed lookup proves nothing either way and is skipped.
func storedErrorHistory(ev storedErrorEvidence, evs []ledger.Event, lastEnd time.Time) storedErrorEvidence {
	ev.NotFound, ev.First, ev.Last = 0, time.Time{}, time.Time{}
	for _, e := range evs {
		if e.Kind != ledger.EventLookup || e.At.Before(lastEnd) {
			continue
		}
		state, lag, ok := parseLookupEvent(e.Detail)
		switch {
		case !ok:
			continue // a failed lookup
		case state != LookupNotFound:
			ev.NotFound, ev.First, ev.Last = 0, time.Time{}, time.Time{}
		case e.At.Before(lastEnd.Add(lag)):
			continue // inside its lag: proves nothing yet
		default:
			if ev.NotFound == 0 {
				ev.First = e.At
			}
			ev.NotFound++
			ev.Last = e.At
		}
	}
	return ev
}

// parseLookupEvent reads back what lookupEvent wrote: the state and the lag
// of a lookup that answered; ok is false for a failed lookup, or an entry
// whose lag cannot be read (it then proves nothing). A lookup that named a
// contradiction reads as the state "contradicted": it saw an object.
func parseLookupEvent(detail string) (state LookupState, lag time.Duration, ok bool) {
	rest, found := strings.CutPrefix(detail, "state=")
	if !found {
		return "", 0, false
	}
	if strings.Contains(rest, " contradiction=") {
		return LookupState("contradicted"), 0, true
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", 0, false
	}
	state = LookupState(fields[0])
	// lookupEvent writes the lag last (before a contradiction): the last
	// lag= field is its, whatever a provider's code held.
	if v, found := strings.CutPrefix(fields[len(fields)-1], "lag="); found && len(fields) > 1 {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return "", 0, false
		}
		lag = d
	}
	return state, lag, true
}

// answeredByReplay reports whether an attempt's answer makes the key's
// answer final: a stored error the provider replayed. A replayed success
// settles the operation anyway, and a not_sent attempt was not answered.
func answeredByReplay(replayed bool, class ledger.OutcomeClass) bool {
	return replayed && class != ledger.OutcomeSuccess && class != ledger.OutcomeNotSent
}

// lastAttemptEnd is when the latest attempt that may have reached the
// provider ended, zero when none may have: an eventually consistent
// lookup's lag counts from there.
func (c *Client) lastAttemptEnd(atts []ledger.Attempt) time.Time {
	for i := len(atts) - 1; i >= 0; i-- {
		a := atts[i]
		if !a.MayHaveReached {
			continue // provably never left: nothing of it can show up late
		}
		if !a.FinishedAt.IsZero() {
			return a.FinishedAt
		}
		// Never finished (the process died, or its outcome was lost): it
		// may have been transmitted until its timeout.
		return a.StartedAt.Add(c.cfg.AttemptTimeout)
	}
	return time.Time{}
}

// lookup asks the provider, read-only and within one AttemptTimeout, what
// became of the operation q describes.
func (c *Client) lookup(ctx context.Context, q LookupQuery) (LookupResult, error) {
	lctx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	return c.cfg.Provider.Lookup(lctx, lookupDoer{c: c.http.read, opID: q.OperationID}, q)
}

// lookupQuery is the lookup of op: its current key and reference, and the
// keys and references of its earlier key generations, so that the lookup
// sees every object any generation created (rule 1 of a resend: a new key
// must not hide an earlier key's payment). atts are the operation's
// attempts when the caller has read them; nil reads them when needed.
func (c *Client) lookupQuery(ctx context.Context, op ledger.Operation, req Request, atts []ledger.Attempt) (LookupQuery, error) {
	q := LookupQuery{OperationID: op.ID, Key: op.Key, Request: req, ProviderRef: op.ProviderRef,
		Since: op.WindowStart, Generation: op.Generation}
	if op.Generation == 0 {
		return q, nil
	}
	id := Identity{Provider: op.Provider, Kind: Kind(op.Kind), References: op.References}
	for g := 0; g < op.Generation; g++ {
		id.Generation = g
		k, err := id.Key()
		if err != nil {
			return q, fmt.Errorf("payonce: the recorded identity of %s is invalid: %w", op.ID, err)
		}
		q.EarlierKeys = append(q.EarlierKeys, k)
	}
	evs, err := c.cfg.Store.Events(ctx, op.ID)
	if err != nil {
		return q, fmt.Errorf("payonce: reading the history of %s: %w", op.ID, err)
	}
	var resolutions []string
	for _, e := range evs {
		if e.Kind == ledger.EventResolution {
			resolutions = append(resolutions, e.Detail)
		}
	}
	q.EarlierRefs = ledgerdriver.PreviousRefs(resolutions)
	if atts == nil {
		if _, atts, err = c.cfg.Store.Get(ctx, op.ID); err != nil {
			return q, fmt.Errorf("payonce: reading the attempts of %s: %w", op.ID, err)
		}
	}
	// A list by creation time must start at the first generation's first
	// attempt, not at the current window.
	if len(atts) > 0 && (q.Since.IsZero() || atts[0].StartedAt.Before(q.Since)) {
		q.Since = atts[0].StartedAt
	}
	return q, nil
}

// lookupInReview looks up an operation in review, read-only. A definitive
// answer settles it with an audit entry; anything else keeps it in review
// with a later check. It never sends a request that moves money (rule 5).
func (c *Client) lookupInReview(ctx context.Context, op ledger.Operation, owner string, req Request) (ledger.Operation, error) {
	now := c.cfg.Now()
	fp := ledger.FinishParams{To: ledger.StatusManualReview, ReviewCode: op.ReviewCode, ReviewReason: op.ReviewReason,
		NextCheckAt: now.Add(c.checkAfter(op, now))}
	q, qerr := c.lookupQuery(ctx, op, req, nil)
	if qerr != nil {
		fp.Events = []ledger.NewEvent{lookupEvent(LookupResult{}, qerr)}
		return c.finishQuiet(ctx, op, owner, fp)
	}
	lctx, span := c.tel.startLookup(ctx, op.Kind)
	lr, lerr := c.lookup(lctx, q)
	now = c.cfg.Now()
	fp.NextCheckAt = now.Add(c.checkAfter(op, now))
	fp.Events = []ledger.NewEvent{lookupEvent(lr, lerr)}
	d := decideInReview(lr, lerr)
	span.end(ctx, lr, lerr, d.action())
	if d.ReviewReason != "" {
		fp.ReviewCode, fp.ReviewReason = d.ReviewCode, d.ReviewReason
	}
	if d.StopChecking {
		fp.NextCheckAt = time.Time{}
	}
	if d.Settle != "" {
		fp.To = ledger.StatusSucceeded
		if d.Settle == ledger.ResolveFailed {
			fp.To = ledger.StatusFailed
		}
		fp.ProviderRef = lr.ProviderRef
		fp.Result = encodeResult(Outcome{ProviderRef: lr.ProviderRef, Code: lr.Code, DeclineCode: lr.DeclineCode, Message: lr.Message})
		fp.Resolution = &ledger.Resolution{Actor: "payonce-reconciler", Outcome: d.Settle, At: now,
			Note: fmt.Sprintf("settled automatically: %s reports the operation %s", c.cfg.Provider.Name(), lr.State)}
	}
	return c.finishQuiet(ctx, op, owner, fp)
}

// lookupFailed logs a failed status lookup: at Warn, since the provider
// or the network is failing, unless the lookup failed because the caller
// stopped (a deadline, a shutdown), which is no fault at all.
func (c *Client) lookupFailed(ctx context.Context, opID string, err error) {
	level := slog.LevelWarn
	if ctx.Err() != nil {
		level = slog.LevelDebug
	}
	c.cfg.Logger.Log(ctx, level, "payonce: status lookup failed", semconv.LogKeyOperation, opID, "error", err)
}

// lookupEvent is the audit entry of one status lookup.
func lookupEvent(lr LookupResult, lerr error) ledger.NewEvent {
	if lerr != nil {
		return ledger.NewEvent{Kind: ledger.EventLookup, Detail: truncate("lookup failed: "+lerr.Error(), 2000)}
	}
	d := "state=" + string(lr.State)
	if lr.ProviderRef != "" {
		d += " ref=" + lr.ProviderRef
	}
	if len(lr.Refs) > 1 {
		d += fmt.Sprintf(" objects=%v", lr.Refs)
	}
	if lr.Code != "" {
		d += " code=" + lr.Code
	}
	if lr.Lag > 0 {
		d += " lag=" + lr.Lag.String()
	}
	if lr.Contradiction != "" {
		d += " contradiction=" + strconv.Quote(lr.Contradiction)
	}
	return ledger.NewEvent{Kind: ledger.EventLookup, Detail: truncate(d, 2000)}
}
