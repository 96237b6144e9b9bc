package payonce_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// eachStore runs fn on SQLite and on PostgreSQL (the latter skips without
// PAYONCE_TEST_DATABASE_URL unless PAYONCE_REQUIRE_POSTGRES=1).
func eachStore(t *testing.T, fn func(t *testing.T, pg bool)) {
	for _, pg := range []bool{false, true} {
		name := "sqlite"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, pg)
		})
	}
}

const chargePath = "/v1/payment_intents"

func postsOf(b *bundle) int { return b.fake.Truth().Requests["POST "+chargePath] }

func attemptsOf(t *testing.T, b *bundle, id string) (ledger.Operation, []ledger.Attempt) {
	t.Helper()
	op, atts, err := b.store.Get(b.ctx, id)
	require.NoError(t, err)
	return op, atts
}

// TestChargeFaults drives every fault of the fake through a synchronous
// charge: whatever happens, the order is charged at most once and the ledger
// says what the provider did.
func TestChargeFaults(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, pg bool) {
		// Answers lost after the money moved: the lookup finds the charge.
		for _, f := range []mocks.FaultKind{mocks.FaultDropAfterProcessing, mocks.FaultHangAfterProcessing, mocks.FaultGatewayAfter502, mocks.FaultSlow} {
			t.Run(f.String(), func(t *testing.T) {
				t.Parallel()
				b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{HangFor: 10 * time.Second, SlowFor: 20 * time.Millisecond},
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
			b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{RetryAfter: 3 * time.Second},
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
			b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{FaultGETs: true}})
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
	require.Len(t, atts, 3)
	for _, a := range atts {
		require.Equal(t, ledger.OutcomeNotSent, a.Outcome)
	}
	// 3 transmissions per attempt (DialRetries 2): the fourth failure opens
	// the breaker and later transmissions are refused without dialing.
	require.Contains(t, atts[2].Error, "circuit breaker is open")
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
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg})
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
		require.ErrorIs(t, err, payonce.ErrDeclined, "a refund beyond what remains is the provider's refusal, recorded as failed")
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
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{SlowFor: 50 * time.Millisecond}})
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

	psp, err := stripe.New(stripe.Config{APIKey: b.fake.APIKey(), BaseURL: b.fake.URL(), Now: b.clock.Now})
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
