package payonce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
)

// The attempt loop: one operation, leased by a call (Client.do) or by
// background work (Client.settle), driven towards a terminal state. What
// each answer and each lookup means is decided in decide.go; this file
// journals, sends, looks up and records.

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
	// known is the result the run last wrote with its decoding, for the
	// Result the call returns (resultOfKnown).
	known knownResult
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
				if err := c.startAttempt(ctx, r); err != nil {
					return c.leaseError(ctx, r, err)
				}
			}
			if done, err := c.sendAttempt(ctx, r); done {
				return resultOfKnown(r.op, &r.known), err
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
			return resultOf(r.op), errorOf(r.op, c.cfg.Provider.Name())
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
	if s := storedOf(out); s.roundTrips() {
		r.known = knownResult{raw: fp.Result, s: s}
	}
	if op.Status.Terminal() {
		return true, errorOf(op, c.cfg.Provider.Name())
	}
	if !fp.KeepLease {
		// Accepted but still processing at the provider: background work
		// looks it up later.
		return true, ErrOutcomeUnknown
	}
	if debugOn(c.cfg.Logger) {
		c.cfg.Logger.Debug("payonce: attempt recorded", semconv.LogKeyOperation, op.ID, "kind", op.Kind, "attempt", att.Number, "class", string(out.Class), "status", string(op.Status))
	}
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
		ID: r.op.ID, Owner: r.owner, From: ledger.StatusInFlight, To: d.To, ReviewReason: d.ReviewReason,
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

// pauseBeforeNext waits the backoff after a not-sent or maybe-sent attempt,
// keeping the lease, before the run sends again or looks up. A provider
// asking for a longer wait than the call may spend (retryAfter), or a
// context that ends, leaves the rest to background work.
func (c *Client) pauseBeforeNext(ctx context.Context, r *run, retryAfter time.Duration) {
	wait := c.cfg.Retry.Backoff(r.sent-1, retryAfter, c.cfg.Random)
	if r.sent >= r.maxAttempts(c) {
		// No attempt left in this run: look up at once, then leave the
		// rest to background work.
		return
	}
	if retryAfter > c.cfg.Retry.retryAfterLimit() || sleep(ctx, wait) != nil {
		r.sent = r.maxAttempts(c)
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
		KeyAnswered: h.keyAnswered,
	}
	if r.sent == 0 {
		// The first resend of a call or a reconciler pass waits a growing
		// time after the operation's latest attempt, so that no operation
		// is sent more than a handful of times within its window, whatever
		// the faults and however often it is called or claimed. Resends
		// within one call are bounded by Retry.MaxAttempts and its backoff.
		in.ResendNotBefore = h.lastEnd.Add(c.resendDelay(r.op.Attempts))
	}
	d := decide(in)
	span.end(ctx, lr, lerr, d.Action)
	if d.Action == actResend && !mayResend {
		res, err := c.release(ctx, r, ErrOutcomeUnknown)
		return true, res, err
	}
	event := lookupEvent(lr, lerr)
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
		fp.ReviewReason = d.Reason
	}
	rctx, rcancel := recordCtx(ctx)
	defer rcancel()
	op, err := c.cfg.Store.Finish(rctx, fp)
	if settled, ok := c.settledMeanwhile(rctx, r, err); ok {
		return true, resultOf(settled), errorOf(settled, c.cfg.Provider.Name())
	}
	if err != nil {
		return true, resultOf(r.op), &recordError{what: "the lookup's decision", err: err}
	}
	c.recorded(ctx, fp.From, op)
	r.op = op
	if fp.To == ledger.StatusUnknown {
		return true, resultOf(op), ErrOutcomeUnknown
	}
	return true, resultOf(op), errorOf(op, c.cfg.Provider.Name())
}

// history is what a lookup needs from the operation's past: the query
// (with every earlier key generation), when the latest attempt ended, and
// whether the provider replayed a stored error under the current key.
type history struct {
	query       LookupQuery
	lastEnd     time.Time
	keyAnswered bool
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
	h.query, err = c.lookupQuery(ctx, op, r.req, atts)
	return h, err
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
	q.EarlierRefs = ledger.PreviousRefs(resolutions)
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

// resendDelay is the least time between the end of an operation's latest
// attempt and a resend that starts a new call or pass, after n attempts:
// CheckInterval, growing fourfold with every attempt, capped at a quarter
// of the key TTL (but never below CheckInterval). Within a 24 h window and a
// 30 s interval that allows about eight such resends.
func (c *Client) resendDelay(n int) time.Duration {
	ceiling := max(c.cfg.CheckInterval, c.info.KeyTTL/4)
	d := c.cfg.CheckInterval
	for i := 1; i < n && d < ceiling; i++ {
		d *= 4
	}
	return min(d, ceiling)
}

// release gives up the lease of an operation the call could not finish,
// scheduling background work, and reports why.
func (c *Client) release(ctx context.Context, r *run, why error) (Result, error) {
	rctx, cancel := recordCtx(ctx)
	defer cancel()
	now := c.cfg.Now()
	next := now.Add(c.cfg.CheckInterval)
	if r.op.Status == ledger.StatusPending {
		next = now.Add(c.cfg.Retry.Backoff(r.sent, 0, c.cfg.Random))
	}
	op, err := c.cfg.Store.Finish(rctx, ledger.FinishParams{
		ID: r.op.ID, Owner: r.owner, Now: now, From: r.op.Status, To: r.op.Status, NextCheckAt: next,
	})
	if err == nil {
		r.op = op
	}
	res := resultOf(r.op)
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
		return resultOf(op), errorOf(op, c.cfg.Provider.Name())
	}
	res := resultOf(r.op)
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
			ReviewReason: reasonUnreadable + ": " + truncate(err.Error(), 500)})
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

// lookupInReview looks up an operation in review, read-only. A definitive
// answer settles it with an audit entry; anything else keeps it in review
// with a later check. It never sends a request that moves money (rule 5).
func (c *Client) lookupInReview(ctx context.Context, op ledger.Operation, owner string, req Request) (ledger.Operation, error) {
	now := c.cfg.Now()
	fp := ledger.FinishParams{To: ledger.StatusManualReview, ReviewReason: op.ReviewReason,
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
		fp.ReviewReason = d.ReviewReason
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
	c.tel.moved(ctx, op.Kind, from, op.Status, op.ReviewReason)
	if from == op.Status {
		return
	}
	if op.Status == ledger.StatusManualReview {
		c.cfg.Logger.Warn("payonce: operation sent to manual review", semconv.LogKeyOperation, op.ID, "kind", op.Kind,
			"from", string(from), "reason", op.ReviewReason, "reason_code", ReviewReasonCode(op.ReviewReason))
	} else if debugOn(c.cfg.Logger) {
		c.cfg.Logger.Debug("payonce: operation state changed", semconv.LogKeyOperation, op.ID, "kind", op.Kind,
			"from", string(from), "to", string(op.Status))
	}
	c.cfg.Hooks.fire(ctx, c.cfg.Logger, from, op)
}

// debugOn reports whether log would write a Debug record, as Logger.Debug
// asks its handler (with context.Background()). The call sites on the
// path of every call test it first: the arguments of a record are boxed
// into a slice before Debug can look, which costs allocations on every
// call when Debug is off, as it usually is.
func debugOn(log *slog.Logger) bool {
	return log.Enabled(context.Background(), slog.LevelDebug)
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

// checkAfter spaces lookups of an operation out as it ages: a tenth of its
// age since the window opened, at least CheckInterval, at most an hour.
// Stateless, so every replica computes the same schedule.
func (c *Client) checkAfter(op ledger.Operation, now time.Time) time.Duration {
	since := op.WindowStart
	if since.IsZero() {
		since = op.CreatedAt
	}
	d := now.Sub(since) / 10
	return min(max(d, c.cfg.CheckInterval), time.Hour)
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
