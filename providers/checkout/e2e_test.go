package checkout_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/checkout"
)

// The end-to-end tests drive payonce.Client against the fake Checkout.com,
// with a SQLite ledger and one manual clock shared by the fake and the
// client.

var e2eStart = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type e2e struct {
	fake   *mocks.Checkout
	clock  *mocks.ManualClock
	store  ledger.Store
	client *payonce.Client
	ctx    context.Context
}

func e2eSetup(t *testing.T, fo mocks.CheckoutOptions) *e2e {
	t.Helper()
	clock := mocks.NewManualClock(e2eStart)
	fo.Clock = clock.Now
	fake := mocks.NewCheckout(fo)
	t.Cleanup(fake.Close)
	psp, err := checkout.New(checkout.Config{SecretKey: fake.SecretKey(), BaseURL: fake.URL(), Now: clock.Now})
	require.NoError(t, err)
	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Migrate(context.Background()))
	client, err := payonce.New(payonce.Config{
		Provider: psp, Store: store, Now: clock.Now,
		HTTPClient:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		AttemptTimeout: 2 * time.Second,
		Retry:          payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &e2e{fake: fake, clock: clock, store: store, client: client, ctx: ctx}
}

func usd(order string, amount int64) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "USD", PaymentMethod: mocks.CheckoutSourceApproved}
}

var createPayment = mocks.Match{Method: "POST", Path: "/payments"}

func (e *e2e) posts(route string) int { return e.fake.Truth().Requests["POST "+route] }

func (e *e2e) charges(op string) int { return e.fake.Truth().ChargesByReference()[op] }

func (e *e2e) attempts(t *testing.T, id string) (ledger.Operation, []ledger.Attempt) {
	t.Helper()
	op, atts, err := e.store.Get(e.ctx, id)
	require.NoError(t, err)
	return op, atts
}

func TestE2EChargeAndReplay(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.CheckoutOptions{})
	res, err := e.client.Charge(e.ctx, usd("order-1", 1999))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	p, ok := e.fake.Truth().Payment(res.ProviderRef)
	require.True(t, ok)
	require.Equal(t, res.OperationID, p.Reference)
	require.Equal(t, res.OperationID, p.Metadata[checkout.MetaOperation])
	require.Equal(t, int64(1999), p.AmountCaptured)

	again, err := e.client.Charge(e.ctx, usd("order-1", 1999))
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, 1, e.posts("/payments"))
	require.Equal(t, 1, e.charges(res.OperationID))
}

func TestE2EDecline(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.CheckoutOptions{})
	params := usd("order-declined", 1999)
	params.PaymentMethod = mocks.CheckoutSourceInsufficientFunds
	res, err := e.client.Charge(e.ctx, params)
	require.ErrorIs(t, err, payonce.ErrDeclined)
	var de *payonce.DeclinedError
	require.True(t, errors.As(err, &de))
	require.Equal(t, "declined", de.Code)
	require.Equal(t, "20051", de.DeclineCode)
	require.Equal(t, "Insufficient Funds", de.Message)
	require.Equal(t, payonce.ResultFailed, res.Status)
	_, err = e.client.Charge(e.ctx, params)
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, 1, e.posts("/payments"))
}

// Answers lost after the card was charged. FaultProcessed500 is the case
// that makes Checkout.com dangerous: its 500 is not cached under the key, so
// a blind resend would be a second payment (mocks' test
// TestCheckoutBlindResendAfter5xxChargesTwice shows it). The client looks
// the payment up by its reference first, finds it and sends nothing again.
func TestE2EAnswerLostAfterProcessing(t *testing.T) {
	t.Parallel()
	for _, f := range []mocks.FaultKind{mocks.FaultProcessed500, mocks.FaultDropAfterProcessing, mocks.FaultGatewayAfter502} {
		t.Run(f.String(), func(t *testing.T) {
			t.Parallel()
			e := e2eSetup(t, mocks.CheckoutOptions{})
			e.fake.Script(createPayment, f)
			res, err := e.client.Charge(e.ctx, usd("order-"+f.String(), 2500))
			require.NoError(t, err)
			require.Equal(t, payonce.ResultSucceeded, res.Status)
			truth := e.fake.Truth()
			require.Equal(t, map[string]int{res.OperationID: 1}, truth.ChargesByReference(), "charged exactly once")
			require.Equal(t, int64(2500), truth.TotalCharged("USD"))
			require.Equal(t, 1, e.posts("/payments"), "found by lookup: never sent again")
			_, atts := e.attempts(t, res.OperationID)
			require.Len(t, atts, 1)
			require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
		})
	}
}

// A 500 before anything happened: "not found" is believed only after the
// settle lag; then the resend (same key) makes the payment once.
func TestE2ENotFoundAfterSettleLagResends(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.CheckoutOptions{})
	e.fake.Script(createPayment, mocks.FaultStored500)
	res, err := e.client.Charge(e.ctx, usd("order-s500", 700))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "not found proves nothing before the settle lag")
	require.Zero(t, e.charges(res.OperationID))
	require.Equal(t, 1, e.posts("/payments"))

	e.clock.Advance(time.Minute)
	_, err = e.client.Charge(e.ctx, usd("order-s500", 700))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "still inside the settle lag")
	require.Equal(t, 1, e.posts("/payments"))

	e.clock.Advance(2 * time.Minute)
	res, err = e.client.Charge(e.ctx, usd("order-s500", 700))
	require.NoError(t, err)
	require.Equal(t, 1, e.charges(res.OperationID))
	_, atts := e.attempts(t, res.OperationID)
	require.Len(t, atts, 2)
	require.Equal(t, atts[0].Key, atts[1].Key)
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

func TestE2ERefundAndOverRefund(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.CheckoutOptions{})
	ch, err := e.client.Charge(e.ctx, usd("order-r", 1000))
	require.NoError(t, err)

	r1, err := settle(t, e.client.Refund, e.ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 1, Amount: 300, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r1.Status)
	require.Regexp(t, `^act_`, r1.ProviderRef)

	// A refund answered 500 after it was made is found among the actions.
	e.fake.Script(mocks.Match{Method: "POST", Path: "/payments/{id}/refunds"}, mocks.FaultProcessed500)
	r2, err := e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 2, Amount: 200, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r2.Status)

	// More than what is left: refused, nothing moves.
	r3, err := e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 3, Amount: 600, Currency: "USD"})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, payonce.ResultFailed, r3.Status)
	require.Contains(t, r3.Message, "refund_amount_exceeds_balance")

	// Amount 0 refunds what remains.
	r4, err := settle(t, e.client.Refund, e.ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 4, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r4.Status)

	truth := e.fake.Truth()
	require.Equal(t, int64(1000), truth.TotalRefunded("USD"))
	require.Equal(t, map[string]int{r1.OperationID: 1, r2.OperationID: 1, r4.OperationID: 1}, truth.RefundsByReference())
	p, _ := truth.Payment(ch.ProviderRef)
	require.Equal(t, "Refunded", p.Status)
	require.Equal(t, 4, e.posts("/payments/{id}/refunds"), "settling a 202 looks up; it never resends")
}

func TestE2ERefundDeclined(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.CheckoutOptions{})
	params := usd("order-rd", 1000)
	params.PaymentMethod = mocks.CheckoutSourceRefundDeclined
	_, err := e.client.Charge(e.ctx, params)
	require.NoError(t, err)
	res, err := settle(t, e.client.Refund, e.ctx, payonce.RefundParams{OrderID: "order-rd", RefundSeq: 1, Amount: 100, Currency: "USD"})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, payonce.ResultFailed, res.Status)
	require.Equal(t, "20005", res.DeclineCode)
	require.Zero(t, e.fake.Truth().TotalRefunded("USD"))
}

func TestE2ECaptureAndVoid(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.CheckoutOptions{})
	auth := usd("order-cap", 5000)
	auth.CaptureManual = true
	_, err := e.client.Charge(e.ctx, auth)
	require.NoError(t, err)
	require.Zero(t, e.fake.Truth().TotalCharged("USD"))
	c, err := settle(t, e.client.Capture, e.ctx, payonce.CaptureParams{OrderID: "order-cap", Amount: 4000, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, c.Status)
	require.Equal(t, int64(4000), e.fake.Truth().TotalCharged("USD"))

	held := usd("order-void", 800)
	held.CaptureManual = true
	_, err = e.client.Charge(e.ctx, held)
	require.NoError(t, err)
	v, err := settle(t, e.client.Cancel, e.ctx, payonce.CancelParams{OrderID: "order-void"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, v.Status)

	// A second capture of the voided payment is refused (403).
	_, err = e.client.Capture(e.ctx, payonce.CaptureParams{OrderID: "order-void", Currency: "USD"})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, int64(4000), e.fake.Truth().TotalCharged("USD"))
}
