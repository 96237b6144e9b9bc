package mocks_test

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/yookassa"
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
	b := ykSetup(t, mocks.YooKassaOptions{
		Options: mocks.Options{
			Webhooks: mocks.WebhookDelivery{URL: rec.URL(),
				FailRate: 0.5, MaxAttempts: 40, RetryAfter: time.Millisecond},
		},
	})
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

// TestYooKassaWebhooksParseWithTheAdapter feeds the fake's notifications to
// the YooKassa adapter: each object comes whole, as YooKassa sends it, so
// the targets carry the key payonce wrote, the amount and the currency.
func TestYooKassaWebhooksParseWithTheAdapter(t *testing.T) {
	rec := newHookReceiver(t, ykVerifier)
	b := ykSetup(t, mocks.YooKassaOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: rec.URL(), RetryAfter: time.Millisecond}}})
	p, err := yookassa.New(yookassa.Config{ShopID: "123456", SecretKey: "test_fake", BaseURL: b.f.URL(),
		WebhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	require.NoError(t, err)
	auth := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("15.50", "RUB", mocks.YooKassaMethodSucceeds, false,
		"payonce_op", "op-1", "payonce_key", "key-1", "payonce_kind", "charge"), "k1"), 200)
	b.c.post("/v3/payments/"+auth.ID+"/capture", map[string]any{}, "k2")
	rf := decode[mocks.YooKassaRefund](t, b.c.post("/v3/refunds", map[string]any{"payment_id": auth.ID,
		"amount": map[string]string{"value": "4.00", "currency": "RUB"}, "description": "payonce_op:op-r payonce_key:key-r2"}, "k3"), 200)
	flush(t, b.f)

	rec.mu.Lock()
	bodies := rec.bodies
	rec.mu.Unlock()
	got := map[string][]payonce.WebhookTarget{}
	for _, body := range bodies {
		r := httptest.NewRequest(http.MethodPost, "/webhooks/yookassa", bytes.NewReader(body))
		r.RemoteAddr = "127.0.0.1:5000"
		evs, err := p.ParseWebhook(r, body)
		require.NoError(t, err, string(body))
		for _, ev := range evs {
			got[ev.Type] = ev.Targets
		}
	}
	charge := got["payment.waiting_for_capture"][0]
	require.Equal(t, "op-1", charge.OperationID)
	require.Equal(t, "key-1", charge.Key)
	require.Equal(t, int64(1550), charge.Amount)
	require.Equal(t, "RUB", charge.Currency)
	succeeded := got["payment.succeeded"]
	require.Len(t, succeeded, 3)
	require.Equal(t, "key-1", succeeded[0].Key)
	require.Equal(t, int64(1550), succeeded[0].Amount)
	require.Equal(t, payonce.KindCapture, succeeded[1].Kind)
	require.Equal(t, "RUB", succeeded[1].Currency)
	require.Empty(t, succeeded[1].Key, "the payment's key is the charge's, not the capture's")
	refund := got["refund.succeeded"][0]
	require.Equal(t, rf.ID, refund.ProviderRef)
	require.Equal(t, "op-r", refund.OperationID)
	require.Equal(t, "key-r2", refund.Key)
	require.Equal(t, int64(400), refund.Amount)
	require.Equal(t, "RUB", refund.Currency)
}

func TestYooKassaWebhookOptions(t *testing.T) {
	require.ErrorContains(t, mocks.YooKassaOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: "http://127.0.0.1:1/", Secret: "s"}}}.Validate(),
		"YooKassa neither signs notifications nor sends credentials")
	require.ErrorContains(t, mocks.YooKassaOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: "http://198.51.100.7/"}}}.Validate(),
		"YooKassaOptions.Webhooks.URL")
	require.NoError(t, mocks.YooKassaOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: "http://127.0.0.1:1/"}}}.Validate())
}
