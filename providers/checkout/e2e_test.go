package checkout_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/checkout"
	"github.com/payonce/payonce/providers/providertest"
)

// The end-to-end tests drive payonce.Client against the fake Checkout.com,
// with a SQLite ledger and one manual clock shared by the fake and the
// client. The scenarios every adapter must pass (replay, lost answers, 500s
// that free the key, key in use, declines, refunds, capture and void, lags,
// the key window, the soak) are the provider suite's, run by
// TestProviderSuite; the tests here are Checkout.com's own.

// TestProviderSuite runs the provider conformance suite against the fake
// (providertest.CheckoutEnv).
func TestProviderSuite(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.CheckoutEnv)
}

func usd(order string, amount int64) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "USD", PaymentMethod: mocks.CheckoutSourceApproved}
}

// settle asks again until the operation settles: Checkout.com accepts
// captures, voids and refunds with 202 and finishes them later.
func settle[P any](t *testing.T, call func(context.Context, P) (payonce.Result, error), ctx context.Context, p P) (payonce.Result, error) {
	t.Helper()
	res, err := call(ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "202 Accepted is not done yet")
	require.Equal(t, payonce.ResultUnknown, res.Status)
	return call(ctx, p)
}

// Checkout.com's own refund rules: actions are accepted with 202 and
// finished later, and amount 0 refunds what remains. Partial refunds, lost
// answers and an over-refund are the provider suite's Refunds scenario.
func TestE2ERefundSpecifics(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, providertest.CheckoutEnv)
	ch, err := e.Client.Charge(e.Ctx, usd("order-r", 1000))
	require.NoError(t, err)

	r1, err := settle(t, e.Client.Refund, e.Ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 1, Amount: 300, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r1.Status)
	require.Regexp(t, `^act_`, r1.ProviderRef)

	// More than what is left: payonce refuses it from the ledger; with
	// PaymentRef (nothing read) Checkout.com refuses it with its error code.
	_, err = e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 2, Amount: 900, Currency: "USD"})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	r2, err := e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 2, Amount: 900, Currency: "USD", PaymentRef: ch.ProviderRef})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, payonce.ResultFailed, r2.Status)
	require.Contains(t, r2.Message, "refund_amount_exceeds_balance")

	// Amount 0 refunds what remains.
	r3, err := settle(t, e.Client.Refund, e.Ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 3, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r3.Status)

	truth := e.Fake.Truth()
	require.Equal(t, int64(1000), truth.TotalRefunded("USD"))
	require.Equal(t, map[string]int{r1.OperationID: 1, r3.OperationID: 1}, truth.RefundsByReference())
	p, _ := truth.Payment(ch.ProviderRef)
	require.Equal(t, "Refunded", p.Status)
	require.Equal(t, 3, e.Posts("/payments/{id}/refunds"), "settling a 202 looks up; it never resends")
}

func TestE2ERefundDeclined(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, providertest.CheckoutEnv)
	params := usd("order-rd", 1000)
	params.PaymentMethod = mocks.CheckoutSourceRefundDeclined
	_, err := e.Client.Charge(e.Ctx, params)
	require.NoError(t, err)
	res, err := settle(t, e.Client.Refund, e.Ctx, payonce.RefundParams{OrderID: "order-rd", RefundSeq: 1, Amount: 100, Currency: "USD"})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, payonce.ResultFailed, res.Status)
	require.Equal(t, "20005", res.DeclineCode)
	require.Zero(t, e.Fake.Truth().TotalRefunded("USD"))
}

// Checkout.com documents no error for a key reused with another request;
// the fake replays the first request's answer, as the documented "same
// status and body" rule says. The adapter sees that the payment is not this
// request's (another reference and amount): the operation goes to review,
// is never recorded as succeeded, and nothing is sent again.
func TestE2ESameKeyOtherRequest(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, providertest.CheckoutEnv)
	opID := func(order string) string {
		id, err := payonce.Identity{Provider: "checkout", Kind: payonce.KindCharge, References: []string{order}}.OperationID()
		require.NoError(t, err)
		return id
	}
	ours, theirs := opID("order-mismatch"), opID("order-someone-else")

	// Someone else sent another payment under this operation's key.
	foreign := payonce.SendRequest{OperationID: theirs, Key: ours, Request: payonce.Request{Kind: payonce.KindCharge,
		Amount: 999, Currency: "USD", References: []string{"order-someone-else"}, PaymentMethod: mocks.CheckoutSourceApproved}}
	hr, err := e.Client.Provider().NewRequest(e.Ctx, foreign)
	require.NoError(t, err)
	resp, err := e.Fake.(*mocks.Checkout).Client().Do(hr)
	require.NoError(t, err)
	require.Equal(t, 201, resp.StatusCode)
	require.NoError(t, resp.Body.Close())

	res, err := e.Client.Charge(e.Ctx, usd("order-mismatch", 1500))
	require.ErrorIs(t, err, payonce.ErrManualReview)
	require.Equal(t, payonce.ResultManualReview, res.Status)
	require.Equal(t, payonce.ReasonContradicted, res.ReviewReason)

	truth := e.Fake.Truth()
	require.Equal(t, map[string]int{theirs: 1}, truth.ChargesByReference(), "no payment for our operation, and ours is not taken for theirs")
	require.Equal(t, 1, truth.KeyMismatch)
	require.Equal(t, 2, e.Posts("/payments"), "the foreign request and ours; no resend")
	_, atts, err := e.Store.Get(e.Ctx, ours)
	require.NoError(t, err)
	require.Len(t, atts, 1)
	require.Equal(t, ledger.OutcomeKeyMismatch, atts[0].Outcome)
}

// keyInUseEnv is CheckoutEnv's fake and adapter, with the fake answering a
// key still in flight with status (mocks.CheckoutOptions.KeyInUseStatus)
// and holding a slow request until it is released.
func keyInUseEnv(status int) func(*testing.T, providertest.Options) *providertest.Env {
	return func(t *testing.T, o providertest.Options) *providertest.Env {
		fake := mocks.NewCheckout(mocks.CheckoutOptions{Options: mocks.Options{Clock: o.Clock.Now, SlowFor: 10 * time.Minute}, KeyInUseStatus: status})
		t.Cleanup(fake.Close)
		psp, err := checkout.New(checkout.Config{SecretKey: fake.SecretKey(), BaseURL: fake.URL(), Now: o.Clock.Now})
		require.NoError(t, err)
		return &providertest.Env{Provider: psp, Fake: fake}
	}
}

// Checkout.com has answered a request whose key's first request is still
// running with 409 (support article) and with 429 duplicate_request (its
// idempotency pages and API reference). Either way the resend is recorded
// key_in_use, nothing is sent again until a lookup says so, and the
// operation settles with one payment once the first request finishes.
func TestE2EKeyInUse409And429(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusConflict, http.StatusTooManyRequests} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			e := testkit.NewE2E(t, keyInUseEnv(status))
			fake := e.Fake.(*mocks.Checkout)
			fake.Script(mocks.Match{Method: http.MethodPost, Path: "/payments"}, mocks.FaultSlow)
			p := usd("order-key-in-use", 3100)
			res, err := e.Client.Charge(e.Ctx, p)
			require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the attempt timed out; Checkout.com still runs it")
			id := res.OperationID

			e.Clock.Advance(checkout.DefaultSettleLag + time.Minute)
			_, err = e.Client.Charge(e.Ctx, p)
			require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the first request still runs")
			_, atts, err := e.Store.Get(e.Ctx, id)
			require.NoError(t, err)
			require.Len(t, atts, 2)
			require.Equal(t, ledger.OutcomeKeyInUse, atts[1].Outcome)
			require.Equal(t, status, atts[1].HTTPStatus)
			require.Equal(t, atts[0].Key, atts[1].Key)
			require.Equal(t, 1, fake.Truth().KeyInUse)
			require.Empty(t, fake.Truth().Payments)

			fake.Release()
			require.Eventually(t, func() bool { return len(fake.Truth().Payments) == 1 }, 10*time.Second, 5*time.Millisecond)
			posts := e.Posts("/payments")
			res, err = e.Client.Charge(e.Ctx, p)
			require.NoError(t, err)
			require.Equal(t, payonce.ResultSucceeded, res.Status)
			require.Equal(t, posts, e.Posts("/payments"), "found by lookup, not sent again")
			require.Equal(t, map[string]int{id: 1}, fake.Truth().ChargesByReference())
		})
	}
}

// A 429 that does not say the key is in flight (Checkout.com's rate
// limiter) cannot be told from one that does without its body: it is
// maybe_sent, looked up before anything is sent again, never not_sent.
func TestE2ERateLimited429IsMaybeSent(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, keyInUseEnv(http.StatusTooManyRequests))
	fake := e.Fake.(*mocks.Checkout)
	fake.Script(mocks.Match{Method: http.MethodPost, Path: "/payments"}, mocks.FaultRateLimit429)
	p := usd("order-rate-limited", 1200)
	res, err := e.Client.Charge(e.Ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	_, atts, err := e.Store.Get(e.Ctx, res.OperationID)
	require.NoError(t, err)
	require.Len(t, atts, 1)
	require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
	require.Equal(t, http.StatusTooManyRequests, atts[0].HTTPStatus)
	require.True(t, atts[0].MayHaveReached)

	e.Clock.Advance(checkout.DefaultSettleLag + time.Minute)
	res, err = e.Client.Charge(e.Ctx, p)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, map[string]int{res.OperationID: 1}, fake.Truth().ChargesByReference())
}
