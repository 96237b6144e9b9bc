package paypal_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
	"github.com/payonce/payonce/providers/providertest"
)

// The end-to-end tests drive payonce.Client against the fake PayPal
// (mocks.NewPayPal), with a SQLite ledger and one manual clock shared by
// the fake, the adapter and the client.

// e2eEnv is the fake PayPal with opts (its clock set) and the adapter
// pointed at it.
func e2eEnv(opts mocks.PayPalOptions) func(*testing.T, providertest.Options) *providertest.Env {
	return func(t *testing.T, o providertest.Options) *providertest.Env {
		opts.Clock = o.Clock.Now
		fake := mocks.NewPayPal(opts)
		t.Cleanup(fake.Close)
		psp, err := paypal.New(paypal.Config{ClientID: fake.ClientID(), ClientSecret: fake.ClientSecret(), BaseURL: fake.URL(), Now: o.Clock.Now})
		require.NoError(t, err)
		return &providertest.Env{Provider: psp, Fake: fake}
	}
}

func ppFake(e *testkit.E2E) *mocks.PayPal { return e.Fake.(*mocks.PayPal) }

func usd(order string, amount int64, method string) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "USD", PaymentMethod: method}
}

func attempts(t *testing.T, e *testkit.E2E, id string) []ledger.Attempt {
	t.Helper()
	_, atts, err := e.Store.Get(e.Ctx, id)
	require.NoError(t, err)
	return atts
}

// Charges with a saved card and a saved wallet, and of an order the payer
// approved; each is one payment at PayPal, attributed by custom_id.
func TestE2ECharges(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
	fake := ppFake(e)
	card, err := e.Client.Charge(e.Ctx, usd("order-card", 1999, mocks.PayPalVaultApproved))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, card.Status)
	wallet, err := e.Client.Charge(e.Ctx, usd("order-wallet", 500, mocks.PayPalWalletApproved))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, wallet.Status)
	orderID := fake.ApproveOrder("CAPTURE", 2500, "USD")
	approved, err := e.Client.Charge(e.Ctx, usd("order-approved", 2500, paypal.MethodOrder+orderID))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, approved.Status)

	truth := fake.Truth()
	for _, r := range []payonce.Result{card, wallet} {
		p, ok := truth.Payment(r.ProviderRef)
		require.True(t, ok, "the charge's ref is the capture id")
		require.Equal(t, r.OperationID, p.Reference, "custom_id is the operation id")
	}
	require.Equal(t, int64(1999+500+2500), truth.TotalCharged("USD"))
	require.Equal(t, 2, e.Posts("/v2/checkout/orders"))
	require.Equal(t, 1, e.Posts("/v2/checkout/orders/{id}/capture"))

	// Declined and 3-D Secure.
	res, err := e.Client.Charge(e.Ctx, usd("order-declined", 700, mocks.PayPalVaultDeclined))
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, "5120", res.DeclineCode)
	res, err = e.Client.Charge(e.Ctx, usd("order-3ds", 700, mocks.PayPalVaultPayerAction))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the order waits for the payer")
	require.Equal(t, payonce.ResultUnknown, res.Status)
}

// Authorize, then capture part; authorize, then void; partial refunds.
func TestE2ECaptureCancelRefunds(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
	fake := ppFake(e)

	p := usd("order-auth", 3000, mocks.PayPalVaultApproved)
	p.CaptureManual = true
	auth, err := e.Client.Charge(e.Ctx, p)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, auth.Status)
	capt, err := e.Client.Capture(e.Ctx, payonce.CaptureParams{OrderID: "order-auth", Amount: 2000, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, capt.Status)
	require.NotEqual(t, auth.ProviderRef, capt.ProviderRef, "the capture has its own id")

	// An authorization approved on PayPal's page, then voided.
	orderID := fake.ApproveOrder("AUTHORIZE", 1200, "USD")
	p = usd("order-void", 1200, paypal.MethodOrder+orderID)
	p.CaptureManual = true
	_, err = e.Client.Charge(e.Ctx, p)
	require.NoError(t, err)
	void, err := e.Client.Cancel(e.Ctx, payonce.CancelParams{OrderID: "order-void"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, void.Status)

	// Two partial refunds of a captured charge, then a third of the rest.
	ch, err := e.Client.Charge(e.Ctx, usd("order-refund", 1000, mocks.PayPalVaultApproved))
	require.NoError(t, err)
	for i, amount := range []int64{300, 200, 0} {
		r, err := e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-refund", RefundSeq: i + 1, Amount: amount, Currency: "USD", PaymentRef: ch.ProviderRef})
		require.NoError(t, err, "refund %d", i+1)
		require.Equal(t, payonce.ResultSucceeded, r.Status)
	}
	truth := fake.Truth()
	require.Equal(t, int64(1000), truth.TotalRefunded("USD"))
	require.Equal(t, 1, e.Posts("/v2/payments/authorizations/{id}/capture"))
	require.Equal(t, 1, e.Posts("/v2/payments/authorizations/{id}/void"))
	require.Equal(t, 3, e.Posts("/v2/payments/captures/{id}/refund"))

	// A refund PayPal fails.
	ch, err = e.Client.Charge(e.Ctx, usd("order-refund-fails", 1000, mocks.PayPalVaultRefundDeclined))
	require.NoError(t, err)
	r, err := e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-refund-fails", RefundSeq: 1, Amount: 100, Currency: "USD", PaymentRef: ch.ProviderRef})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, payonce.ResultFailed, r.Status)
}

// The answer to the order is lost after PayPal made it: no id was ever
// recorded, so the lookup finds nothing and proves nothing; inside the
// window the client resends under the same PayPal-Request-Id, and PayPal
// answers with the latest status of the first request: one payment.
func TestE2ELostAnswerResolvedByRepeat(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
	fake := ppFake(e)
	fake.Script(mocks.Match{Method: http.MethodPost, Path: "/v2/checkout/orders"}, mocks.FaultDropAfterProcessing)
	res, err := e.Client.Charge(e.Ctx, usd("order-lost", 4200, mocks.PayPalVaultApproved))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, map[string]int{res.OperationID: 1}, fake.Truth().ChargesByReference())
	atts := attempts(t, e, res.OperationID)
	require.Len(t, atts, 2)
	require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
	require.Equal(t, atts[0].Key, atts[1].Key, "the repeat is under the same request id")
	require.Equal(t, 200, atts[1].HTTPStatus, "a repeat answers 200 with the latest status")
	require.Equal(t, 2, e.Posts("/v2/checkout/orders"))
}

// A request whose first transmission still runs at PayPal meets 409
// PREVIOUS_REQUEST_IN_PROGRESS: key_in_use, nothing sent again until it
// settles, and one payment in the end.
func TestE2EKeyInUse(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{Options: mocks.Options{SlowFor: 10 * time.Minute}}))
	fake := ppFake(e)
	fake.Script(mocks.Match{Method: http.MethodPost, Path: "/v2/checkout/orders"}, mocks.FaultSlow)
	p := usd("order-in-use", 3100, mocks.PayPalVaultApproved)
	res, err := e.Client.Charge(e.Ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the attempt timed out; PayPal still runs it")
	id := res.OperationID

	e.Clock.Advance(time.Minute)
	_, err = e.Client.Charge(e.Ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the first request still runs")
	atts := attempts(t, e, id)
	require.GreaterOrEqual(t, len(atts), 2)
	for _, a := range atts[1:] {
		require.Equal(t, ledger.OutcomeKeyInUse, a.Outcome)
		require.Equal(t, http.StatusConflict, a.HTTPStatus)
		require.Equal(t, atts[0].Key, a.Key)
	}
	require.Empty(t, fake.Truth().Payments)

	fake.Release()
	require.Eventually(t, func() bool { return len(fake.Truth().Payments) == 1 }, 10*time.Second, 5*time.Millisecond)
	// The lookup finds nothing (no id was ever answered); the client's
	// next resend, under the same request id and spaced out after three
	// attempts, is the lookup PayPal answers.
	e.Clock.Advance(30 * time.Minute)
	res, err = e.Client.Charge(e.Ctx, p)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, map[string]int{id: 1}, fake.Truth().ChargesByReference())
}

// Tokens: one is fetched and reused; once it expires (driven clock) a new
// one is fetched; one PayPal revokes early answers 401, the attempt is not
// sent, and the next attempt fetches a new token.
func TestE2ETokenExpiresMidRun(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{TokenTTL: time.Hour}))
	fake := ppFake(e)
	tokens := func() int { return e.Posts("/v1/oauth2/token") }
	for _, o := range []string{"t-1", "t-2"} {
		_, err := e.Client.Charge(e.Ctx, usd(o, 100, mocks.PayPalVaultApproved))
		require.NoError(t, err)
	}
	require.Equal(t, 1, tokens(), "the token is reused")

	e.Clock.Advance(time.Hour)
	_, err := e.Client.Charge(e.Ctx, usd("t-3", 100, mocks.PayPalVaultApproved))
	require.NoError(t, err)
	require.Equal(t, 2, tokens(), "an expired token is replaced before it is used")

	fake.ExpireTokens()
	res, err := e.Client.Charge(e.Ctx, usd("t-4", 100, mocks.PayPalVaultApproved))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, 3, tokens(), "a 401 fetches a new token once")
	atts := attempts(t, e, res.OperationID)
	require.Len(t, atts, 2)
	require.Equal(t, ledger.OutcomeNotSent, atts[0].Outcome)
	require.Equal(t, http.StatusUnauthorized, atts[0].HTTPStatus)
	require.Equal(t, 1, fake.Truth().ChargesByReference()[res.OperationID])
}

// A charge whose answer was lost, looked at again only after PayPal's 6 h
// Orders window: the lookup cannot prove anything and a resend under the
// same request id would be a new order, so the operation goes to review and
// nothing is sent again.
func TestE2EPastTheOrdersWindowGoesToReview(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
	fake := ppFake(e)
	// The order is made and its answer lost; the repeats meet a proxy's
	// 502 until the caller gives up for now.
	charge := mocks.Match{Method: http.MethodPost, Path: "/v2/checkout/orders"}
	fake.Script(charge, mocks.FaultDropAfterProcessing)
	for range 20 {
		fake.Script(charge, mocks.FaultGatewayBefore502)
	}
	p := usd("order-late", 5000, mocks.PayPalVaultApproved)
	_, err := e.Client.Charge(e.Ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	fake.ClearScripts()
	posts := e.Posts("/v2/checkout/orders")

	e.Clock.Advance(paypal.DefaultOrdersKeyTTL + time.Minute)
	res, err := e.Client.Charge(e.Ctx, p)
	require.ErrorIs(t, err, payonce.ErrManualReview)
	require.Equal(t, payonce.ResultManualReview, res.Status)
	require.Equal(t, payonce.ReasonWindowPassed, res.ReviewReason)
	require.Equal(t, posts, e.Posts("/v2/checkout/orders"), "nothing sent again")
	require.Equal(t, map[string]int{res.OperationID: 1}, fake.Truth().ChargesByReference())
}

// PayPal refunds captures (POST /v2/payments/captures/{id}/refund), and a
// capture of an authorization has an id of its own: a refund of a
// manual-capture charge made without PaymentRef acts on the capture's id
// (ProviderInfo.RefundsCapture), never the authorization's, on every
// attempt and every repeat of the call; one of a charge not captured yet is
// refused before anything is sent.
func TestE2ERefundOfAManualCaptureActsOnTheCapture(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
	fake := ppFake(e)
	p := usd("order-mc", 3000, mocks.PayPalVaultApproved)
	p.CaptureManual = true
	auth, err := e.Client.Charge(e.Ctx, p)
	require.NoError(t, err)
	capt, err := e.Client.Capture(e.Ctx, payonce.CaptureParams{OrderID: "order-mc", Amount: 2000, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, capt.Status)
	require.NotEqual(t, auth.ProviderRef, capt.ProviderRef)

	rf, err := e.Client.Refundable(e.Ctx, "order-mc")
	require.NoError(t, err)
	require.Equal(t, capt.ProviderRef, rf.PaymentRef, "what a refund acts on")
	require.Equal(t, int64(2000), rf.Captured)

	recordedRef := func(opID string) string {
		t.Helper()
		op, _, err := e.Store.Get(e.Ctx, opID)
		require.NoError(t, err)
		req, err := payonce.ParseRequest(op.Request)
		require.NoError(t, err)
		return req.PaymentRef
	}
	refund := payonce.RefundParams{OrderID: "order-mc", RefundSeq: 1, Amount: 500, Currency: "USD"}
	r1, err := e.Client.Refund(e.Ctx, refund)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r1.Status)
	require.Equal(t, capt.ProviderRef, recordedRef(r1.OperationID), "the capture's id, not the authorization's")
	truth := fake.Truth()
	require.Len(t, truth.Refunds, 1)
	require.Equal(t, capt.ProviderRef, truth.Refunds[0].PaymentID)
	require.Equal(t, r1.OperationID, truth.Refunds[0].Reference)

	// The same refund again: the same reference, so the same request (a
	// different one would be a fingerprint mismatch); nothing is sent.
	again, err := e.Client.Refund(e.Ctx, refund)
	require.NoError(t, err)
	require.Equal(t, r1.OperationID, again.OperationID)
	require.Equal(t, payonce.ResultSucceeded, again.Status)
	require.Equal(t, 1, e.Posts("/v2/payments/captures/{id}/refund"))

	// A second refund whose answer is lost after PayPal made it: every
	// attempt and the repeat of the call name the capture; the refund is
	// found by lookup in the order's payments.refunds or by the same-id
	// repeat, and made once.
	fake.Script(mocks.Match{Method: http.MethodPost, Path: "/v2/payments/captures/{id}/refund"}, mocks.FaultDropAfterProcessing)
	refund2 := payonce.RefundParams{OrderID: "order-mc", RefundSeq: 2, Amount: 700, Currency: "USD"}
	r2, err := e.Client.Refund(e.Ctx, refund2)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r2.Status)
	require.Equal(t, capt.ProviderRef, recordedRef(r2.OperationID))
	atts := attempts(t, e, r2.OperationID)
	require.Len(t, atts, 1, "found by lookup in the order's payments.refunds: never sent again")
	require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
	require.Equal(t, 2, e.Posts("/v2/payments/captures/{id}/refund"))
	again, err = e.Client.Refund(e.Ctx, refund2)
	require.NoError(t, err)
	require.Equal(t, r2.OperationID, again.OperationID)
	truth = fake.Truth()
	require.Len(t, truth.Refunds, 2, "one refund per RefundSeq")
	require.Equal(t, capt.ProviderRef, truth.Refunds[1].PaymentID)
	require.Equal(t, int64(1200), truth.TotalRefunded("USD"))
	rf, err = e.Client.Refundable(e.Ctx, "order-mc")
	require.NoError(t, err)
	require.Equal(t, int64(800), rf.Remaining)
	require.Equal(t, capt.ProviderRef, rf.PaymentRef)

	// Authorized, not captured: refused before anything is sent.
	p = usd("order-held", 1000, mocks.PayPalVaultApproved)
	p.CaptureManual = true
	held, err := e.Client.Charge(e.Ctx, p)
	require.NoError(t, err)
	before := fake.Truth()
	for _, amount := range []int64{100, 0} { // part, and "the rest"
		res, err := e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-held", RefundSeq: 1, Amount: amount, Currency: "USD"})
		var verr *payonce.ValidationError
		require.ErrorAs(t, err, &verr, "a caller's error, said before sending")
		require.ErrorContains(t, err, `order "order-held"`)
		require.ErrorContains(t, err, "authorized only: capture it before refunding", "nothing was captured that a refund could return")
		require.Empty(t, res.OperationID, "nothing recorded")
	}
	_, err = e.Client.Status(e.Ctx, payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "order-held", RefundSeq: 1})
	require.ErrorIs(t, err, payonce.ErrNotFound, "no refund recorded")
	after := fake.Truth()
	require.Equal(t, before.Requests, after.Requests, "no request reached PayPal")
	require.Len(t, after.Refunds, 2)
	p2, ok := after.Payment(held.ProviderRef)
	require.True(t, ok)
	require.Zero(t, p2.AmountRefunded)
}

// HUF and TWD: PayPal takes no decimals for them, payonce counts ISO 4217
// minor units (2 decimals); the fake's Truth counts as the ledger does.
// JPY has no decimals in either.
func TestE2EZeroDecimalCurrencies(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
	fake := ppFake(e)
	for _, tc := range []struct {
		currency     string
		amount, part int64
	}{
		{currency: "HUF", amount: 150000, part: 40000}, // "1500" and "400" at PayPal
		{currency: "TWD", amount: 1000, part: 300},     // "10" and "3"
		{currency: "JPY", amount: 1500, part: 400},
	} {
		order := "order-" + tc.currency
		ch, err := e.Client.Charge(e.Ctx, payonce.ChargeParams{OrderID: order, Amount: tc.amount, Currency: tc.currency, PaymentMethod: mocks.PayPalVaultApproved})
		require.NoError(t, err, tc.currency)
		require.Equal(t, payonce.ResultSucceeded, ch.Status)
		rf, err := e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: order, RefundSeq: 1, Amount: tc.part, Currency: tc.currency})
		require.NoError(t, err, tc.currency)
		require.Equal(t, payonce.ResultSucceeded, rf.Status)

		truth := fake.Truth()
		require.Equal(t, tc.amount, truth.TotalCharged(tc.currency), "Truth in the ledger's units")
		require.Equal(t, tc.part, truth.TotalRefunded(tc.currency))
		p, ok := truth.Payment(ch.ProviderRef)
		require.True(t, ok)
		require.Equal(t, tc.amount, p.Amount)
		r, err := e.Client.Refundable(e.Ctx, order)
		require.NoError(t, err)
		require.Equal(t, tc.amount-tc.part, r.Remaining)
	}
}
