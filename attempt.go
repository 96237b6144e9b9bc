package payonce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
)

// The attempt loop: one operation, leased by a call (Client.do) or by
// background work (Client.settle), driven towards a terminal state. This
// file journals, sends and records, and decideSend says what the answer to
// a send means; the status query of an unknown operation and what its
// answer decides are in status.go, the retry and backoff policy in
// retry.go.

// run is the state of one operation while a call or worker holds its lease.
type run struct {
	op    ledger.Operation
	att   *ledger.Attempt // the journaled attempt about to be sent, if any
	owner string
	req   Request
	// lastAttemptEnd is when the operation's latest attempt ended: its last
	// transmission's answer or error, or its timeout. An eventually
	// consistent lookup's lag counts from there, so a slow attempt does not
	// shorten the time the provider's search is given.
	lastAttemptEnd time.Time
	// keyAnswered reports that the provider replayed a stored error for an
	// attempt under the current key: every resend under it would get the
	// same answer, so only lookups can settle the operation.
	keyAnswered bool
	sent        int // attempts sent in this run
	// limit caps the attempts of this run; zero means Retry.MaxAttempts.
	limit int
	// windowOpenBefore reports that an earlier attempt may already have
	// reached the provider when the current attempt was journaled.
	windowOpenBefore bool
}

func (r *run) maxAttempts(c *Client) int {
	if r.limit > 0 {
		return r.limit
	}
	return c.cfg.Retry.MaxAttempts
}

// recordCtx gives ledger writes that follow a send their own deadline: the
// outcome of a request that left must be recorded even when the caller's
// context has just ended.
func recordCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
}

// drive moves a leased operation towards a terminal state: send a pending
// one, look up an unknown one and follow the decision table, retrying within
// the policy. It returns when the operation is terminal, or releases the
// lease with a next check time for background work.
func (c *Client) drive(ctx context.Context, r *run) (Result, error) {
	for {
		switch r.op.Status {
		case ledger.StatusPending, ledger.StatusInFlight:
			if r.att == nil {
				if r.sent >= r.maxAttempts(c) || ctx.Err() != nil {
					return c.release(ctx, r, ErrProviderUnavailable)
				}
				if c.http.breakerRefuses() {
					// The breaker would refuse the request before it
					// leaves: nothing is journaled, so an outage does not
					// spend the operation's attempts on requests that never
					// existed, and the operation stays pending for
					// background work. (A breaker that opens between this
					// check and the send still records the attempt
					// not_sent.)
					return c.release(ctx, r, ErrProviderUnavailable)
				}
				if err := c.startAttempt(ctx, r); err != nil {
					return c.leaseError(ctx, r, err)
				}
			}
			if done, err := c.sendAttempt(ctx, r); done {
				return ResultOf(r.op), err
			}
		case ledger.StatusUnknown:
			if ctx.Err() != nil {
				return c.release(ctx, r, ErrOutcomeUnknown)
			}
			done, res, err := c.lookupAndDecide(ctx, r, r.sent < r.maxAttempts(c))
			if done {
				return res, err
			}
		default:
			return ResultOf(r.op), errorOf(r.op, c.cfg.Provider.Name())
		}
	}
}

// startAttempt journals the next attempt (rule 2: before it is sent).
func (c *Client) startAttempt(ctx context.Context, r *run, events ...ledger.NewEvent) error {
	r.windowOpenBefore = !r.op.WindowStart.IsZero()
	now := c.cfg.Now()
	op, att, err := c.cfg.Store.StartAttempt(ctx, ledger.StartAttemptParams{
		ID: r.op.ID, Owner: r.owner, Now: now, LeaseUntil: now.Add(c.cfg.LeaseDuration), Events: events,
	})
	if err != nil {
		return err
	}
	c.recorded(ctx, r.op.Status, op)
	r.op, r.att = op, &att
	return nil
}

// sendAttempt sends the journaled attempt and records its outcome with the
// operation's transition (decideSend). After a not-sent or maybe-sent
// outcome it waits the backoff, keeping the lease, and leaves r ready for
// the next step. done reports that the call is over (with err as its error).
func (c *Client) sendAttempt(ctx context.Context, r *run) (done bool, err error) {
	att := r.att
	r.att = nil
	r.sent++
	// The attempt's span is in the context the adapter builds its request
	// with: otelhttp on the transport makes the HTTP span its child and
	// sends its traceparent to the provider.
	actx, span := c.tel.startAttempt(ctx, r.op.Kind, att.Number)
	out, errText := c.sendJournaled(actx, r, att)
	defer func() { span.end(out, errText) }()
	span.sent(ctx, out.Class)
	if out.Class.MayHaveReached() {
		// Only a request that may have reached the provider can make an
		// object appear late in an eventually consistent search.
		r.lastAttemptEnd = c.cfg.Now()
	}
	if answeredByReplay(out.Replayed, out.Class) {
		r.keyAnswered = true
	}
	fp := c.sendFinish(r, att, out, errText)
	rctx, cancel := recordCtx(ctx)
	defer cancel()
	fp.Now = c.cfg.Now()
	op, err := c.cfg.Store.Finish(rctx, fp)
	if settled, ok := c.settledMeanwhile(rctx, r, err); ok {
		return true, errorOf(settled, c.cfg.Provider.Name())
	}
	if err != nil {
		// The request may have moved money and the ledger does not say so
		// yet. The lease will expire, the operation will read as unknown,
		// and reconciliation will look it up: never a blind resend.
		// Warn, not Error: the design expects a ledger to fail now and
		// then, and recovers from it by itself (the lookup above).
		c.cfg.Logger.Warn("payonce: recording an attempt outcome failed", semconv.LogKeyOperation, r.op.ID, "attempt", att.Number, "class", string(out.Class), "error", err)
		return true, &recordError{what: "the attempt's outcome", err: err}
	}
	c.recorded(actx, fp.From, op)
	r.op = op
	if op.Status.Terminal() {
		return true, errorOf(op, c.cfg.Provider.Name())
	}
	if !fp.KeepLease {
		// Accepted but still processing at the provider: background work
		// looks it up later.
		return true, ErrOutcomeUnknown
	}
	c.cfg.Logger.Debug("payonce: attempt recorded", semconv.LogKeyOperation, op.ID, "kind", op.Kind, "attempt", att.Number, "class", string(out.Class), "status", string(op.Status))
	span.end(out, errText) // the backoff is not part of the attempt
	c.pauseBeforeNext(ctx, r, out.RetryAfter)
	return false, nil
}

// sendJournaled transmits the journaled attempt att, unless the key window
// or the lease no longer allows it; a refused attempt is not_sent.
func (c *Client) sendJournaled(ctx context.Context, r *run, att *ledger.Attempt) (Outcome, string) {
	now := c.cfg.Now()
	switch {
	case r.windowOpenBefore && !insideWindow(r.op, now, c.cfg.SafetyMargin):
		// The window was checked before the attempt was journaled; a slow
		// ledger write may have used up the margin since. Rule 5: nothing
		// is sent outside the window, journal or not.
		return Outcome{Class: ledger.OutcomeNotSent}, "not sent: the key window closed while the attempt was being journaled"
	case !now.Add(c.cfg.AttemptTimeout).Before(r.op.LeaseExpiresAt):
		// Rule 3: the lease must outlive the attempt. A journal write that
		// waited (on a lock, a slow disk) can return a lease that ends
		// before the attempt could; another worker could then take the
		// operation over and send while this request is still out.
		return Outcome{Class: ledger.OutcomeNotSent}, "not sent: the lease would end before the attempt could (the journal write took " + now.Sub(att.StartedAt).String() + ")"
	case r.windowOpenBefore:
		c.tel.resend(ctx, r.op.Kind, r.op.KeyExpiresAt.Add(-c.cfg.SafetyMargin).Sub(now))
	}
	return c.transmit(ctx, SendRequest{OperationID: r.op.ID, Key: att.Key, Request: r.req})
}

// sendFinish is the ledger transition that records the answer out to the
// attempt att, as decideSend rules.
func (c *Client) sendFinish(r *run, att *ledger.Attempt, out Outcome, errText string) ledger.FinishParams {
	d := decideSend(out, r.windowOpenBefore)
	fp := ledger.FinishParams{
		ID: r.op.ID, Owner: r.owner, From: ledger.StatusInFlight, To: d.To, ReviewCode: d.ReviewCode, ReviewReason: d.ReviewReason,
		Attempt: &ledger.AttemptOutcome{
			Number: att.Number, Class: out.Class, HTTPStatus: out.HTTPStatus,
			ProviderRequestID: out.RequestID, Error: truncate(errText, 2000), Replayed: out.Replayed,
		},
		ProviderRef: out.ProviderRef, Result: encodeResult(out),
		KeepLease: !d.Release,
	}
	if d.Note != "" {
		fp.Events = []ledger.NewEvent{{Kind: ledger.EventNote, Detail: truncate(d.Note, 2000)}}
	}
	if d.CheckLater {
		fp.NextCheckAt = c.cfg.Now().Add(c.cfg.CheckInterval)
	}
	return fp
}

// sendDecision is what the answer to one send means for the operation.
type sendDecision struct {
	// To is the operation's next status.
	To ledger.Status
	// ReviewCode and ReviewReason are set when To is manual_review.
	ReviewCode   ledger.ReviewCode
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
		return sendDecision{To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeContradicted, ReviewReason: ReasonContradicted, Release: true,
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
		return sendDecision{To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeKeyMismatch, ReviewReason: ReasonKeyMismatch}
	default: // maybe_sent, key_in_use
		return sendDecision{To: ledger.StatusUnknown}
	}
}

// release gives up the lease of an operation the call could not finish,
// scheduling background work, and reports why.
func (c *Client) release(ctx context.Context, r *run, why error) (Result, error) {
	rctx, cancel := recordCtx(ctx)
	defer cancel()
	now := c.cfg.Now()
	next := now.Add(c.cfg.CheckInterval)
	if r.op.Status == ledger.StatusPending {
		next = now.Add(c.cfg.Retry.backoff(r.sent, 0, c.cfg.Random))
	}
	op, err := c.cfg.Store.Finish(rctx, ledger.FinishParams{
		ID: r.op.ID, Owner: r.owner, Now: now, From: r.op.Status, To: r.op.Status, NextCheckAt: next,
	})
	if err == nil {
		r.op = op
	}
	res := ResultOf(r.op)
	return res, why
}

// settledMeanwhile reports whether a write that lost the lease or found the
// state changed (err) lost it because the operation was settled meanwhile:
// a provider's webhook settles an operation whatever lease it is under, so
// the answer this call was about to record may arrive after the
// provider's own account of it. The ledger's settled state then answers the
// call, as a repeat of the call would.
func (c *Client) settledMeanwhile(ctx context.Context, r *run, err error) (ledger.Operation, bool) {
	if err == nil || !(errors.Is(err, ledger.ErrLeaseLost) || errors.Is(err, ledger.ErrStateConflict)) {
		return ledger.Operation{}, false
	}
	op, _, gerr := c.cfg.Store.Get(ctx, r.op.ID)
	if gerr != nil || !op.Status.Terminal() {
		return ledger.Operation{}, false
	}
	r.op = op
	return op, true
}

// leaseError reports a lost lease or changed state: another worker took
// the operation over.
func (c *Client) leaseError(ctx context.Context, r *run, err error) (Result, error) {
	rctx, cancel := recordCtx(ctx)
	defer cancel()
	if op, ok := c.settledMeanwhile(rctx, r, err); ok {
		return ResultOf(op), errorOf(op, c.cfg.Provider.Name())
	}
	res := ResultOf(r.op)
	if errors.Is(err, ledger.ErrLeaseLost) || errors.Is(err, ledger.ErrStateConflict) {
		res.Status = ResultInProgress
		return res, fmt.Errorf("%w: %w", ErrInProgress, err)
	}
	return res, &recordError{what: "the next attempt", err: err}
}

// settle drives one operation claimed by background work. It returns the
// operation as it stands afterwards; the error reports only real failures
// (the ledger, a corrupt record), not outcomes such as "still unknown".
func (c *Client) settle(ctx context.Context, op ledger.Operation, owner string) (ledger.Operation, error) {
	req, err := ParseRequest(op.Request)
	if err != nil {
		// The ledger holds a request this version cannot read: sending a
		// guess could move the wrong amount, so a person must look.
		return c.finishQuiet(ctx, op, owner, ledger.FinishParams{To: ledger.StatusManualReview,
			ReviewCode: ledger.ReviewCodeRequestUnreadable, ReviewReason: reasonUnreadable + ": " + truncate(err.Error(), 500)})
	}
	if op.Status == ledger.StatusManualReview {
		return c.lookupInReview(ctx, op, owner, req)
	}
	// One attempt per pass: nobody waits for background work, and the
	// resend pacing between passes (resendDelay) then bounds how often an
	// operation is sent, whatever the faults.
	r := &run{op: op, owner: owner, req: req, limit: 1}
	_, err = c.drive(ctx, r)
	if isOutcome(err) {
		err = nil
	}
	return r.op, err
}

// isOutcome reports whether err only describes where an operation stands
// (declined, unknown, in review...), as opposed to a failure to act.
func isOutcome(err error) bool {
	if err == nil {
		return true
	}
	if errors.Is(err, ErrDeclined) || errors.Is(err, ErrManualReview) || errors.Is(err, ErrProviderUnavailable) {
		return true
	}
	var re *recordError
	return errors.Is(err, ErrOutcomeUnknown) && !errors.As(err, &re)
}

// finishQuiet records a transition from op's current status.
func (c *Client) finishQuiet(ctx context.Context, op ledger.Operation, owner string, fp ledger.FinishParams) (ledger.Operation, error) {
	fp.ID, fp.Owner, fp.From = op.ID, owner, op.Status
	if fp.Now.IsZero() {
		fp.Now = c.cfg.Now()
	}
	rctx, cancel := recordCtx(ctx)
	defer cancel()
	got, err := c.cfg.Store.Finish(rctx, fp)
	if err != nil {
		return op, err
	}
	c.recorded(ctx, op.Status, got)
	return got, nil
}

// recorded follows a transition the ledger has just committed, from status
// from to op: it is counted, logged (entering review at Warn, since a
// person must act; every other change at Debug) and handed to the hooks.
// Every caller has given up the lease when the change is terminal or a
// review, so a hook never holds one.
func (c *Client) recorded(ctx context.Context, from ledger.Status, op ledger.Operation) {
	c.tel.moved(ctx, op.Kind, from, op.Status, op.ReviewCode)
	if from == op.Status {
		return
	}
	if op.Status == ledger.StatusManualReview {
		c.cfg.Logger.Warn("payonce: operation sent to manual review", semconv.LogKeyOperation, op.ID, "kind", op.Kind,
			"from", string(from), "reason", op.ReviewReason, "reason_code", string(op.ReviewCode))
	} else {
		c.cfg.Logger.Debug("payonce: operation state changed", semconv.LogKeyOperation, op.ID, "kind", op.Kind,
			"from", string(from), "to", string(op.Status))
	}
	c.cfg.Hooks.fire(ctx, c.cfg.Logger, from, op)
}
