package mocks_test

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

// ykVerifier checks what a YooKassa receiver can check: the source
// address (YooKassa signs nothing). The fake posts from loopback.
func ykVerifier(r *http.Request, _ []byte) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback() && r.Header.Get("Authorization") == ""
}

func TestYooKassaWebhooksEveryChangeUnderFaults(t *testing.T) {
	rec := newHookReceiver(t, ykVerifier)
	b := ykSetup(t, mocks.YooKassaOptions{Webhooks: mocks.WebhookDelivery{URL: rec.URL(),
		FailRate: 0.5, MaxAttempts: 40, RetryAfter: time.Millisecond}})
	paid := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("10.00", "RUB", mocks.YooKassaMethodSucceeds, true), "k1"), 200)
	auth := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("5.00", "RUB", mocks.YooKassaMethodSucceeds, false), "k2"), 200)
	b.c.post("/v3/payments/"+auth.ID+"/capture", map[string]any{}, "k3")
	voidable := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("3.00", "RUB", mocks.YooKassaMethodSucceeds, false), "k4"), 200)
	b.c.post("/v3/payments/"+voidable.ID+"/cancel", map[string]any{}, "k5")
	b.c.post("/v3/payments", ykPayment("2.00", "RUB", mocks.YooKassaMethodInsufficientFunds, true), "k6")
	b.c.post("/v3/payments", ykPayment("2.00", "RUB", mocks.YooKassaMethodNeedsConfirmation, true), "k7") // pending: no event
	rf := decode[mocks.YooKassaRefund](t, b.c.post("/v3/refunds", map[string]any{"payment_id": paid.ID,
		"amount": map[string]string{"value": "4.00", "currency": "RUB"}}, "k8"), 200)
	bad := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("6.00", "RUB", mocks.YooKassaMethodRefundFails, true), "k9"), 200)
	b.c.post("/v3/refunds", map[string]any{"payment_id": bad.ID, "amount": map[string]string{"value": "6.00", "currency": "RUB"}}, "k10") // canceled: no event
	flush(t, b.f)

	st := b.f.WebhookStats()
	require.Zero(t, st.GaveUp)
	require.Positive(t, st.Failed)
	require.Zero(t, rec.rejects())

	evs := events[mocks.YooKassaNotification](t, rec)
	var got []string
	for _, e := range evs {
		require.Equal(t, "notification", e.Type)
		got = append(got, e.Event)
	}
	require.ElementsMatch(t, []string{
		"payment.succeeded",                                // paid
		"payment.waiting_for_capture", "payment.succeeded", // auth, captured
		"payment.waiting_for_capture", "payment.canceled", // voidable
		"payment.canceled",  // declined
		"refund.succeeded",  // rf
		"payment.succeeded", // bad
	}, got)
	rec.mu.Lock()
	for _, h := range rec.headers {
		require.Empty(t, h.Get("Authorization"), "YooKassa sends no credentials")
	}
	rec.mu.Unlock()
	for _, e := range evs {
		if e.Event == "refund.succeeded" {
			sameJSON(t, b.c.get("/v3/refunds/"+rf.ID).body, e.Object)
		}
		if e.Event == "payment.canceled" {
			var p mocks.YooKassaPayment
			require.NoError(t, json.Unmarshal(e.Object, &p))
			if p.ID == voidable.ID {
				sameJSON(t, b.c.get("/v3/payments/"+voidable.ID).body, e.Object)
			}
		}
	}
}

func TestYooKassaWebhookOptions(t *testing.T) {
	require.ErrorContains(t, mocks.YooKassaOptions{Webhooks: mocks.WebhookDelivery{URL: "http://127.0.0.1:1/", Secret: "s"}}.Validate(),
		"YooKassa neither signs notifications nor sends credentials")
	require.ErrorContains(t, mocks.YooKassaOptions{Webhooks: mocks.WebhookDelivery{URL: "http://198.51.100.7/"}}.Validate(),
		"YooKassaOptions.Webhooks.URL")
	require.NoError(t, mocks.YooKassaOptions{Webhooks: mocks.WebhookDelivery{URL: "http://127.0.0.1:1/"}}.Validate())
}
