package mocks_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

func ykPayment(value, cur, method string, capture bool, md ...string) map[string]any {
	m := map[string]any{"amount": map[string]string{"value": value, "currency": cur},
		"capture": capture, "payment_method_id": method}
	if len(md) > 0 {
		meta := map[string]string{}
		for i := 0; i+1 < len(md); i += 2 {
			meta[md[i]] = md[i+1]
		}
		m["metadata"] = meta
	}
	return m
}

var ykCreate = mocks.Match{Method: "POST", Path: "/v3/payments"}

func TestYooKassaPaymentSucceeds(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})
	body := ykPayment("1200.00", "RUB", mocks.YooKassaMethodSucceeds, true, "payonce_op", "op-1")
	body["description"] = "Order 42"
	r := b.c.post("/v3/payments", body, "k1")
	p := decode[mocks.YooKassaPayment](t, r, 200)
	require.Equal(t, "succeeded", p.Status)
	require.True(t, p.Paid)
	require.Equal(t, mocks.YooKassaAmount{Value: "1200.00", Currency: "RUB"}, p.Amount)
	require.Equal(t, "Order 42", p.Description)
	require.Equal(t, map[string]string{"payonce_op": "op-1"}, p.Metadata)
	require.Equal(t, "2026-03-01T12:00:00.000Z", p.CreatedAt)
	require.Regexp(t, `^[0-9a-f]{8}-000f-5000-9000-[0-9a-f]{12}$`, p.ID)
	require.True(t, p.Test)
	require.Nil(t, p.CancellationDetails)

	got := decode[mocks.YooKassaPayment](t, b.c.get("/v3/payments/"+p.ID), 200)
	require.Equal(t, p, got)

	truth := b.f.Truth()
	require.Len(t, truth.Payments, 1)
	tp := truth.Payments[0]
	require.True(t, tp.Authorized)
	require.Equal(t, int64(120000), tp.Amount)
	require.Equal(t, int64(120000), tp.AmountCaptured)
	require.Equal(t, "k1", tp.IdempotencyKey)
	require.Equal(t, map[string]int{"op-1": 1}, truth.ChargesBy("payonce_op"))
	require.Equal(t, int64(120000), truth.TotalCharged("rub"))
}

func TestYooKassaTwoStage(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})
	p := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("500.00", "RUB", mocks.YooKassaMethodSucceeds, false), "a1"), 200)
	require.Equal(t, "waiting_for_capture", p.Status)
	require.Equal(t, "2026-03-08T12:00:00.000Z", p.ExpiresAt)
	require.Zero(t, b.f.Truth().TotalCharged("RUB"))

	e := decode[mocks.YooKassaError](t, b.c.post("/v3/payments/"+p.ID+"/capture",
		map[string]any{"amount": map[string]string{"value": "600.00", "currency": "RUB"}}, "c0"), 400)
	require.Equal(t, "invalid_request", e.Code)

	c := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments/"+p.ID+"/capture",
		map[string]any{"amount": map[string]string{"value": "400.50", "currency": "RUB"}}, "c1"), 200)
	require.Equal(t, "succeeded", c.Status)
	require.Equal(t, "400.50", c.Amount.Value)
	require.Equal(t, int64(40050), b.f.Truth().TotalCharged("RUB"))

	e = decode[mocks.YooKassaError](t, b.c.post("/v3/payments/"+p.ID+"/cancel", nil, "x1"), 400)
	require.Contains(t, e.Description, "succeeded")

	p2 := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("10", "RUB", mocks.YooKassaMethodSucceeds, false), "a2"), 200)
	require.Equal(t, "10.00", p2.Amount.Value)
	cn := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments/"+p2.ID+"/cancel", "{}", "x2"), 200)
	require.Equal(t, "canceled", cn.Status)
	require.Equal(t, &mocks.YooKassaCancellationDetails{Party: "merchant", Reason: "canceled_by_merchant"}, cn.CancellationDetails)
	tp, _ := b.f.Truth().Payment(p2.ID)
	require.True(t, tp.Authorized, "it was authorized before the cancel")
	require.Zero(t, tp.AmountCaptured)

	decode[mocks.YooKassaError](t, b.c.post("/v3/payments/nope/capture", nil, "c2"), 404)
}

func TestYooKassaDeclines(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})
	for _, tc := range []struct{ method, party, reason string }{
		{mocks.YooKassaMethodInsufficientFunds, "payment_network", "insufficient_funds"},
		{mocks.YooKassaMethodGeneralDecline, "payment_network", "general_decline"},
		{mocks.YooKassaMethodExpired, "payment_network", "card_expired"},
		{mocks.YooKassaMethodFraud, "yoo_money", "fraud_suspected"},
	} {
		p := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("1.00", "RUB", tc.method, true, "order", tc.method), "k-"+tc.method), 200)
		require.Equal(t, "canceled", p.Status, tc.method)
		require.False(t, p.Paid)
		require.Equal(t, &mocks.YooKassaCancellationDetails{Party: tc.party, Reason: tc.reason}, p.CancellationDetails)
	}
	p := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("1.00", "RUB", mocks.YooKassaMethodNeedsConfirmation, true), "k-3ds"), 200)
	require.Equal(t, "pending", p.Status)
	require.NotNil(t, p.Confirmation)
	truth := b.f.Truth()
	require.Empty(t, truth.ChargesBy("order"))
	require.Len(t, truth.PaymentsBy("order"), 4)
}

func TestYooKassaValidation(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})
	for _, tc := range []struct {
		name  string
		body  any
		key   string
		param string
	}{
		{"no key", ykPayment("1.00", "RUB", mocks.YooKassaMethodSucceeds, true), "", "Idempotence-Key"},
		{"long key", ykPayment("1.00", "RUB", mocks.YooKassaMethodSucceeds, true), strings.Repeat("k", 65), "Idempotence-Key"},
		{"3 decimals RUB", ykPayment("1.001", "RUB", mocks.YooKassaMethodSucceeds, true), "v1", "amount.value"},
		{"decimals JPY", ykPayment("100.5", "JPY", mocks.YooKassaMethodSucceeds, true), "v2", "amount.value"},
		{"zero", ykPayment("0.00", "RUB", mocks.YooKassaMethodSucceeds, true), "v3", "amount.value"},
		{"not a number", ykPayment("1,00", "RUB", mocks.YooKassaMethodSucceeds, true), "v4", "amount.value"},
		{"lower currency", ykPayment("1.00", "rub", mocks.YooKassaMethodSucceeds, true), "v5", "amount.currency"},
		{"no method", ykPayment("1.00", "RUB", "", true), "v6", "payment_method_id"},
		{"unknown method", ykPayment("1.00", "RUB", "2a8c5f2b-000f-5000-9000-1c9d7b3e1a56", true), "v7", "payment_method_id"},
		{"long metadata key", ykPayment("1.00", "RUB", mocks.YooKassaMethodSucceeds, true, strings.Repeat("k", 33), "v"), "v8", "metadata"},
		{"unknown field", map[string]any{"amount": map[string]string{"value": "1.00", "currency": "RUB"}, "confirm": true}, "v9", ""},
	} {
		e := decode[mocks.YooKassaError](t, b.c.post("/v3/payments", tc.body, tc.key), 400)
		require.Equal(t, "invalid_request", e.Code, tc.name)
		require.Equal(t, tc.param, e.Parameter, tc.name)
		require.Equal(t, "error", e.Type)
		require.NotEmpty(t, e.ID)
	}
	ok := ykPayment("100", "JPY", mocks.YooKassaMethodSucceeds, true)
	require.Equal(t, "100", decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ok, "v2"), 200).Amount.Value,
		"a refused request leaves its key free for the corrected one")
	r := b.c.post("/v3/payments", `{"amount":`, "v10")
	require.Equal(t, 400, r.status)
	r = b.c.post("/v3/payments", `[1]`, "v11")
	require.Equal(t, 400, r.status)
}

func TestYooKassaAuthentication(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{ShopID: "123456", SecretKey: "test_SecretForTheFake_0123456789"})
	require.Equal(t, "123456", b.f.ShopID())
	for _, auth := range []func(*http.Request){
		nil,
		func(r *http.Request) { r.SetBasicAuth("123456", "test_wrong") },
		func(r *http.Request) { r.SetBasicAuth("999", b.f.SecretKey()) },
		func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+b.f.SecretKey()) },
		func(r *http.Request) { r.Header.Set("Authorization", "Basic !!!") },
	} {
		c := *b.c
		c.auth = auth
		r := c.get("/v3/payments")
		e := decode[mocks.YooKassaError](t, r, 401)
		require.Equal(t, "invalid_credentials", e.Code)
		require.NotContains(t, string(r.body), b.f.SecretKey())
		require.NotContains(t, string(r.body), "123456")
	}
	require.Equal(t, 200, b.c.get("/v3/payments").status)
	require.Panics(t, func() { mocks.NewYooKassa(mocks.YooKassaOptions{SecretKey: "live_abc"}) })
}

func TestYooKassaIdempotency(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})
	body := ykPayment("10.00", "RUB", mocks.YooKassaMethodSucceeds, true)
	first := b.c.post("/v3/payments", body, "k")
	again := b.c.post("/v3/payments", `{"payment_method_id":"`+mocks.YooKassaMethodSucceeds+`","capture":true,"amount":{"currency":"RUB","value":"10.00"}}`, "k")
	require.Equal(t, first.body, again.body, "the same object in another order is the same request")

	e := decode[mocks.YooKassaError](t, b.c.post("/v3/payments", ykPayment("11.00", "RUB", mocks.YooKassaMethodSucceeds, true), "k"), 400)
	require.Equal(t, mocks.YooKassaError{Type: "error", ID: e.ID, Code: "invalid_request",
		Description: "Idempotence key duplicated", Parameter: "Idempotence-Key"}, e)
	require.Len(t, b.f.Truth().Payments, 1)
	require.Equal(t, 1, b.f.Truth().Replays)
	require.Equal(t, 1, b.f.Truth().KeyMismatch)

	// Declines are remembered too.
	d1 := b.c.post("/v3/payments", ykPayment("10.00", "RUB", mocks.YooKassaMethodGeneralDecline, true), "d")
	d2 := b.c.post("/v3/payments", ykPayment("10.00", "RUB", mocks.YooKassaMethodGeneralDecline, true), "d")
	require.Equal(t, d1.body, d2.body)

	// After 24 hours a repeat is a new request.
	b.clock.Advance(mocks.YooKassaKeyTTL - time.Second)
	require.Equal(t, first.body, b.c.post("/v3/payments", body, "k").body)
	b.clock.Advance(time.Second)
	fresh := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", body, "k"), 200)
	require.NotEqual(t, decode[mocks.YooKassaPayment](t, first, 200).ID, fresh.ID)
	require.Len(t, b.f.Truth().ChargesBy("nothing"), 0)
	require.Len(t, b.f.Truth().Payments, 3)
}

func TestYooKassaStillProcessing(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{Options: mocks.Options{SlowFor: 300 * time.Millisecond, RetryAfter: 1800 * time.Millisecond}})
	b.f.Script(ykCreate, mocks.FaultSlow)
	body := ykPayment("10.00", "RUB", mocks.YooKassaMethodSucceeds, true)
	done := holdKey(t, b.f, b.c, "/v3/payments", body, "slow")
	p := decode[mocks.YooKassaProcessing](t, b.c.post("/v3/payments", body, "slow"), 202)
	require.Equal(t, mocks.YooKassaProcessing{Type: "processing", Description: "Request accepted", RetryAfter: 1800}, p)
	first := <-done
	require.NotNil(t, first)
	require.Equal(t, 200, first.status)
	require.Equal(t, first.body, b.c.post("/v3/payments", body, "slow").body)
	require.Equal(t, 1, b.f.Truth().KeyInUse)
	require.Len(t, b.f.Truth().Payments, 1)
}

// A 500 means "unknown: repeat with the same key". The fake never replays a
// 500: a repeat learns the real outcome.
func TestYooKassa500s(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})
	body := ykPayment("10.00", "RUB", mocks.YooKassaMethodSucceeds, true, "payonce_op", "op")

	// Failed before anything happened: the repeat processes it, once.
	b.f.Script(ykCreate, mocks.FaultStored500)
	e := decode[mocks.YooKassaError](t, b.c.post("/v3/payments", body, "s500"), 500)
	require.Equal(t, "internal_server_error", e.Code)
	require.Empty(t, b.f.Truth().Payments)
	p := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", body, "s500"), 200)
	require.Equal(t, "succeeded", p.Status)

	// Failed after the money moved: the repeat returns the real outcome,
	// not a second payment.
	b.f.Script(ykCreate, mocks.FaultProcessed500)
	decode[mocks.YooKassaError](t, b.c.post("/v3/payments", body, "p500"), 500)
	require.Len(t, b.f.Truth().Payments, 2, "processed")
	p2 := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", body, "p500"), 200)
	require.Len(t, b.f.Truth().Payments, 2, "the repeat did not charge again")
	require.Equal(t, b.f.Truth().Payments[1].ID, p2.ID)
	require.Equal(t, 1, b.f.Truth().Faults[mocks.FaultProcessed500])
	require.Equal(t, "processed_500", mocks.FaultProcessed500.String())
}

func TestYooKassaFaultsShared(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{Options: mocks.Options{RetryAfter: 2500 * time.Millisecond}})
	body := ykPayment("10.00", "RUB", mocks.YooKassaMethodSucceeds, true)

	b.f.Script(ykCreate, mocks.FaultRateLimit429)
	e := decode[mocks.YooKassaError](t, b.c.post("/v3/payments", body, "rl"), 429)
	require.Equal(t, "too_many_requests", e.Code)
	require.Equal(t, int64(2500), e.RetryAfter)
	require.Empty(t, b.f.Truth().Payments)

	b.f.Script(ykCreate, mocks.FaultDropAfterProcessing)
	nk := ykClient(t, b.f, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}})
	_, err := nk.do(context.Background(), http.MethodPost, "/v3/payments", body, "drop")
	require.Error(t, err)
	require.Len(t, b.f.Truth().Payments, 1)
	decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", body, "drop"), 200)
	require.Len(t, b.f.Truth().Payments, 1)

	b.f.Script(ykCreate, mocks.FaultGatewayAfter502)
	require.Equal(t, 502, b.c.post("/v3/payments", body, "gw").status)
	decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", body, "gw"), 200)
	require.Len(t, b.f.Truth().Payments, 2)
}

func TestYooKassaRefunds(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})
	p := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("100.00", "RUB", mocks.YooKassaMethodSucceeds, true), "p"), 200)
	refund := func(value, desc, key string) *result {
		return b.c.post("/v3/refunds", map[string]any{"payment_id": p.ID,
			"amount": map[string]string{"value": value, "currency": "RUB"}, "description": desc}, key)
	}
	r1 := decode[mocks.YooKassaRefund](t, refund("30.00", "payonce_op:r1", "r1"), 200)
	require.Equal(t, "succeeded", r1.Status)
	require.Equal(t, p.ID, r1.PaymentID)
	require.Regexp(t, `^[0-9a-f]{8}-000f-0016-b000-[0-9a-f]{12}$`, r1.ID)
	require.Equal(t, r1, decode[mocks.YooKassaRefund](t, b.c.get("/v3/refunds/"+r1.ID), 200))

	e := decode[mocks.YooKassaError](t, refund("70.01", "", "r2"), 400)
	require.Equal(t, "amount.value", e.Parameter)
	require.Contains(t, e.Description, "70.00")
	decode[mocks.YooKassaRefund](t, refund("70.00", "payonce_op:r2", "r3"), 200)
	got := decode[mocks.YooKassaPayment](t, b.c.get("/v3/payments/"+p.ID), 200)
	require.Equal(t, "100.00", got.RefundedAmount.Value)
	require.False(t, got.Refundable)

	e = decode[mocks.YooKassaError](t, b.c.post("/v3/refunds", map[string]any{"payment_id": p.ID}, "r4"), 400)
	require.Equal(t, "amount", e.Parameter, "YooKassa refunds need an amount")
	decode[mocks.YooKassaError](t, b.c.post("/v3/refunds", map[string]any{"payment_id": p.ID,
		"amount": map[string]string{"value": "1.00", "currency": "RUB"}, "metadata": map[string]string{"a": "b"}}, "r5"), 400)

	l := decode[mocks.YooKassaRefundList](t, b.c.get("/v3/refunds?payment_id="+p.ID), 200)
	require.Equal(t, "list", l.Type)
	require.Len(t, l.Items, 2)
	require.Equal(t, "payonce_op:r2", l.Items[0].Description, "newest first")

	truth := b.f.Truth()
	require.Equal(t, int64(10000), truth.TotalRefunded("RUB"))
	require.Equal(t, "payonce_op:r1", truth.Refunds[0].Description)

	// A method whose refunds fail.
	pf := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("5.00", "RUB", mocks.YooKassaMethodRefundFails, true), "pf"), 200)
	rf := decode[mocks.YooKassaRefund](t, b.c.post("/v3/refunds", map[string]any{"payment_id": pf.ID,
		"amount": map[string]string{"value": "5.00", "currency": "RUB"}}, "rf"), 200)
	require.Equal(t, "canceled", rf.Status)
	require.Equal(t, "general_decline", rf.CancellationDetails.Reason)
	require.Equal(t, int64(10000), b.f.Truth().TotalRefunded("RUB"))

	// Unpaid payments cannot be refunded.
	pw := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("5.00", "RUB", mocks.YooKassaMethodSucceeds, false), "pw"), 200)
	decode[mocks.YooKassaError](t, b.c.post("/v3/refunds", map[string]any{"payment_id": pw.ID,
		"amount": map[string]string{"value": "5.00", "currency": "RUB"}}, "rw"), 400)
}

func TestYooKassaListPaging(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})
	var ids []string
	for i := range 7 {
		p := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("1.00", "RUB", mocks.YooKassaMethodSucceeds, true), "k"+string(rune('a'+i))), 200)
		ids = append(ids, p.ID)
		b.clock.Advance(time.Minute)
	}
	since := url.QueryEscape(epoch.Add(2 * time.Minute).Format(time.RFC3339Nano))
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		path := "/v3/payments?limit=2&created_at.gte=" + since
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		l := decode[mocks.YooKassaPaymentList](t, b.c.get(path), 200)
		for _, p := range l.Items {
			seen = append(seen, p.ID)
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	require.Equal(t, []string{ids[6], ids[5], ids[4], ids[3], ids[2]}, seen)

	for _, bad := range []string{"limit=0", "limit=101", "cursor=zzz", "created_at.gte=yesterday", "foo=1"} {
		decode[mocks.YooKassaError](t, b.c.get("/v3/payments?"+bad), 400)
	}
}
