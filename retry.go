package payonce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/payonce/payonce/ledger"
)

// RetryPolicy bounds the attempt loop of one call. Zero fields take the
// defaults named on each.
type RetryPolicy struct {
	// MaxAttempts is the number of journaled attempts one call may make
	// before it leaves the operation to background reconciliation.
	// Defaults to 3.
	MaxAttempts int
	// BaseDelay is the first backoff step; each later step doubles, with full
	// jitter. Defaults to 200 ms.
	BaseDelay time.Duration
	// MaxDelay caps a backoff step. Defaults to 5 s.
	MaxDelay time.Duration
	// MaxRetryAfter caps how long a call waits when the provider asks it to
	// (Retry-After); a longer wait ends the call and leaves the operation to
	// background work. Defaults to 10 s.
	MaxRetryAfter time.Duration
	// DialRetries is how many times one attempt reconnects after a
	// connection that was never established (nothing was sent). Defaults to 2.
	DialRetries int
	// LookupRetries is how many times a status lookup request is retried
	// (reads are safe to repeat). Defaults to 2.
	LookupRetries int
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 3
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = 200 * time.Millisecond
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = 5 * time.Second
	}
	if p.MaxRetryAfter == 0 {
		p.MaxRetryAfter = 10 * time.Second
	}
	if p.DialRetries == 0 {
		p.DialRetries = 2
	}
	if p.LookupRetries == 0 {
		p.LookupRetries = 2
	}
	return p
}

func (p RetryPolicy) validate() error {
	switch {
	case p.MaxAttempts < 1 || p.MaxAttempts > 100:
		return invalid("Retry.MaxAttempts", "must be between 1 and 100 (0 for the default 3), got %d", p.MaxAttempts)
	case p.BaseDelay < 0 || p.MaxDelay < p.BaseDelay:
		return invalid("Retry.MaxDelay", "must be >= Retry.BaseDelay >= 0 (got base %v, max %v)", p.BaseDelay, p.MaxDelay)
	case p.MaxRetryAfter < 0:
		return invalid("Retry.MaxRetryAfter", "must be >= 0, got %v", p.MaxRetryAfter)
	case p.DialRetries < 0 || p.LookupRetries < 0:
		return invalid("Retry.DialRetries", "retry counts must be >= 0")
	}
	return nil
}

// Backoff returns the wait before retry number n (0-based): exponential with
// full jitter (a uniformly random wait up to BaseDelay*2^n, capped at
// MaxDelay), so that many clients recovering at once do not retry in step.
// A provider's Retry-After, when longer, wins. random returns [0, 1).
func (p RetryPolicy) Backoff(n int, retryAfter time.Duration, random func() float64) time.Duration {
	ceiling := p.MaxDelay
	if n < 30 {
		if step := p.BaseDelay << n; step > 0 && step < ceiling {
			ceiling = step
		}
	}
	wait := time.Duration(random() * float64(ceiling))
	if retryAfter > wait {
		wait = retryAfter
	}
	return wait
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

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
				if err := c.startAttempt(ctx, r); err != nil {
					return c.leaseError(r, err)
				}
			}
			if done, err := c.sendAttempt(ctx, r); done {
				return resultOf(r.op), err
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
	r.op, r.att = op, &att
	return nil
}

// sendAttempt sends the journaled attempt and records its outcome with the
// operation's transition. After a not-sent or maybe-sent outcome it waits
// the backoff, keeping the lease, and leaves r ready for the next step.
// done reports that the call is over (with err as its error).
func (c *Client) sendAttempt(ctx context.Context, r *run) (done bool, err error) {
	att := r.att
	r.att = nil
	r.sent++
	var (
		out     Outcome
		errText string
	)
	now := c.cfg.Now()
	switch {
	case r.windowOpenBefore && !InsideWindow(r.op, now, c.cfg.SafetyMargin):
		// The window was checked before the attempt was journaled; a slow
		// ledger write may have used up the margin since. Rule 5: nothing
		// is sent outside the window, journal or not.
		out, errText = Outcome{Class: ledger.OutcomeNotSent}, "not sent: the key window closed while the attempt was being journaled"
	case !now.Add(c.cfg.AttemptTimeout).Before(r.op.LeaseExpiresAt):
		// Rule 3: the lease must outlive the attempt. A journal write that
		// waited (on a lock, a slow disk) can return a lease that ends
		// before the attempt could; another worker could then take the
		// operation over and send while this request is still out.
		out, errText = Outcome{Class: ledger.OutcomeNotSent}, "not sent: the lease would end before the attempt could (the journal write took "+now.Sub(att.StartedAt).String()+")"
	default:
		out, errText = c.transmit(ctx, SendRequest{OperationID: r.op.ID, Key: att.Key, Request: r.req})
	}
	if out.Class.MayHaveReached() {
		// Only a request that may have reached the provider can make an
		// object appear late in an eventually consistent search.
		r.lastAttemptEnd = c.cfg.Now()
	}
	if answeredByReplay(out.Replayed, out.Class) {
		r.keyAnswered = true
	}

	fp := ledger.FinishParams{
		ID: r.op.ID, Owner: r.owner, From: ledger.StatusInFlight,
		Attempt: &ledger.AttemptOutcome{
			Number: att.Number, Class: out.Class, HTTPStatus: out.HTTPStatus,
			ProviderRequestID: out.RequestID, Error: truncate(errText, 2000), Replayed: out.Replayed,
		},
		ProviderRef: out.ProviderRef, Result: encodeResult(out),
		KeepLease: true,
	}
	switch {
	case out.Contradiction != "" && out.Class != ledger.OutcomeNotSent:
		// The answer names an object that is not this request's (another
		// operation, amount or currency): recording it as this operation's
		// success or failure would make the ledger disagree with the
		// provider, and a resend could move money a second time.
		fp.To = ledger.StatusManualReview
		fp.ReviewReason = ReasonContradicted
		fp.KeepLease = false
		fp.Events = []ledger.NewEvent{{Kind: ledger.EventNote, Detail: truncate("answer contradicts the request: "+out.Contradiction, 2000)}}
	case out.Class == ledger.OutcomeSuccess:
		if out.Processing {
			fp.To = ledger.StatusUnknown
			fp.KeepLease = false
			fp.NextCheckAt = c.cfg.Now().Add(c.cfg.CheckInterval)
		} else {
			fp.To = ledger.StatusSucceeded
		}
	case out.Class == ledger.OutcomeRefused:
		fp.To = ledger.StatusFailed
	case out.Class == ledger.OutcomeNotSent:
		fp.To = ledger.StatusPending
		if r.windowOpenBefore {
			// This attempt provably never left, but an earlier one may have
			// reached the provider: the operation is still "maybe sent".
			// Back to pending, the next call would send without a lookup and
			// without the key-window check, possibly after the provider
			// forgot the key.
			fp.To = ledger.StatusUnknown
		}
	case out.Class == ledger.OutcomeKeyMismatch:
		fp.To = ledger.StatusManualReview
		fp.ReviewReason = ReasonKeyMismatch
	default: // maybe_sent, key_in_use
		fp.To = ledger.StatusUnknown
	}
	rctx, cancel := recordCtx(ctx)
	defer cancel()
	fp.Now = c.cfg.Now()
	op, err := c.cfg.Store.Finish(rctx, fp)
	if err != nil {
		// The request may have moved money and the ledger does not say so
		// yet. The lease will expire, the operation will read as unknown,
		// and reconciliation will look it up: never a blind resend.
		c.cfg.Logger.Error("payonce: recording an attempt outcome failed", "operation", r.op.ID, "attempt", att.Number, "class", string(out.Class), "error", err)
		return true, &recordError{what: "the attempt's outcome", err: err}
	}
	r.op = op
	if op.Status.Terminal() {
		return true, errorOf(op, c.cfg.Provider.Name())
	}
	if !fp.KeepLease {
		// Accepted but still processing at the provider: background work
		// looks it up later.
		return true, ErrOutcomeUnknown
	}
	c.cfg.Logger.Debug("payonce: attempt recorded", "operation", op.ID, "kind", op.Kind, "attempt", att.Number, "class", string(out.Class), "status", string(op.Status))
	// Not sent or maybe sent: wait, keeping the lease, then send again or
	// look up. A provider asking for a longer wait than the call may spend
	// leaves the rest to background work.
	wait := c.cfg.Retry.Backoff(r.sent-1, out.RetryAfter, c.cfg.Random)
	if r.sent >= r.maxAttempts(c) {
		// No attempt left in this run: look up at once, then leave the
		// rest to background work.
		return false, nil
	}
	if out.RetryAfter > c.cfg.Retry.MaxRetryAfter || sleep(ctx, wait) != nil {
		r.sent = r.maxAttempts(c)
	}
	return false, nil
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
	lr, lerr := c.lookup(ctx, h.query)
	if lerr != nil {
		c.cfg.Logger.Warn("payonce: status lookup failed", "operation", r.op.ID, "error", lerr)
	}
	now := c.cfg.Now()
	in := DecideInput{
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
	d := Decide(in)
	if d.Action == ActResend && !mayResend {
		res, err := c.release(ctx, r, ErrOutcomeUnknown)
		return true, res, err
	}
	event := lookupEvent(lr, lerr)
	if d.Action == ActResend {
		if err := c.startAttempt(ctx, r, event); err != nil {
			res, err := c.leaseError(r, err)
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
	switch d.Action {
	case ActRecordSucceeded:
		fp.To = ledger.StatusSucceeded
	case ActRecordFailed:
		fp.To = ledger.StatusFailed
	case ActReview:
		fp.To = ledger.StatusManualReview
		fp.ReviewReason = d.Reason
	default:
		fp.To = ledger.StatusUnknown
	}
	rctx, rcancel := recordCtx(ctx)
	defer rcancel()
	op, err := c.cfg.Store.Finish(rctx, fp)
	if err != nil {
		return true, resultOf(r.op), &recordError{what: "the lookup's decision", err: err}
	}
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
	return c.cfg.Provider.Lookup(lctx, lookupDoer{c.http.read}, q)
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
	for _, e := range evs {
		if e.Kind != ledger.EventResolution {
			continue
		}
		var d ledger.ResolutionDetail
		if json.Unmarshal([]byte(e.Detail), &d) == nil && d.PreviousProviderRef != "" && !slices.Contains(q.EarlierRefs, d.PreviousProviderRef) {
			q.EarlierRefs = append(q.EarlierRefs, d.PreviousProviderRef)
		}
	}
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

// leaseError reports a lost lease or changed state: another worker took
// the operation over.
func (c *Client) leaseError(r *run, err error) (Result, error) {
	res := resultOf(r.op)
	if errors.Is(err, ledger.ErrLeaseLost) || errors.Is(err, ledger.ErrStateConflict) {
		res.Status = ResultInProgress
		return res, fmt.Errorf("%w: %w", ErrInProgress, err)
	}
	return res, &recordError{what: "the next attempt", err: err}
}

// recordError is a ledger write that failed while an operation was being
// driven. The operation's outcome is unknown to the caller (errors.Is
// ErrOutcomeUnknown); the lease will expire and background work will look
// it up. Unlike a plain ErrOutcomeUnknown, it is a failure to act.
type recordError struct {
	what string
	err  error
}

func (e *recordError) Error() string {
	return "payonce: outcome unknown: recording " + e.what + " failed: " + e.err.Error()
}

func (e *recordError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrOutcomeUnknown) true.
func (e *recordError) Is(target error) bool { return target == ErrOutcomeUnknown }
