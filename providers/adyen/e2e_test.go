package adyen_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/adyen"
	"github.com/payonce/payonce/providers/providertest"
)

// e2e is a payonce.Client on a SQLite ledger in t.TempDir(), the Adyen
// adapter pointed at the fake, the client's webhook handler served on
// a providertest.Receiver that holds the fake's deliveries back until
// deliver, and one manual clock for all of them.
type e2e struct {
	fake      *mocks.Adyen
	clock     *mocks.ManualClock
	client    *payonce.Client
	store     ledger.Store
	hooks     *providertest.Receiver
	ctx       context.Context
	delivered int // WebhookStats().Delivered after the last deliver
}

func newE2E(t *testing.T, mods ...func(*mocks.AdyenOptions)) *e2e {
	t.Helper()
	clock := mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	// The receiver starts first, so that the fake knows where to deliver;
	// its handler is the client's, set once the client exists, before any
	// event.
	hooks := providertest.StartReceiver(t)
	hooks.Hold()
	wh := hooks.Delivery()
	wh.Secret, wh.Username, wh.Password = testHMAC, whUser, whPass
	opts := mocks.AdyenOptions{Options: mocks.Options{Clock: clock.Now, Seed: 7, Webhooks: wh}}
	for _, mod := range mods {
		mod(&opts)
	}
	fake := mocks.NewAdyen(opts)
	t.Cleanup(fake.Close)
	p, err := adyen.New(adyen.Config{APIKey: fake.APIKey(), MerchantAccount: fake.MerchantAccount(), BaseURL: fake.URL(),
		HMACKey: testHMAC, WebhookUsername: whUser, WebhookPassword: whPass, Now: clock.Now})
	require.NoError(t, err)
	client, store := testkit.NewClient(t, p, clock.Now)
	h, err := client.WebhookHandler(payonce.WebhookOptions{})
	require.NoError(t, err)
	hooks.Serve(h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &e2e{fake: fake, clock: clock, client: client, store: store, hooks: hooks, ctx: ctx}
}

// deliver lets every webhook queued so far through to the client's
// handler and returns how many deliveries it accepted (2xx).
func (e *e2e) deliver(t *testing.T) int {
	t.Helper()
	e.hooks.Release()
	defer e.hooks.Hold()
	require.NoError(t, e.fake.FlushWebhooks(e.ctx))
	st := e.fake.WebhookStats()
	require.Zero(t, st.GaveUp, "every delivery was accepted")
	n := st.Delivered - e.delivered
	e.delivered = st.Delivered
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

	// The genuine AUTHORISATION (success false) is accepted.
	require.Equal(t, 1, e.deliver(t))
	accepted := e.hooks.Accepted()
	require.Len(t, accepted, 1)
	genuine := accepted[0]
	require.NotEmpty(t, genuine.Header.Get("Authorization"), "the fake sends the endpoint's Basic credentials")

	// A forged delivery (right credentials, wrong signature) is refused and
	// records nothing: its event would be another one (success true).
	forged := providertest.Delivery{Header: genuine.Header.Clone(), RemoteAddr: genuine.RemoteAddr,
		Body: bytes.Replace(genuine.Body, []byte(`"success":"false"`), []byte(`"success":"true"`), 1)}
	require.NotEqual(t, genuine.Body, forged.Body)
	require.Equal(t, http.StatusBadRequest, e.hooks.Direct(forged))
	// Without credentials: 401.
	anonymous := providertest.Delivery{Body: genuine.Body, Header: genuine.Header.Clone(), RemoteAddr: genuine.RemoteAddr}
	anonymous.Header.Del("Authorization")
	require.Equal(t, http.StatusUnauthorized, e.hooks.Direct(anonymous))
	entries, err := e.store.ListWebhooks(e.ctx, ledger.InboxFilter{Provider: "adyen"})
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the genuine delivery is recorded")
	require.True(t, strings.HasSuffix(entries[0].ID, ":AUTHORISATION:false"), entries[0].ID)
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

// TestE2EStoredErrorIsFinalForTheKey: Adyen stores an error it does not
// mark Transient-Error: true as the key's final answer. The client must not
// resend under that key (every resend would be answered the same 500): it
// waits for the webhook, and the payment is never made twice.
func TestE2EStoredErrorIsFinalForTheKey(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	e.fake.Script(mocks.Match{Method: http.MethodPost, Path: "/payments"}, mocks.FaultStored500)
	p := eur("order-500", 700, false)
	_, err := e.client.Charge(e.ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

	e.clock.Advance(adyen.DefaultWebhookLag + time.Minute)
	_, err = e.client.Charge(e.ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "nothing answers it but a webhook")
	tr := e.fake.Truth()
	require.Equal(t, 1, tr.Requests["POST /payments"], "no resend under a key whose answer is final")
	require.Empty(t, tr.Payments)
	res, err := e.client.Status(e.ctx, payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "order-500"})
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Equal(t, payonce.ResultUnknown, res.Status)
}

// TestE2ETransientErrorIsResent: an error marked Transient-Error: true is
// not kept under the key; after the lookup lag the client resends with the
// same key, which Adyen processes as the first request: one payment.
func TestE2ETransientErrorIsResent(t *testing.T) {
	t.Parallel()
	e := newE2E(t, func(o *mocks.AdyenOptions) { o.TransientErrors = true })
	e.fake.Script(mocks.Match{Method: http.MethodPost, Path: "/payments"}, mocks.FaultStored500)
	p := eur("order-transient", 700, false)
	_, err := e.client.Charge(e.ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

	e.clock.Advance(adyen.DefaultWebhookLag + time.Minute)
	res, err := e.client.Charge(e.ctx, p)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	tr := e.fake.Truth()
	require.Equal(t, 2, tr.Requests["POST /payments"])
	require.Len(t, tr.Payments, 1)
	require.Equal(t, adyen.IdempotencyKey(e.fake.MerchantAccount(), res.Key), tr.Payments[0].IdempotencyKey, "the resend carried the same key")
}

// TestE2EKeyInUse: while the key's first request runs, the fake answers
// errorCode 704 with 409 or with 422 (as Adyen does), marked
// Transient-Error: true; the adapter reads both as key_in_use, never as a
// refusal, and the first request's answer follows for the same key.
func TestE2EKeyInUse(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusConflict, http.StatusUnprocessableEntity} {
		fake := mocks.NewAdyen(mocks.AdyenOptions{Options: mocks.Options{SlowFor: 300 * time.Millisecond}, KeyInUseStatus: status})
		t.Cleanup(fake.Close)
		p, err := adyen.New(adyen.Config{APIKey: fake.APIKey(), MerchantAccount: fake.MerchantAccount(), BaseURL: fake.URL()})
		require.NoError(t, err)
		r := chargeReq()
		r.Request.PaymentMethod = mocks.AdyenMethodAuthorised
		// send makes one attempt; it runs on other goroutines too, so it
		// returns its failure instead of failing the test.
		send := func() (payonce.Outcome, error) {
			hr, err := p.NewRequest(context.Background(), r)
			if err != nil {
				return payonce.Outcome{}, err
			}
			resp, err := fake.Client().Do(hr)
			if err != nil {
				return payonce.Outcome{}, err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return payonce.Outcome{}, err
			}
			o := p.Classify(r, resp.StatusCode, resp.Header, body)
			o.HTTPStatus = resp.StatusCode
			if o.Class == ledger.OutcomeKeyInUse && resp.Header.Get("Transient-Error") != "true" {
				return o, errors.New("704 without Transient-Error: true")
			}
			return o, nil
		}
		fake.Script(mocks.Match{Method: http.MethodPost, Path: "/payments"}, mocks.FaultSlow)
		type sent struct {
			o   payonce.Outcome
			err error
		}
		first := make(chan sent, 1)
		go func() { o, err := send(); first <- sent{o, err} }()
		require.Eventually(t, func() bool { return fake.PendingFaults() == 0 }, 2*time.Second, time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		o, err := send()
		require.NoError(t, err)
		require.Equal(t, status, o.HTTPStatus)
		require.Equal(t, ledger.OutcomeKeyInUse, o.Class, "%d 704 is the key in use, not a refusal", status)
		require.Equal(t, "704", o.Code)
		f := <-first
		require.NoError(t, f.err)
		require.Equal(t, ledger.OutcomeSuccess, f.o.Class)
		again, err := send()
		require.NoError(t, err)
		require.Equal(t, ledger.OutcomeSuccess, again.Class)
		require.Equal(t, f.o.ProviderRef, again.ProviderRef)
		require.Len(t, fake.Truth().Payments, 1)
	}
}
