package payonce

import (
	"context"
	"errors"
	"fmt"
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
	// lastAttemptAt is the start of the operation's latest attempt.
	lastAttemptAt time.Time
	sent          int // attempts sent in this run
	// windowOpenBefore reports that an earlier attempt may already have
	// reached the provider when the current attempt was journaled.
	windowOpenBefore bool
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
				if r.sent >= c.cfg.Retry.MaxAttempts || ctx.Err() != nil {
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
			done, res, err := c.lookupAndDecide(ctx, r, r.sent < c.cfg.Retry.MaxAttempts)
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
	r.lastAttemptAt = att.StartedAt
	r.sent++
	var (
		out     Outcome
		errText string
	)
	if r.windowOpenBefore && !InsideWindow(r.op, c.cfg.Now(), c.cfg.SafetyMargin) {
		// The window was checked before the attempt was journaled; a slow
		// ledger write may have used up the margin since. Rule 5: nothing
		// is sent outside the window, journal or not.
		out, errText = Outcome{Class: ledger.OutcomeNotSent}, "not sent: the key window closed while the attempt was being journaled"
	} else {
		out, errText = c.transmit(ctx, SendRequest{OperationID: r.op.ID, Key: att.Key, Request: r.req})
	}

	fp := ledger.FinishParams{
		ID: r.op.ID, Owner: r.owner, From: ledger.StatusInFlight,
		Attempt: &ledger.AttemptOutcome{
			Number: att.Number, Class: out.Class, HTTPStatus: out.HTTPStatus,
			ProviderRequestID: out.RequestID, Error: truncate(errText, 2000),
		},
		ProviderRef: out.ProviderRef, Result: encodeResult(out),
		KeepLease: true,
	}
	switch out.Class {
	case ledger.OutcomeSuccess:
		if out.Processing {
			fp.To = ledger.StatusUnknown
			fp.KeepLease = false
			fp.NextCheckAt = c.cfg.Now().Add(c.cfg.CheckInterval)
		} else {
			fp.To = ledger.StatusSucceeded
		}
	case ledger.OutcomeRefused:
		fp.To = ledger.StatusFailed
	case ledger.OutcomeNotSent:
		fp.To = ledger.StatusPending
		if r.windowOpenBefore {
			// This attempt provably never left, but an earlier one may have
			// reached the provider: the operation is still "maybe sent".
			// Back to pending, the next call would send without a lookup and
			// without the key-window check, possibly after the provider
			// forgot the key.
			fp.To = ledger.StatusUnknown
		}
	case ledger.OutcomeKeyMismatch:
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
	if out.RetryAfter > c.cfg.Retry.MaxRetryAfter || sleep(ctx, wait) != nil {
		r.sent = c.cfg.Retry.MaxAttempts
	}
	return false, nil
}

// lookupAndDecide asks the provider what became of an unknown operation and
// applies the decision table. done reports that the call is over. When
// mayResend is false (the call used its attempts), a resend is left to
// background work.
func (c *Client) lookupAndDecide(ctx context.Context, r *run, mayResend bool) (done bool, res Result, err error) {
	lctx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	lr, lerr := c.cfg.Provider.Lookup(lctx, lookupDoer{c.http.read}, LookupQuery{
		OperationID: r.op.ID, Key: r.op.Key, Request: r.req, ProviderRef: r.op.ProviderRef, Since: r.op.WindowStart,
	})
	cancel()
	if lerr != nil {
		c.cfg.Logger.Warn("payonce: status lookup failed", "operation", r.op.ID, "error", lerr)
	}
	if r.lastAttemptAt.IsZero() {
		r.lastAttemptAt = c.lastAttemptAt(ctx, r.op)
	}
	now := c.cfg.Now()
	d := Decide(DecideInput{
		Op: r.op, LastAttemptAt: r.lastAttemptAt, Lookup: lr, LookupErr: lerr, Now: now,
		Margin: c.cfg.SafetyMargin, CheckAfter: c.checkAfter(r.op, now), ProcessingReviewAfter: c.cfg.ProcessingReviewAfter,
	})
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
	if lerr == nil {
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

// lastAttemptAt reads the start of the operation's latest attempt.
func (c *Client) lastAttemptAt(ctx context.Context, op ledger.Operation) time.Time {
	_, atts, err := c.cfg.Store.Get(ctx, op.ID)
	if err != nil || len(atts) == 0 {
		// Without the attempt, assume the latest possible start: the lag
		// then protects the longest.
		return c.cfg.Now()
	}
	return atts[len(atts)-1].StartedAt
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
