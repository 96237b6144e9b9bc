package mocks_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/checkout"
)

const (
	testCkoKey  = "cko-signature-key-for-tests"
	testCkoAuth = "cko-authorization-for-tests"
)

func ckoHooks(t *testing.T, d mocks.WebhookDelivery) (*ckoBundle, *hookReceiver) {
	t.Helper()
	rec := newHookReceiver(t, ckoVerifier(testCkoKey, testCkoAuth))
	d.URL, d.Secret, d.Authorization = rec.URL(), testCkoKey, testCkoAuth
	if d.RetryAfter == 0 {
		d.RetryAfter = time.Millisecond
	}
	return ckoSetup(t, mocks.CheckoutOptions{Options: mocks.Options{Webhooks: d}}), rec
}

func ckoTypes(evs []mocks.CheckoutEvent) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func TestCheckoutWebhooksEveryChangeUnderFaults(t *testing.T) {
	b, rec := ckoHooks(t, mocks.WebhookDelivery{FailRate: 0.5, MaxAttempts: 40})
	paid := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(1000, mocks.CheckoutSourceApproved, "paid", true), "k1"), 201)
	auth := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(700, mocks.CheckoutSourceApproved, "auth", false), "k2"), 201)
	capt := decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+auth.ID+"/captures", map[string]any{}, "k3"), 202)
	voidable := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(300, mocks.CheckoutSourceApproved, "void", false), "k4"), 201)
	b.c.post("/payments/"+voidable.ID+"/voids", map[string]any{}, "k5")
	b.c.post("/payments", ckoPayment(200, mocks.CheckoutSourceDoNotHonour, "declined", true), "k6")
	b.c.post("/payments", ckoPayment(200, mocks.CheckoutSource3DS, "pending", true), "k7")
	refund := decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+paid.ID+"/refunds", map[string]any{"amount": 400}, "k8"), 202)
	nope := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(500, mocks.CheckoutSourceRefundDeclined, "nope", true), "k9"), 201)
	b.c.post("/payments/"+nope.ID+"/refunds", map[string]any{}, "k10")
	flush(t, b.f)

	st := b.f.WebhookStats()
	require.Zero(t, st.GaveUp)
	require.Positive(t, st.Failed)
	require.Equal(t, st.Queued, st.Delivered)
	require.Zero(t, rec.rejects(), "every delivery carries a valid Cko-Signature and the Authorization header")

	evs := events[mocks.CheckoutEvent](t, rec)
	require.ElementsMatch(t, []string{
		"payment_approved", "payment_captured", // paid
		"payment_approved", "payment_captured", // auth, then its capture
		"payment_approved", "payment_voided", // void
		"payment_declined", "payment_pending",
		"payment_refunded",
		"payment_approved", "payment_captured", "payment_refund_declined", // nope
	}, ckoTypes(evs))
	for _, e := range evs {
		require.Regexp(t, `^evt_[a-z2-7]{26}$`, e.ID)
		require.Regexp(t, `^pay_`, e.Data.ID)
		require.NotEmpty(t, e.CreatedOn)
		switch e.Type {
		case "payment_captured":
			if e.Data.ID == auth.ID {
				require.Equal(t, capt.ActionID, e.Data.ActionID, "an action's event names the action")
				require.Equal(t, int64(700), e.Data.Amount)
				require.Equal(t, "auth", e.Data.Reference, "and the payment's reference")
			}
		case "payment_refunded":
			require.Equal(t, refund.ActionID, e.Data.ActionID)
			require.Equal(t, int64(400), e.Data.Amount)
			require.Equal(t, "10000", e.Data.ResponseCode)
		case "payment_refund_declined":
			require.Equal(t, "20005", e.Data.ResponseCode)
		case "payment_declined":
			require.Equal(t, "20005", e.Data.ResponseCode)
			require.Equal(t, "declined", e.Data.Metadata["payonce_op"])
		}
	}
}

func TestCheckoutDeclineCapture(t *testing.T) {
	b, rec := ckoHooks(t, mocks.WebhookDelivery{})
	auth := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(700, mocks.CheckoutSourceApproved, "auth", false), "k1"), 201)
	capt := decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+auth.ID+"/captures", map[string]any{}, "k2"), 202)
	flush(t, b.f)

	require.ErrorContains(t, b.f.DeclineCapture(auth.ActionID), "pass the act_ id of an approved capture")
	require.ErrorContains(t, b.f.DeclineCapture("act_missing"), `no action "act_missing"`)
	require.NoError(t, b.f.DeclineCapture(capt.ActionID))
	require.ErrorContains(t, b.f.DeclineCapture(capt.ActionID), "approved false")
	flush(t, b.f)

	p := decode[mocks.CheckoutPayment](t, b.c.get("/payments/"+auth.ID), http.StatusOK)
	require.Equal(t, "Authorized", p.Status)
	require.Zero(t, p.Balances.TotalCaptured)
	require.Equal(t, int64(700), p.Balances.AvailableToCapture)
	acts := decode[[]mocks.CheckoutAction](t, b.c.get("/payments/"+auth.ID+"/actions"), http.StatusOK)
	require.False(t, acts[0].Approved, "the capture, newest first, is declined")
	require.Equal(t, "20006", acts[0].ResponseCode)
	require.Zero(t, b.f.Truth().Payments[0].AmountCaptured)

	evs := events[mocks.CheckoutEvent](t, rec)
	last := evs[len(evs)-1]
	require.Equal(t, "payment_capture_declined", last.Type)
	require.Equal(t, capt.ActionID, last.Data.ActionID)
	// It can be captured again.
	decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+auth.ID+"/captures", map[string]any{}, "k3"), 202)
}

// TestCheckoutWebhooksParseWithTheAdapter feeds the fake's deliveries to
// the Checkout.com adapter: they verify and settle what they speak of.
func TestCheckoutWebhooksParseWithTheAdapter(t *testing.T) {
	b, rec := ckoHooks(t, mocks.WebhookDelivery{})
	p, err := checkout.New(checkout.Config{SecretKey: b.f.SecretKey(), BaseURL: b.f.URL(),
		WebhookSecret: testCkoKey, WebhookAuthorization: testCkoAuth})
	require.NoError(t, err)
	body := ckoPayment(700, mocks.CheckoutSourceApproved, "op-7", false)
	body["metadata"] = map[string]string{"payonce_op": "op-7", "payonce_key": "key-7", "payonce_kind": "charge"}
	auth := decode[mocks.CheckoutPayment](t, b.c.post("/payments", body, "k1"), 201)
	capt := decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+auth.ID+"/captures", map[string]any{"amount": 500}, "k2"), 202)
	require.NoError(t, b.f.DeclineCapture(capt.ActionID))
	paid := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(1000, mocks.CheckoutSourceApproved, "op-8", true), "k3"), 201)
	refund := decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+paid.ID+"/refunds", map[string]any{"amount": 400}, "k4"), 202)
	flush(t, b.f)

	rec.mu.Lock()
	bodies, headers := rec.bodies, rec.headers
	rec.mu.Unlock()
	got := map[string]payonce.WebhookTarget{}
	var capturedCharge payonce.WebhookTarget
	for i, body := range bodies {
		r := httptest.NewRequest(http.MethodPost, "/webhooks/checkout", bytes.NewReader(body))
		r.Header = headers[i]
		evs, err := p.ParseWebhook(r, body)
		require.NoError(t, err, string(body))
		for _, ev := range evs {
			// payment_captured also says the charge succeeded: keep the
			// target of the event's own kind, for op-7's payment.
			for _, tg := range ev.Targets {
				switch {
				case tg.ProviderRef == paid.ID || (tg.PaymentRef == paid.ID && tg.Kind == payonce.KindCapture):
				case tg.Kind == payonce.KindCharge && ev.Type == "payment_captured":
					capturedCharge = tg
				default:
					got[ev.Type] = tg
				}
			}
		}
	}
	approved := got["payment_approved"]
	require.Equal(t, payonce.LookupSucceeded, approved.State)
	require.Equal(t, "op-7", approved.OperationID)
	// The payment's own event carries its key, amount and currency.
	require.Equal(t, "key-7", approved.Key)
	require.Equal(t, int64(700), approved.Amount)
	require.Equal(t, "USD", approved.Currency)
	captured := got["payment_captured"]
	require.Equal(t, payonce.LookupSucceeded, captured.State)
	require.Equal(t, capt.ActionID, captured.ProviderRef)
	// An action's event: the action's amount, the payment's metadata (so
	// no key for the capture).
	require.Equal(t, int64(500), captured.Amount)
	require.Empty(t, captured.Key)
	require.Equal(t, payonce.WebhookTarget{Kind: payonce.KindCharge, OperationID: "op-7", ProviderRef: auth.ID, Key: "key-7",
		Currency: "USD", State: payonce.LookupSucceeded}, capturedCharge, "the charge: its key and currency, not the capture's amount")
	declined := got["payment_capture_declined"]
	require.Equal(t, payonce.LookupFailed, declined.State)
	require.True(t, declined.Reversal, "a capture declined after it was accepted")
	require.Equal(t, int64(500), declined.Amount)
	refunded := got["payment_refunded"]
	require.Equal(t, refund.ActionID, refunded.ProviderRef)
	require.Equal(t, paid.ID, refunded.PaymentRef)
	require.Equal(t, int64(400), refunded.Amount, "the refund's amount, not the payment's")

	r := httptest.NewRequest(http.MethodPost, "/webhooks/checkout", bytes.NewReader(bodies[0]))
	r.Header = headers[0].Clone()
	r.Header.Set("Cko-Signature", hmacHex("another key", string(bodies[0])))
	_, err = p.ParseWebhook(r, bodies[0])
	require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated)
}

func TestCheckoutWebhookOptions(t *testing.T) {
	require.ErrorContains(t, mocks.CheckoutOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: "http://127.0.0.1:1/"}}}.Validate(),
		"CheckoutOptions.Webhooks.Secret is empty")
	require.ErrorContains(t, mocks.CheckoutOptions{
		Options: mocks.Options{
			Webhooks: mocks.WebhookDelivery{URL: "http://127.0.0.1:1/", Secret: "k",
				Username: "u", Password: "p"},
		},
	}.Validate(), "Checkout.com sends no Basic credentials")
	require.ErrorContains(t, mocks.CheckoutOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: "http://203.0.113.9/", Secret: "k"}}}.Validate(),
		"CheckoutOptions.Webhooks.URL")
}
