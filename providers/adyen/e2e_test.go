package adyen_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/adyen"
)

// e2e is a payonce.Client on a SQLite ledger in t.TempDir(), the Adyen
// adapter pointed at the fake, the client's webhook handler served on
// loopback, and one manual clock for all of them.
type e2e struct {
	fake   *mocks.Adyen
	clock  *mocks.ManualClock
	client *payonce.Client
	store  ledger.Store
	hooks  *httptest.Server
	ctx    context.Context
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	clock := mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	fake := mocks.NewAdyen(mocks.AdyenOptions{Clock: clock.Now, Seed: 7})
	t.Cleanup(fake.Close)
	user, pass := fake.WebhookCredentials()
	p, err := adyen.New(adyen.Config{APIKey: fake.APIKey(), MerchantAccount: fake.MerchantAccount(), BaseURL: fake.URL(),
		HMACKey: fake.HMACKey(), WebhookUsername: user, WebhookPassword: pass, Now: clock.Now})
	require.NoError(t, err)
	client, store := testkit.NewClient(t, p, clock.Now)
	h, err := client.WebhookHandler(payonce.WebhookOptions{})
	require.NoError(t, err)
	hooks := httptest.NewServer(h)
	t.Cleanup(hooks.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &e2e{fake: fake, clock: clock, client: client, store: store, hooks: hooks, ctx: ctx}
}

// deliver delivers every queued webhook to the client's handler.
func (e *e2e) deliver(t *testing.T) int {
	t.Helper()
	n, err := e.fake.DeliverWebhooks(e.ctx, e.hooks.URL, e.hooks.Client())
	require.NoError(t, err)
	return n
}

func eur(order string, amount int64, manual bool) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "EUR", PaymentMethod: mocks.AdyenMethodAuthorised,
		Customer: "shopper-42", CaptureManual: manual}
}

func TestE2EChargeCaptureByWebhook(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ch, err := e.client.Charge(e.ctx, eur("order-1", 1999, true))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, ch.Status)
	require.Len(t, ch.ProviderRef, 16)

	capture := payonce.CaptureParams{OrderID: "order-1", Amount: 1999, Currency: "EUR", PaymentRef: ch.ProviderRef}
	res, err := e.client.Capture(e.ctx, capture)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "201 received is not done")
	require.Equal(t, payonce.ResultUnknown, res.Status)

	// The webhooks settle it: AUTHORISATION confirms the charge, CAPTURE
	// settles the capture.
	require.Equal(t, 2, e.deliver(t))
	res, err = e.client.Capture(e.ctx, capture)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	tr := e.fake.Truth()
	require.Equal(t, 1, tr.Requests["POST /payments/{id}/captures"], "settled by the webhook: no second capture request")
	require.Equal(t, int64(1999), tr.Payments[0].AmountCaptured)

	// A redelivery changes nothing.
	entries, err := e.store.ListWebhooks(e.ctx, ledger.InboxFilter{Provider: "adyen"})
	require.NoError(t, err)
	require.Len(t, entries, 2)
}

func TestE2ERefundFailsLater(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ch, err := e.client.Charge(e.ctx, eur("order-2", 1000, false))
	require.NoError(t, err)
	refund := payonce.RefundParams{OrderID: "order-2", RefundSeq: 1, Amount: 400, Currency: "EUR", PaymentRef: ch.ProviderRef}
	_, err = e.client.Refund(e.ctx, refund)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	e.deliver(t)
	res, err := e.client.Refund(e.ctx, refund)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)

	// The scheme rejects the refund days later: REFUND_FAILED puts the
	// settled refund in review for an operator.
	require.True(t, e.fake.FailRefund(res.ProviderRef))
	require.Equal(t, 1, e.deliver(t))
	res, _ = e.client.Refund(e.ctx, refund)
	require.Equal(t, payonce.ResultManualReview, res.Status)
	entries, err := e.store.ListWebhooks(e.ctx, ledger.InboxFilter{Provider: "adyen", Disposition: ledger.WebhookContradiction})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "REFUND_FAILED", entries[0].Type)
}

func TestE2EDeclineAndForgery(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	p := eur("order-3", 500, false)
	p.PaymentMethod = mocks.AdyenMethodNotEnoughBalance
	_, err := e.client.Charge(e.ctx, p)
	var de *payonce.DeclinedError
	require.ErrorAs(t, err, &de)
	require.Equal(t, "12", de.DeclineCode)

	// A forged delivery (right credentials, wrong signature) is refused and
	// records nothing.
	bodies := e.fake.PendingWebhooks()
	require.Len(t, bodies, 1)
	forged := bytes.Replace(bodies[0], []byte(`"success":"false"`), []byte(`"success":"true"`), 1)
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, e.hooks.URL, bytes.NewReader(forged))
	require.NoError(t, err)
	req.SetBasicAuth(e.fake.WebhookCredentials())
	resp, err := e.hooks.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	// Without credentials: 401.
	resp, err = e.hooks.Client().Post(e.hooks.URL, "application/json", bytes.NewReader(bodies[0]))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	entries, err := e.store.ListWebhooks(e.ctx, ledger.InboxFilter{Provider: "adyen"})
	require.NoError(t, err)
	require.Empty(t, entries)
	require.Equal(t, 1, e.deliver(t), "the genuine one is accepted")
}

// TestE2EResendIsTheStatusRead: with no webhook, the client believes
// Lookup's "not found" only after WebhookLag, then resends with the same
// key; the fake answers from its idempotency store, and nothing is
// captured twice.
func TestE2EResendIsTheStatusRead(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	ch, err := e.client.Charge(e.ctx, eur("order-4", 800, true))
	require.NoError(t, err)
	capture := payonce.CaptureParams{OrderID: "order-4", Amount: 800, Currency: "EUR", PaymentRef: ch.ProviderRef}
	_, err = e.client.Capture(e.ctx, capture)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	_, err = e.client.Capture(e.ctx, capture)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Equal(t, 1, e.fake.Truth().Requests["POST /payments/{id}/captures"], "inside WebhookLag nothing is sent")

	e.clock.Advance(adyen.DefaultWebhookLag + time.Minute)
	_, err = e.client.Capture(e.ctx, capture)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	tr := e.fake.Truth()
	require.Equal(t, 2, tr.Requests["POST /payments/{id}/captures"], "after the lag: one resend with the same key")
	require.Equal(t, 1, tr.Replays, "answered from Adyen's idempotency store")
	require.Equal(t, int64(800), tr.Payments[0].AmountCaptured)

	e.deliver(t)
	res, err := e.client.Capture(e.ctx, capture)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
}
