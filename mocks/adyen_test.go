package mocks_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/adyen"
)

type adyBundle = fakeBundle[*mocks.Adyen]

func adySetup(t *testing.T, opts mocks.AdyenOptions) *adyBundle {
	t.Helper()
	clock := mocks.NewManualClock(epoch)
	opts.Clock = clock.Now
	f := mocks.NewAdyen(opts)
	t.Cleanup(f.Close)
	c := &client{t: t, base: f.URL(), keyHeader: "Idempotency-Key", hc: f.Client(),
		auth: func(r *http.Request) { r.Header.Set("X-API-Key", f.APIKey()) }}
	return &adyBundle{f: f, clock: clock, c: c}
}

func adyPayment(f *mocks.Adyen, amount int64, method, ref string, manual bool) map[string]any {
	p := map[string]any{"amount": map[string]any{"currency": "EUR", "value": amount}, "reference": ref,
		"merchantAccount": f.MerchantAccount(), "shopperReference": "shopper-1", "shopperInteraction": "ContAuth",
		"recurringProcessingModel": "UnscheduledCardOnFile",
		"paymentMethod":            map[string]any{"type": "scheme", "storedPaymentMethodId": method},
		"metadata":                 map[string]string{"payonce_op": ref}}
	if manual {
		p["additionalData"] = map[string]string{"manualCapture": "true"}
	}
	return p
}

func adyMod(f *mocks.Adyen, amount int64, ref string) map[string]any {
	m := map[string]any{"merchantAccount": f.MerchantAccount(), "reference": ref}
	if amount > 0 {
		m["amount"] = map[string]any{"currency": "EUR", "value": amount}
	}
	return m
}

// adapter is the Adyen adapter configured for f's webhooks.
func adyAdapter(t *testing.T, f *mocks.Adyen) *adyen.Provider {
	user, pass := f.WebhookCredentials()
	p, err := adyen.New(adyen.Config{APIKey: f.APIKey(), MerchantAccount: f.MerchantAccount(), BaseURL: f.URL(),
		HMACKey: f.HMACKey(), WebhookUsername: user, WebhookPassword: pass})
	require.NoError(t, err)
	return p
}

// parsed reads every queued webhook with the adapter (signature and basic
// auth checked), oldest first.
func parsed(t *testing.T, f *mocks.Adyen) []payonce.WebhookEvent {
	t.Helper()
	p := adyAdapter(t, f)
	var out []payonce.WebhookEvent
	for _, body := range f.PendingWebhooks() {
		r := httptest.NewRequest(http.MethodPost, "/webhooks/adyen", bytes.NewReader(body))
		r.SetBasicAuth(f.WebhookCredentials())
		evs, err := p.ParseWebhook(r, body)
		require.NoError(t, err)
		out = append(out, evs...)
	}
	return out
}

func TestAdyenPaymentLifecycle(t *testing.T) {
	t.Parallel()
	b := adySetup(t, mocks.AdyenOptions{})
	r := b.c.post("/payments", adyPayment(b.f, 1000, mocks.AdyenMethodAuthorised, "op-1", true), "k1")
	pay := decode[map[string]any](t, r, 200)
	require.Equal(t, "Authorised", pay["resultCode"])
	require.Equal(t, "op-1", pay["merchantReference"])
	require.Equal(t, "k1", r.header.Get("Idempotency-Key"))
	psp := pay["pspReference"].(string)
	require.Len(t, psp, 16)

	// Captures, cancels, refunds answer 201 received; the outcome is in the
	// webhook.
	capture := decode[map[string]any](t, b.c.post("/payments/"+psp+"/captures", adyMod(b.f, 1000, "op-2"), "k2"), 201)
	require.Equal(t, "received", capture["status"])
	require.Equal(t, psp, capture["paymentPspReference"])
	over := decode[map[string]any](t, b.c.post("/payments/"+psp+"/refunds", adyMod(b.f, 5000, "op-3"), "k3"), 201)
	refund := decode[map[string]any](t, b.c.post("/payments/"+psp+"/refunds", adyMod(b.f, 400, "op-4"), "k4"), 201)
	cancel := decode[map[string]any](t, b.c.post("/payments/"+psp+"/cancels", adyMod(b.f, 0, "op-5"), "k5"), 201)

	evs := parsed(t, b.f)
	type got struct {
		typ, ref string
		state    payonce.LookupState
	}
	var gots []got
	for _, ev := range evs {
		gots = append(gots, got{ev.Type, ev.Targets[0].ProviderRef, ev.Targets[0].State})
	}
	require.Equal(t, []got{
		{"AUTHORISATION", psp, payonce.LookupSucceeded},
		{"CAPTURE", capture["pspReference"].(string), payonce.LookupSucceeded},
		{"REFUND", over["pspReference"].(string), payonce.LookupFailed},
		{"REFUND", refund["pspReference"].(string), payonce.LookupSucceeded},
		{"CANCELLATION", cancel["pspReference"].(string), payonce.LookupFailed},
	}, gots)

	// The refund fails later at the scheme.
	require.True(t, b.f.FailRefund(refund["pspReference"].(string)))
	require.False(t, b.f.FailRefund(over["pspReference"].(string)), "a refund that failed cannot fail again")
	evs = parsed(t, b.f)
	last := evs[len(evs)-1]
	require.Equal(t, "REFUND_FAILED", last.Type)
	require.True(t, last.Targets[0].Reversal)

	tr := b.f.Truth()
	require.Len(t, tr.Payments, 1)
	require.Equal(t, int64(1000), tr.Payments[0].AmountCaptured)
	require.Equal(t, int64(0), tr.Payments[0].AmountRefunded)
	require.Len(t, tr.Refunds, 2)
}

func TestAdyenDeclinesAndRedirect(t *testing.T) {
	t.Parallel()
	b := adySetup(t, mocks.AdyenOptions{})
	pay := decode[map[string]any](t, b.c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodNotEnoughBalance, "op-d", false), "kd"), 200)
	require.Equal(t, "Refused", pay["resultCode"])
	require.Equal(t, "12", pay["refusalReasonCode"])
	redirect := decode[map[string]any](t, b.c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodRedirect, "op-r", false), "kr"), 200)
	require.Equal(t, "RedirectShopper", redirect["resultCode"])
	require.NotContains(t, redirect, "pspReference")
	evs := parsed(t, b.f)
	require.Len(t, evs, 1, "no webhook for a redirect")
	require.Equal(t, payonce.LookupFailed, evs[0].Targets[0].State)

	e := decode[mocks.AdyenError](t, b.c.post("/payments/NOSUCHPAYMENT/captures", adyMod(b.f, 100, "x"), "kx"), 422)
	require.Equal(t, "167", e.ErrorCode)
	c := *b.c
	c.auth = func(r *http.Request) { r.Header.Set("X-API-Key", "AQEwrong") }
	e = decode[mocks.AdyenError](t, c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodAuthorised, "op-a", false), "ka"), 401)
	require.Equal(t, "security", e.ErrorType)
}

func TestAdyenIdempotency(t *testing.T) {
	t.Parallel()
	b := adySetup(t, mocks.AdyenOptions{SlowFor: 300 * time.Millisecond})
	body := adyPayment(b.f, 700, mocks.AdyenMethodAuthorised, "op-i", false)
	first := b.c.post("/payments", body, "ki")
	require.Equal(t, 200, first.status)
	// Same key, same body: the first answer, replayed.
	again := b.c.post("/payments", body, "ki")
	require.Equal(t, first.body, again.body)
	// Same key, another body: Adyen documents no error; the first answer.
	other := b.c.post("/payments", adyPayment(b.f, 999, mocks.AdyenMethodAuthorised, "op-other", false), "ki")
	require.Equal(t, first.body, other.body)
	tr := b.f.Truth()
	require.Len(t, tr.Payments, 1)
	require.Equal(t, 1, tr.Replays)
	require.Equal(t, 1, tr.KeyMismatch)

	// A stored error is replayed too.
	b.f.Script(mocks.Match{Method: "POST", Path: "/payments"}, mocks.FaultStored500)
	require.Equal(t, 500, b.c.post("/payments", adyPayment(b.f, 1, mocks.AdyenMethodAuthorised, "op-500", false), "k500").status)
	require.Equal(t, 500, b.c.post("/payments", adyPayment(b.f, 1, mocks.AdyenMethodAuthorised, "op-500", false), "k500").status)

	// While the first request runs: 409 errorCode 704.
	b.f.Script(mocks.Match{Method: "POST", Path: "/payments"}, mocks.FaultSlow)
	slow := adyPayment(b.f, 5, mocks.AdyenMethodAuthorised, "op-slow", false)
	done := holdKey(t, b.f, b.c, "/payments", slow, "kslow")
	e := decode[mocks.AdyenError](t, b.c.post("/payments", slow, "kslow"), 409)
	require.Equal(t, "704", e.ErrorCode)
	<-done
	require.Equal(t, 1, b.f.Truth().KeyInUse)

	// After KeyTTL the key is new again.
	b.clock.Advance(mocks.AdyenKeyTTL + time.Second)
	require.Equal(t, 200, b.c.post("/payments", body, "ki").status)
	require.Len(t, b.f.Truth().Payments, 3)
}

func TestAdyenDeliverWebhooksRetries(t *testing.T) {
	t.Parallel()
	b := adySetup(t, mocks.AdyenOptions{})
	p := adyAdapter(t, b.f)
	decode[map[string]any](t, b.c.post("/payments", adyPayment(b.f, 100, mocks.AdyenMethodAuthorised, "op-w", false), "kw"), 200)
	var mu sync.Mutex
	fail := true
	var got []payonce.WebhookEvent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		evs, err := p.ParseWebhook(r, body.Bytes())
		if err != nil || fail {
			fail = false
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		got = append(got, evs...)
		_, _ = w.Write([]byte("[accepted]"))
	}))
	t.Cleanup(srv.Close)
	n, err := b.f.DeliverWebhooks(context.Background(), srv.URL, srv.Client())
	require.Error(t, err)
	require.Zero(t, n)
	require.Len(t, b.f.PendingWebhooks(), 1, "a failed delivery stays queued")
	n, err = b.f.DeliverWebhooks(context.Background(), srv.URL, srv.Client())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, b.f.PendingWebhooks())
	require.Len(t, got, 1)
	require.Equal(t, "AUTHORISATION", got[0].Type)
}

func TestAdyenOptionsValidate(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, mocks.AdyenOptions{HMACKey: "zz"}.Validate(), "hex")
	require.ErrorContains(t, mocks.AdyenOptions{WebhookUsername: "u"}.Validate(), "together")
	require.ErrorContains(t, mocks.AdyenOptions{KeyTTL: -1}.Validate(), "KeyTTL")
	require.NoError(t, mocks.AdyenOptions{}.Validate())
}
