package payonce_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

func TestChargeSucceedsOnceAndReplays(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	res, err := b.client.Charge(b.ctx, charge("order-1", 1999))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.NotEmpty(t, res.ProviderRef)
	require.False(t, res.Replayed)
	require.Equal(t, 1, res.Attempts)
	require.Equal(t, 1, b.chargesOf(t, res.OperationID))

	requests := b.fake.Truth().Requests
	again, err := b.client.Charge(b.ctx, charge("order-1", 1999))
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, res.ProviderRef, again.ProviderRef)
	require.Equal(t, requests, b.fake.Truth().Requests, "a replay must not call the provider")

	op, atts, err := b.store.Get(b.ctx, res.OperationID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
	require.Len(t, atts, 1)
	require.Equal(t, ledger.OutcomeSuccess, atts[0].Outcome)
	require.Equal(t, t0, op.WindowStart)
	require.Equal(t, t0.Add(24*time.Hour), op.KeyExpiresAt)
}

// TestChargeFaults drives every fault of the fake through a synchronous
// charge: whatever happens, the order is charged at most once and the ledger
// says what the provider did.
func TestChargeFaults(t *testing.T) {
	t.Parallel()
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		// Answers lost after the money moved: the lookup finds the charge.
		for _, f := range []mocks.FaultKind{mocks.FaultDropAfterProcessing, mocks.FaultHangAfterProcessing, mocks.FaultGatewayAfter502, mocks.FaultSlow} {
			t.Run(f.String(), func(t *testing.T) {
				t.Parallel()
				b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{Options: mocks.Options{HangFor: 10 * time.Second, SlowFor: 20 * time.Millisecond}},
					config: func(c *payonce.Config) { c.AttemptTimeout = 300 * time.Millisecond }})
				b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, f)
				res, err := b.client.Charge(b.ctx, charge("order-"+f.String(), 1500))
				require.NoError(t, err)
				require.Equal(t, payonce.ResultSucceeded, res.Status)
				require.Equal(t, 1, b.chargesOf(t, res.OperationID))
				require.Equal(t, 1, postsOf(b), "found by lookup: never sent again")
				_, atts := attemptsOf(t, b, res.OperationID)
				require.Len(t, atts, 1)
				if f != mocks.FaultSlow {
					require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
				}
			})
		}

		t.Run("gateway_before_502: resend with the same key after the search lag", func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{postgres: pg})
			b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultGatewayBefore502)
			res, err := b.client.Charge(b.ctx, charge("order-gw", 1500))
			require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "search is eventually consistent: not found proves nothing yet")
			require.Equal(t, payonce.ResultUnknown, res.Status)
			require.Equal(t, 0, b.chargesOf(t, res.OperationID))

			b.clock.Advance(2 * time.Minute)
			res, err = b.client.Charge(b.ctx, charge("order-gw", 1500))
			require.NoError(t, err)
			require.Equal(t, payonce.ResultSucceeded, res.Status)
			require.Equal(t, 1, b.chargesOf(t, res.OperationID))
			op, atts := attemptsOf(t, b, res.OperationID)
			require.Len(t, atts, 2)
			require.Equal(t, atts[0].Key, atts[1].Key, "a resend carries the same key")
			require.Equal(t, t0, op.WindowStart, "the window starts at the first attempt that may have reached the provider")
		})

		t.Run("stored_500: resent inside the window, review after it, never a new POST", func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{postgres: pg})
			b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultStored500)
			res, err := b.client.Charge(b.ctx, charge("order-500", 1500))
			require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

			b.clock.Advance(2 * time.Minute)
			_, err = b.client.Charge(b.ctx, charge("order-500", 1500))
			require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the stored 500 is replayed for the same key")
			require.Equal(t, 1, b.fake.Truth().Replays)

			b.clock.Advance(25 * time.Hour)
			posts := postsOf(b)
			res, err = b.client.Charge(b.ctx, charge("order-500", 1500))
			require.ErrorIs(t, err, payonce.ErrManualReview)
			require.Equal(t, payonce.ResultManualReview, res.Status)
			require.Equal(t, payonce.ReasonWindowPassed, res.ReviewReason)
			require.Equal(t, posts, postsOf(b), "outside the key window nothing is ever posted")
			require.Equal(t, 0, b.chargesOf(t, res.OperationID))
			op, _ := attemptsOf(t, b, res.OperationID)
			require.False(t, op.NextCheckAt.IsZero(), "review keeps read-only lookups going")
		})

		t.Run("rate_limit_429: nothing sent, window stays closed", func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{Options: mocks.Options{RetryAfter: 3 * time.Second}},
				config: func(c *payonce.Config) { c.Retry.MaxRetryAfter = 100 * time.Millisecond }})
			b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultRateLimit429)
			res, err := b.client.Charge(b.ctx, charge("order-429", 1500))
			require.ErrorIs(t, err, payonce.ErrProviderUnavailable, "a Retry-After beyond the call's patience leaves it to background work")
			require.Equal(t, payonce.ResultPending, res.Status)
			op, atts := attemptsOf(t, b, res.OperationID)
			require.Equal(t, ledger.StatusPending, op.Status)
			require.True(t, op.WindowStart.IsZero(), "a 429 proves nothing was processed")
			require.Len(t, atts, 1)
			require.Equal(t, ledger.OutcomeNotSent, atts[0].Outcome)
			require.False(t, atts[0].MayHaveReached)

			res, err = b.client.Charge(b.ctx, charge("order-429", 1500))
			require.NoError(t, err)
			require.Equal(t, 1, b.chargesOf(t, res.OperationID))
			op, _ = attemptsOf(t, b, res.OperationID)
			require.Equal(t, t0, op.WindowStart)
		})

		t.Run("decline is final and replayed", func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{postgres: pg})
			p := charge("order-declined", 1500)
			p.PaymentMethod = "pm_card_chargeDeclinedInsufficientFunds"
			res, err := b.client.Charge(b.ctx, p)
			require.ErrorIs(t, err, payonce.ErrDeclined)
			var de *payonce.DeclinedError
			require.True(t, errors.As(err, &de))
			require.Equal(t, "card_declined", de.Code)
			require.Equal(t, "insufficient_funds", de.DeclineCode)
			require.NotEmpty(t, de.ProviderRef)
			require.Equal(t, payonce.ResultFailed, res.Status)

			posts := postsOf(b)
			res, err = b.client.Charge(b.ctx, p)
			require.ErrorIs(t, err, payonce.ErrDeclined)
			require.True(t, res.Replayed)
			require.Equal(t, "insufficient_funds", res.DeclineCode)
			require.Equal(t, posts, postsOf(b))
		})

		t.Run("provider holds the key with other parameters", func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{postgres: pg})
			id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{"order-mismatch"}}.OperationID()
			require.NoError(t, err)
			// Someone else used our key with another amount.
			form := url.Values{"amount": {"999"}, "currency": {"usd"}, "confirm": {"true"}, "payment_method": {"pm_card_visa"}}
			req, err := http.NewRequest("POST", b.fake.URL()+chargePath, strings.NewReader(form.Encode()))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+b.fake.APIKey())
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Idempotency-Key", id)
			resp, err := b.fake.Client().Do(req)
			require.NoError(t, err)
			resp.Body.Close()

			res, err := b.client.Charge(b.ctx, charge("order-mismatch", 1500))
			require.ErrorIs(t, err, payonce.ErrManualReview)
			require.Equal(t, payonce.ReasonKeyMismatch, res.ReviewReason)
		})

		t.Run("same identity, different request: nothing sent", func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{postgres: pg})
			_, err := b.client.Charge(b.ctx, charge("order-fp", 1500))
			require.NoError(t, err)
			posts := postsOf(b)
			_, err = b.client.Charge(b.ctx, charge("order-fp", 1600))
			require.ErrorIs(t, err, payonce.ErrFingerprintMismatch)
			require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
			require.Equal(t, posts, postsOf(b))
		})

		t.Run("lookup failing inside the window: check later", func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{Options: mocks.Options{FaultGETs: true}}})
			b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultGatewayAfter502)
			b.fake.Script(mocks.Match{Method: "GET"}, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502,
				mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502,
				mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502)
			res, err := b.client.Charge(b.ctx, charge("order-lookup", 1500))
			require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
			require.Equal(t, 1, postsOf(b), "no resend while the lookup cannot answer")
			op, _ := attemptsOf(t, b, res.OperationID)
			require.Equal(t, ledger.StatusUnknown, op.Status)
			require.True(t, op.NextCheckAt.After(t0))
			require.Empty(t, op.LeaseOwner, "the lease is released for background work")

			b.fake.ClearScripts()
			b.clock.Advance(time.Minute)
			res, err = b.client.Charge(b.ctx, charge("order-lookup", 1500))
			require.NoError(t, err)
			require.Equal(t, 1, b.chargesOf(t, res.OperationID))
		})
	})
}

func TestConnectionRefusedIsNotSent(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{baseURL: "http://127.0.0.1:1", config: func(c *payonce.Config) {
		c.Breaker = payonce.BreakerSettings{ConsecutiveFailures: 4}
	}})
	res, err := b.client.Charge(b.ctx, charge("order-refused", 1500))
	require.ErrorIs(t, err, payonce.ErrProviderUnavailable)
	op, atts := attemptsOf(t, b, res.OperationID)
	require.Equal(t, ledger.StatusPending, op.Status)
	require.True(t, op.WindowStart.IsZero(), "a refused connection sent nothing: the key window stays closed")
	// 3 transmissions per attempt (DialRetries 2): the fourth failure, in
	// the second attempt, opens the breaker, whose refusal ends that
	// attempt; no third attempt is journaled while the breaker is open.
	require.Len(t, atts, 2)
	for _, a := range atts {
		require.Equal(t, ledger.OutcomeNotSent, a.Outcome)
	}
	require.Contains(t, atts[1].Error, "circuit breaker is open")

	// The next call, breaker still open: nothing journaled, the operation
	// stays pending, the caller is told the provider is unavailable.
	_, err = b.client.Charge(b.ctx, charge("order-refused", 1500))
	require.ErrorIs(t, err, payonce.ErrProviderUnavailable)
	op, again := attemptsOf(t, b, res.OperationID)
	require.Equal(t, ledger.StatusPending, op.Status)
	require.Len(t, again, 2, "an open breaker spends no attempt")
}

// DialRetries 0 takes the default (2 reconnections per attempt); -1 turns
// reconnecting off: one transmission per attempt.
func TestDialRetriesOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dialRetries, transmissions int
	}{{0, 9}, {-1, 3}} {
		t.Run(fmt.Sprint("DialRetries=", tc.dialRetries), func(t *testing.T) {
			t.Parallel()
			dials := &countingTransport{base: &http.Transport{DisableKeepAlives: true}}
			b := setup(t, setupOpts{baseURL: "http://127.0.0.1:1", config: func(c *payonce.Config) {
				c.Breaker = payonce.BreakerSettings{ConsecutiveFailures: 100}
				c.HTTPClient = &http.Client{Transport: dials}
				c.Retry.DialRetries = tc.dialRetries
			}})
			res, err := b.client.Charge(b.ctx, charge("order-refused", 1500))
			require.ErrorIs(t, err, payonce.ErrProviderUnavailable)
			_, atts := attemptsOf(t, b, res.OperationID)
			require.Len(t, atts, 3, "MaxAttempts")
			require.Equal(t, int32(tc.transmissions), dials.n.Load(), "transmissions over 3 attempts")
		})
	}
}

// countingTransport counts the requests handed to the transport.
type countingTransport struct {
	n    atomic.Int32
	base http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

func TestCaptureCancelRefund(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		auth := charge("order-auth", 5000)
		auth.CaptureManual = true
		res, err := b.client.Charge(b.ctx, auth)
		require.NoError(t, err)
		pi := res.ProviderRef

		cap, err := b.client.Capture(b.ctx, payonce.CaptureParams{OrderID: "order-auth", Amount: 4000, Currency: "USD"})
		require.NoError(t, err, "PaymentRef comes from the order's charge in the ledger")
		require.Equal(t, payonce.ResultSucceeded, cap.Status)
		require.Equal(t, pi, cap.ProviderRef)

		_, err = b.client.Cancel(b.ctx, payonce.CancelParams{OrderID: "order-auth"})
		require.ErrorIs(t, err, payonce.ErrDeclined, "a captured payment cannot be canceled")

		r1, err := b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-auth", RefundSeq: 1, Amount: 3000, Currency: "USD"})
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, r1.Status)
		_, err = b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-auth", RefundSeq: 2, Amount: 2000, Currency: "USD"})
		testkit.RequireInvalid(t, err, "Amount")
		require.Contains(t, err.Error(), "at most 1000 USD", "a refund beyond what the ledger shows remains is refused before it is recorded")
		_, err = b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-auth", RefundSeq: 2, Amount: 2000, Currency: "USD", PaymentRef: pi})
		require.ErrorIs(t, err, payonce.ErrDeclined, "with PaymentRef nothing is read: a refund beyond what remains is the provider's refusal, recorded as failed")
		r3, err := b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-auth", RefundSeq: 3, Amount: 1000, Currency: "USD"})
		require.NoError(t, err)
		require.NotEqual(t, r1.ProviderRef, r3.ProviderRef)
		again, err := b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-auth", RefundSeq: 1, Amount: 3000, Currency: "USD"})
		require.NoError(t, err)
		require.True(t, again.Replayed)
		p, ok := b.fake.Truth().Payment(pi)
		require.True(t, ok)
		require.Equal(t, int64(4000), p.AmountCaptured)
		require.Equal(t, int64(4000), p.AmountRefunded)

		auth2 := charge("order-void", 5000)
		auth2.CaptureManual = true
		_, err = b.client.Charge(b.ctx, auth2)
		require.NoError(t, err)
		c, err := b.client.Cancel(b.ctx, payonce.CancelParams{OrderID: "order-void"})
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, c.Status)

		_, err = b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-none", RefundSeq: 1, Currency: "USD"})
		require.ErrorIs(t, err, payonce.ErrInvalid, "no charge in the ledger and no PaymentRef")
	})
}

func TestConcurrentCallersChargeOnce(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{SlowFor: 50 * time.Millisecond}}}, func(t *testing.T, b *bundle) {
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultSlow)
		var wg sync.WaitGroup
		results := make([]error, 20)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, results[i] = b.client.Charge(b.ctx, charge("order-race", 700))
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range results {
			if err == nil {
				ok++
				continue
			}
			require.ErrorIs(t, err, payonce.ErrInProgress)
		}
		require.GreaterOrEqual(t, ok, 1)
		id, _ := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{"order-race"}}.OperationID()
		require.Equal(t, 1, b.chargesOf(t, id))
		require.Equal(t, 1, postsOf(b))
	})
}

func TestBadInputIsRefusedBeforeAnythingIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	// chargeErr charges charge("o", 100) changed by edit.
	chargeErr := func(edit func(*payonce.ChargeParams)) func() error {
		return func() error {
			p := charge("o", 100)
			edit(&p)
			_, err := b.client.Charge(b.ctx, p)
			return err
		}
	}
	cases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"zero amount", chargeErr(func(p *payonce.ChargeParams) { p.Amount = 0 }), "Amount"},
		{"negative amount", chargeErr(func(p *payonce.ChargeParams) { p.Amount = -5 }), "Amount"},
		{"overflowing amount", chargeErr(func(p *payonce.ChargeParams) { p.Amount = 1 << 62 }), "Amount"},
		{"lower-case currency", chargeErr(func(p *payonce.ChargeParams) { p.Currency = "usd" }), "Currency"},
		{"unknown currency", chargeErr(func(p *payonce.ChargeParams) { p.Currency = "QQQ" }), "Currency"},
		{"empty order", chargeErr(func(p *payonce.ChargeParams) { p.OrderID = "" }), "References[0]"},
		{"control byte in order", chargeErr(func(p *payonce.ChargeParams) { p.OrderID = "a\x00b" }), "References[0]"},
		{"bad metadata", chargeErr(func(p *payonce.ChargeParams) { p.Metadata = map[string]string{"": "x"} }), "Metadata"},
		{"refund seq 0", func() error {
			_, err := b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "o", PaymentRef: "pi_1", Currency: "USD"})
			return err
		}, "RefundSeq"},
		{"negative refund", func() error {
			_, err := b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "o", RefundSeq: 1, Amount: -1, PaymentRef: "pi_1", Currency: "USD"})
			return err
		}, "Amount"},
	}
	for _, c := range cases {
		err := c.call()
		require.ErrorIs(t, err, payonce.ErrInvalid, c.name)
		var ve *payonce.ValidationError
		require.True(t, errors.As(err, &ve), c.name)
		require.True(t, strings.HasPrefix(ve.Field, c.field), "%s: field %q", c.name, ve.Field)
	}
	ops, err := b.store.List(b.ctx, ledger.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, ops, "bad input records nothing")
	require.Zero(t, postsOf(b), "bad input sends nothing")
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	cases := []struct {
		cfg   payonce.Config
		field string
	}{
		{payonce.Config{Store: b.store}, "Config.Provider"},
		{payonce.Config{Provider: b.psp}, "Config.Store"},
		{payonce.Config{Provider: b.psp, Store: b.store, AttemptTimeout: time.Minute, LeaseDuration: time.Minute}, "Config.LeaseDuration"},
		{payonce.Config{Provider: b.psp, Store: b.store, SafetyMargin: 48 * time.Hour}, "Config.SafetyMargin"},
		{payonce.Config{Provider: b.psp, Store: b.store, Retry: payonce.RetryPolicy{MaxAttempts: -1}}, "Retry.MaxAttempts"},
		{payonce.Config{Provider: b.psp, Store: b.store, Retry: payonce.RetryPolicy{BaseDelay: time.Second, MaxDelay: time.Millisecond}}, "Retry.MaxDelay"},
		{payonce.Config{Provider: b.psp, Store: b.store, Retry: payonce.RetryPolicy{DialRetries: -2}}, "Retry.DialRetries"},
		{payonce.Config{Provider: b.psp, Store: b.store, ProcessingReviewAfter: -2}, "Config.ProcessingReviewAfter"},
		{payonce.Config{Provider: b.psp, Store: b.store, ProcessingReviewAfter: -time.Hour}, "Config.ProcessingReviewAfter"},
	}
	for i, c := range cases {
		_, err := payonce.New(c.cfg)
		var ve *payonce.ValidationError
		require.True(t, errors.As(err, &ve), "case %d: %v", i, err)
		require.Equal(t, c.field, ve.Field, fmt.Sprint(i))
	}
	// -1 says "off" where zero means "the default".
	_, err := payonce.New(payonce.Config{Provider: b.psp, Store: b.store, ProcessingReviewAfter: -1,
		Retry: payonce.RetryPolicy{DialRetries: -1, LookupRetries: -1, MaxRetryAfter: -1}})
	require.NoError(t, err)
}

// The API key must never reach the ledger or an error.
func TestSecretsStayOutOfTheLedger(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultGatewayBefore502)
	res, err := b.client.Charge(b.ctx, charge("order-secret", 100))
	require.Error(t, err)
	require.NotContains(t, err.Error(), b.fake.APIKey())
	op, atts := attemptsOf(t, b, res.OperationID)
	for _, s := range []string{string(op.Request), string(op.Result), op.ReviewReason} {
		require.NotContains(t, s, b.fake.APIKey())
	}
	for _, a := range atts {
		require.NotContains(t, a.Error, b.fake.APIKey())
	}
	_ = stripe.MetaOperation
}

// slowJournal is a store whose StartAttempt takes as long as the test says
// (on the manual clock).
type slowJournal struct {
	ledger.Store
	clock *mocks.ManualClock
	delay time.Duration
}

func (s slowJournal) StartAttempt(ctx context.Context, p ledger.StartAttemptParams) (ledger.Operation, ledger.Attempt, error) {
	op, a, err := s.Store.StartAttempt(ctx, p)
	s.clock.Advance(s.delay)
	return op, a, err
}

// Rule 5 holds even when journaling the resend uses up the rest of the key
// window: the request is not sent and the operation goes to review.
func TestResendNotSentWhenJournalingOutlastsTheWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultGatewayBefore502)
	res, err := b.client.Charge(b.ctx, charge("order-slow-journal", 900))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

	psp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: b.fake.APIKey(), BaseURL: b.fake.URL(), Now: b.clock.Now})
	require.NoError(t, err)
	slow, err := payonce.New(payonce.Config{Provider: psp, Store: slowJournal{Store: b.store, clock: b.clock, delay: 24 * time.Hour},
		Now: b.clock.Now, Retry: payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
	require.NoError(t, err)
	b.clock.Advance(2 * time.Minute) // past the search lag: "not found" counts
	posts := postsOf(b)
	res, err = slow.Charge(b.ctx, charge("order-slow-journal", 900))
	require.ErrorIs(t, err, payonce.ErrManualReview)
	require.Equal(t, payonce.ReasonWindowPassed, res.ReviewReason)
	require.Equal(t, posts, postsOf(b), "nothing sent once the window closed, even with the attempt journaled")
	_, atts := attemptsOf(t, b, res.OperationID)
	require.Equal(t, ledger.OutcomeNotSent, atts[len(atts)-1].Outcome)
}

// Regression tests for money holes an adversarial review confirmed. Each
// failed before its fix.

// Two replicas configured with the same Owner (the service's name) must
// never hold one lease together: the configured owner is a label, the lease
// owner carries a random part per Client.
func TestSameOwnerOnTwoClientsNeverSharesALease(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{SlowFor: 300 * time.Millisecond}},
		config: func(c *payonce.Config) { c.Owner = "orders-api" }}, func(t *testing.T, b *bundle) {
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultSlow)
		psp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: b.fake.APIKey(), BaseURL: b.fake.URL(), Now: b.clock.Now})
		require.NoError(t, err)
		replica, err := payonce.New(payonce.Config{Provider: psp, Store: b.store, Now: b.clock.Now, Owner: "orders-api",
			AttemptTimeout: 2 * time.Second, Retry: payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
		require.NoError(t, err)

		first := make(chan error, 1)
		go func() {
			_, err := b.client.Charge(b.ctx, charge("order-owner", 900))
			first <- err
		}()
		// Wait until the first call's attempt is journaled and out.
		id, _ := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{"order-owner"}}.OperationID()
		require.Eventually(t, func() bool {
			op, _, err := b.store.Get(b.ctx, id)
			return err == nil && op.Status == ledger.StatusInFlight
		}, 5*time.Second, 5*time.Millisecond)

		res, err := replica.Charge(b.ctx, charge("order-owner", 900))
		require.ErrorIs(t, err, payonce.ErrInProgress, "the other replica holds the lease")
		require.Equal(t, payonce.ResultInProgress, res.Status)
		require.NoError(t, <-first, "the first call keeps its lease and records its success")
		require.Equal(t, 1, postsOf(b))
		require.Equal(t, 1, b.chargesOf(t, id))
	})
}

// A TLS record error that arrives after the whole request was written is no
// proof that nothing was sent: the attempt must not be retransmitted inside
// the HTTP layer, and it is maybe_sent.
func TestTLSErrorAfterWritingIsNotRetransmitted(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.StartTLS() // for its certificate and a client that trusts it
	defer tlsSrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var requests atomic.Int32
	go func() {
		for {
			raw, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer raw.Close()
				conn := tls.Server(raw, tlsSrv.TLS.Clone())
				if conn.Handshake() != nil {
					return
				}
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				if req.Method == http.MethodPost {
					requests.Add(1)
				}
				// The answer bypasses TLS: the client reads a record
				// header with a version it does not expect
				// (tls.RecordHeaderError). Not "HTTP/...": http.Client
				// turns that into ErrSchemeMismatch.
				_, _ = raw.Write([]byte("\x17\x01\x01\x00\x05hello"))
			}()
		}
	}()
	transport := tlsSrv.Client().Transport.(*http.Transport).Clone()
	transport.DisableKeepAlives = true
	b := setup(t, setupOpts{baseURL: "https://" + ln.Addr().String(), config: func(c *payonce.Config) {
		c.HTTPClient = &http.Client{Transport: transport}
		c.Retry.MaxAttempts = 1
	}})
	res, err := b.client.Charge(b.ctx, charge("order-tls", 1500))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Equal(t, int32(1), requests.Load(), "one journaled attempt, one transmission of the POST")
	_, atts := attemptsOf(t, b, res.OperationID)
	require.Len(t, atts, 1)
	require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
	t.Logf("attempt error: %s", atts[0].Error)
	var rh tls.RecordHeaderError
	require.False(t, errors.As(err, &rh), "the caller sees the outcome, not the transport error")
}

// The safety margin must cover one whole attempt plus the clock-skew
// allowance, so that a resend started inside the key window lands inside it.
func TestSafetyMarginCoversAnAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, tc := range []struct {
		cfg  payonce.Config
		want string
	}{
		{payonce.Config{AttemptTimeout: 5 * time.Minute, SafetyMargin: 150 * time.Second}, "at least AttemptTimeout + ClockSkew"},
		{payonce.Config{AttemptTimeout: time.Second, SafetyMargin: time.Minute}, "at least AttemptTimeout + ClockSkew (1m1s)"},
		{payonce.Config{AttemptTimeout: time.Second, ClockSkew: -time.Second}, "Config.ClockSkew"},
		{payonce.Config{AttemptTimeout: 12 * time.Hour, ClockSkew: 12 * time.Hour}, "below the provider's shortest key TTL"},
	} {
		tc.cfg.Provider, tc.cfg.Store = b.psp, b.store
		_, err := payonce.New(tc.cfg)
		require.ErrorIs(t, err, payonce.ErrInvalid)
		require.ErrorContains(t, err, tc.want)
	}
	c, err := payonce.New(payonce.Config{Provider: b.psp, Store: b.store, AttemptTimeout: time.Second, ClockSkew: time.Second, SafetyMargin: 2 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, c)
}

// clockOnPost advances the manual clock while a POST is out, as a slow
// attempt would.
type clockOnPost struct {
	base  http.RoundTripper
	clock *mocks.ManualClock
	by    time.Duration
}

func (c clockOnPost) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		c.clock.Advance(c.by)
	}
	return c.base.RoundTrip(r)
}

// An eventually consistent search is given its lag from the end of the
// latest attempt, not from its start: a slow attempt must not shorten it.
func TestLookupLagCountsFromTheEndOfTheAttempt(t *testing.T) {
	t.Parallel()
	var b *bundle
	b = setup(t, setupOpts{config: func(c *payonce.Config) {
		c.CheckInterval = time.Second
		c.AttemptTimeout = 5 * time.Minute
		c.Retry.MaxAttempts = 1
	}})
	// Rebuild the client with a transport that spends 50 s of clock time
	// per POST (the bundle's clock exists only after setup).
	psp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: b.fake.APIKey(), BaseURL: b.fake.URL(), Now: b.clock.Now})
	require.NoError(t, err)
	slow := clockOnPost{base: &http.Transport{DisableKeepAlives: true}, clock: b.clock, by: 50 * time.Second}
	client, err := payonce.New(payonce.Config{Provider: psp, Store: b.store, Now: b.clock.Now, CheckInterval: time.Second,
		AttemptTimeout: 5 * time.Minute, HTTPClient: &http.Client{Transport: slow}, Retry: payonce.RetryPolicy{MaxAttempts: 1}})
	require.NoError(t, err)
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultGatewayBefore502)

	res, err := client.Charge(b.ctx, charge("order-lag", 1500))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Equal(t, 1, postsOf(b))

	// 70 s after the attempt started, 20 s after it ended: inside the
	// search's 60 s lag counted from the end, so "not found" proves nothing.
	b.clock.Advance(20 * time.Second)
	_, err = client.Charge(b.ctx, charge("order-lag", 1500))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Equal(t, 1, postsOf(b), "no resend while the search may still lag behind the attempt")

	b.clock.Advance(45 * time.Second) // 65 s after the attempt ended
	res, err = client.Charge(b.ctx, charge("order-lag", 1500))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, 2, postsOf(b))
}

// A stored error replayed under the key is final for that key: no more
// resends, only lookups, then review.
func TestReplayedStoredErrorStopsResends(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{config: func(c *payonce.Config) { c.CheckInterval = time.Second }}, func(t *testing.T, b *bundle) {
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultStored500)
		_, err := b.client.Charge(b.ctx, charge("order-replay", 1500))
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		b.clock.Advance(2 * time.Minute)
		res, err := b.client.Charge(b.ctx, charge("order-replay", 1500))
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		require.Equal(t, 1, b.fake.Truth().Replays, "the resend met the stored 500")
		posts := postsOf(b)
		_, atts := attemptsOf(t, b, res.OperationID)
		require.True(t, atts[len(atts)-1].Replayed, "the ledger records the replay")

		// Calls and reconciler passes over the rest of the window send
		// nothing more: every resend would get the same stored answer.
		r := newReconciler(t, b, nil)
		for range 50 { // 25 h: past the key window
			b.clock.Advance(30 * time.Minute)
			_, _ = b.client.Charge(b.ctx, charge("order-replay", 1500))
			_, err := r.RunOnce(b.ctx)
			require.NoError(t, err)
		}
		require.Equal(t, posts, postsOf(b), "no resend after a replayed stored error")
		op, _ := attemptsOf(t, b, res.OperationID)
		// Lookups after the search's lag found nothing: review long before
		// the window passes (TestStoredErrorReview has the bounds).
		require.Equal(t, ledger.StatusManualReview, op.Status)
		require.Equal(t, ledger.ReviewCodeStoredError, op.ReviewCode)
	})
}

// TestNotSentResendStaysUnknown is the regression test of a defect the soak
// found: an operation that is unknown (an earlier attempt may have reached
// the provider) is resent after a lookup, the resend is refused before
// processing (429, breaker open, connection refused: not_sent), and the
// operation was recorded as pending. A pending operation is "safe to send at
// any time", so the next call sent it with no lookup and no key-window check,
// even a day later, when the provider had forgotten the key: a second charge.
// Unknown never returns to pending.
func TestNotSentResendStaysUnknown(t *testing.T) {
	t.Parallel()
	// A 429 asking for 1 s ends the call at once (MaxRetryAfter 1 ms): the
	// operation is left to the next call as the resend's outcome made it.
	shortRetryAfter := func(c *payonce.Config) { c.Retry.MaxRetryAfter = time.Millisecond }

	t.Run("post after the key window", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{config: shortRetryAfter})
		b.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultStored500, mocks.FaultRateLimit429)
		p := charge("order-window", 1500)
		id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{p.OrderID}}.OperationID()
		require.NoError(t, err)

		_, err = b.client.Charge(b.ctx, p) // 500: maybe sent
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		b.clock.Advance(2 * time.Minute)
		_, err = b.client.Charge(b.ctx, p) // lookup: not found; resend: 429
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		op, _, err := b.store.Get(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, t0, op.WindowStart, "attempt 1 may have reached Stripe: the window stays open")
		require.Equal(t, ledger.StatusUnknown, op.Status,
			"an operation whose first attempt may have reached the provider never goes back to pending")

		b.clock.Advance(25 * time.Hour) // past Stripe's 24 h key memory
		posts := b.fake.Truth().Requests["POST /v1/payment_intents"]
		res, err := b.client.Charge(b.ctx, p)
		require.Equal(t, posts, b.fake.Truth().Requests["POST /v1/payment_intents"], "rule 5: no POST outside the key window")
		require.ErrorIs(t, err, payonce.ErrManualReview)
		require.Equal(t, payonce.ReasonWindowPassed, res.ReviewReason)
	})

	t.Run("double charge", func(t *testing.T) {
		t.Parallel()
		// Stripe's search runs behind by more than the adapter's default
		// one minute, as Stripe says it may during incidents.
		b := setup(t, setupOpts{config: shortRetryAfter, fake: mocks.StripeOptions{SearchLag: 30 * time.Minute}})
		b.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing, mocks.FaultRateLimit429)
		p := charge("order-twice", 2500)
		id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{p.OrderID}}.OperationID()
		require.NoError(t, err)

		_, err = b.client.Charge(b.ctx, p) // charged; the answer is lost
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		require.Equal(t, 1, b.chargesOf(t, id))
		b.clock.Advance(2 * time.Minute)
		_, err = b.client.Charge(b.ctx, p) // search: not yet; resend (same key, safe): 429
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

		b.clock.Advance(25 * time.Hour)
		res, err := b.client.Charge(b.ctx, p)
		// A lookup (search has long caught up) finds the first
		// PaymentIntent; a POST with the forgotten key would charge again.
		require.Equal(t, 1, b.chargesOf(t, id), "order charged twice; Stripe holds %v", b.fake.Truth().Payments)
		require.NoError(t, err)
		require.Equal(t, b.fake.Truth().Payments[0].ID, res.ProviderRef)
	})
}
