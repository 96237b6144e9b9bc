package payonce

import (
	"context"
	"time"

	"github.com/payonce/payonce/ledger"
)

// RetryPolicy bounds the attempt loop of one call. Zero fields take the
// defaults named on each; a field that says so takes -1 for "off" (as zero
// cannot say it).
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
	// background work. Defaults to 10 s; -1 never waits for one (any
	// Retry-After ends the call).
	MaxRetryAfter time.Duration
	// DialRetries is how many times one attempt reconnects after a
	// connection that was never established (nothing was sent). Defaults to
	// 2; -1 turns reconnecting off.
	DialRetries int
	// LookupRetries is how many times a status lookup request is retried
	// (reads are safe to repeat). Defaults to 2; -1 turns retrying off.
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
	case p.MaxRetryAfter < 0 && p.MaxRetryAfter != off:
		return invalid("Retry.MaxRetryAfter", "must be >= 0, or -1 never to wait for a Retry-After, got %v", p.MaxRetryAfter)
	case p.DialRetries < off || p.LookupRetries < off:
		return invalid("Retry.DialRetries", "retry counts must be >= 0, or -1 for none (got %d and LookupRetries %d)", p.DialRetries, p.LookupRetries)
	}
	return nil
}

// off (-1) switches off a setting whose zero value means "the default":
// RetryPolicy.DialRetries, LookupRetries and MaxRetryAfter, and
// Config.ProcessingReviewAfter. Each field's doc says what off means.
const off = -1

// onOrZero is n, or 0 for a setting switched off (-1).
func onOrZero[T ~int | ~int64](n T) T { return max(n, 0) }

// retryAfterLimit is the longest Retry-After a call waits for.
func (p RetryPolicy) retryAfterLimit() time.Duration { return onOrZero(p.MaxRetryAfter) }

// backoff returns the wait before retry number n (0-based): exponential with
// full jitter (a uniformly random wait up to BaseDelay*2^n, capped at
// MaxDelay), so that many clients recovering at once do not retry in step.
// A provider's Retry-After, when longer, wins. random returns [0, 1).
func (p RetryPolicy) backoff(n int, retryAfter time.Duration, random func() float64) time.Duration {
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

// pauseBeforeNext waits the backoff after a not-sent or maybe-sent attempt,
// keeping the lease, before the run sends again or looks up. A provider
// asking for a longer wait than the call may spend (retryAfter), or a
// context that ends, leaves the rest to background work.
func (c *Client) pauseBeforeNext(ctx context.Context, r *run, retryAfter time.Duration) {
	wait := c.cfg.Retry.backoff(r.sent-1, retryAfter, c.cfg.Random)
	if r.sent >= r.maxAttempts(c) {
		// No attempt left in this run: look up at once, then leave the
		// rest to background work.
		return
	}
	if retryAfter > c.cfg.Retry.retryAfterLimit() || sleep(ctx, wait) != nil {
		r.sent = r.maxAttempts(c)
	}
}

// resendDelay is the least time between the end of an operation's latest
// attempt and a resend that starts a new call or pass, after n attempts:
// CheckInterval, growing fourfold with every attempt, capped at a quarter
// of the operation's key TTL (but never below CheckInterval). Within a 24 h
// window and a 30 s interval that allows about eight such resends.
func (c *Client) resendDelay(n int, keyTTL time.Duration) time.Duration {
	ceiling := max(c.cfg.CheckInterval, keyTTL/4)
	d := c.cfg.CheckInterval
	for i := 1; i < n && d < ceiling; i++ {
		d *= 4
	}
	return min(d, ceiling)
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
