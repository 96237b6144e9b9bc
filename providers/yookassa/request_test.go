package yookassa_test

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/yookassa"
)

func requireCommonHeaders(t *testing.T, hr *http.Request, key string) {
	t.Helper()
	wire.RequirePost(t, hr, key)
	testkit.RequireBasicAuth(t, hr, testShopID, testSecret)
}

func TestNewRequestCharge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := chargeReq()
	hr, body := testkit.Build(t, b.P, r)
	requireCommonHeaders(t, hr, r.Key)
	require.Equal(t, base+"/v3/payments", hr.URL.String())
	require.Equal(t, map[string]any{
		"amount":            map[string]any{"value": "1200.00", "currency": "RUB"},
		"capture":           true,
		"payment_method_id": "2a8c5f2b-000f-5000-9000-1c9d7b3e1a56",
		"description":       "Order 42",
		"metadata": map[string]any{
			"order_id":     "42",
			"shop":         "main",
			"payonce_op":   r.OperationID,
			"payonce_key":  r.Key,
			"payonce_kind": "charge",
			"payonce_refs": `["order","42"]`,
		},
	}, testkit.DecodeJSON(t, body))
	require.NotContains(t, body, "cus_123", "the customer is not sent")

	testkit.RequireSameBytes(t, b.P, r, hr, body)
}

func TestNewRequestChargeTwoStageAndScales(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *yookassa.Config) { c.BaseURL = "http://127.0.0.1:12111/prefix/" })
	r := chargeReq()
	r.Request.CaptureManual = true
	r.Request.Amount, r.Request.Currency = 1500, "JPY"
	r.Request.Description, r.Request.Metadata = "", nil
	hr, body := testkit.Build(t, b.P, r)
	require.Equal(t, "http://127.0.0.1:12111/prefix/v3/payments", hr.URL.String())
	m := testkit.DecodeJSON(t, body)
	require.Equal(t, false, m["capture"])
	require.Equal(t, map[string]any{"value": "1500", "currency": "JPY"}, m["amount"])
	require.NotContains(t, m, "description")
	require.Len(t, m["metadata"], 4)

	r.Request.Amount, r.Request.Currency = 1, "KWD"
	_, body = testkit.Build(t, b.P, r)
	require.Equal(t, map[string]any{"value": "0.001", "currency": "KWD"}, testkit.DecodeJSON(t, body)["amount"])
}

func TestNewRequestCaptureCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := withKind(chargeReq(), payonce.KindCapture, 50050, "2d5c5e8a-000f-5000-9000-1b2c3d4e5f60")
	hr, body := testkit.Build(t, b.P, r)
	requireCommonHeaders(t, hr, r.Key)
	require.Equal(t, base+"/v3/payments/2d5c5e8a-000f-5000-9000-1b2c3d4e5f60/capture", hr.URL.String())
	require.JSONEq(t, `{"amount":{"value":"500.50","currency":"RUB"}}`, body)
	r.Request.Amount = 0
	_, body = testkit.Build(t, b.P, r)
	require.Equal(t, `{}`, body, "a full capture sends no amount")

	c := withKind(chargeReq(), payonce.KindCancel, 0, "pay/../x")
	hr, body = testkit.Build(t, b.P, c)
	requireCommonHeaders(t, hr, c.Key)
	require.Equal(t, base+"/v3/payments/pay%2F..%2Fx/cancel", hr.URL.String())
	require.Equal(t, `{}`, body)
}

func TestNewRequestRefund(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := withKind(chargeReq(), payonce.KindRefund, 70000, "2d5c5e8a-000f-5000-9000-1b2c3d4e5f60")
	r.Request.References = []string{"order", "42", "1"}
	hr, body := testkit.Build(t, b.P, r)
	requireCommonHeaders(t, hr, r.Key)
	require.Equal(t, base+"/v3/refunds", hr.URL.String())
	require.Equal(t, map[string]any{
		"payment_id":  "2d5c5e8a-000f-5000-9000-1b2c3d4e5f60",
		"amount":      map[string]any{"value": "700.00", "currency": "RUB"},
		"description": "payonce_op:" + r.OperationID,
	}, testkit.DecodeJSON(t, body))
	require.NotContains(t, body, "metadata", "YooKassa refunds carry no metadata")

	// A caller description is kept, cut so that the marker fits in 250.
	r.Request.Description = strings.Repeat("ж", 300)
	_, body = testkit.Build(t, b.P, r)
	desc := testkit.DecodeJSON(t, body)["description"].(string)
	require.Equal(t, 250, utf8.RuneCountInString(desc))
	require.True(t, strings.HasSuffix(desc, " payonce_op:"+r.OperationID))
	r.Request.Description = "Returned goods"
	_, body = testkit.Build(t, b.P, r)
	require.Equal(t, "Returned goods payonce_op:"+r.OperationID, testkit.DecodeJSON(t, body)["description"])
}

func TestNewRequestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tooMany := map[string]string{}
	for i := range 13 {
		tooMany["k"+string(rune('a'+i))] = "v"
	}
	testkit.RequireRequestErrors(t, b.P, chargeReq, []testkit.RequestCase{
		{Name: "capture without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindCapture, 0, "") }, Field: "yookassa Request.PaymentRef"},
		{Name: "cancel without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindCancel, 0, "") }, Field: "yookassa Request.PaymentRef"},
		{Name: "refund without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindRefund, 1, "") }, Field: "yookassa Request.PaymentRef"},
		{Name: "no key", Mod: func(r *payonce.SendRequest) { r.Key = "" }, Field: "yookassa Key"},
		{Name: "long key", Mod: func(r *payonce.SendRequest) { r.Key = strings.Repeat("a", 65) }, Field: "yookassa Key"},
		{Name: "key with newline", Mod: func(r *payonce.SendRequest) { r.Key = "abc\ndef" }, Field: "yookassa Key"},
		{Name: "no operation id", Mod: func(r *payonce.SendRequest) { r.OperationID = "" }, Field: "yookassa OperationID"},
		{Name: "unknown kind", Mod: func(r *payonce.SendRequest) { r.Request.Kind = "payout" }, Field: "yookassa Request.Kind"},
		{Name: "refund without amount", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindRefund, 0, "p1") }, Field: "yookassa Request.Amount"},
		{Name: "refund without operation", Mod: func(r *payonce.SendRequest) {
			*r = withKind(*r, payonce.KindRefund, 1, "p1")
			r.OperationID = ""
		}, Field: "yookassa OperationID"},
		{Name: "no payment method", Mod: func(r *payonce.SendRequest) { r.Request.PaymentMethod = "" }, Field: "yookassa Request.PaymentMethod"},
		{Name: "zero amount", Mod: func(r *payonce.SendRequest) { r.Request.Amount = 0 }, Field: "yookassa Request.Amount"},
		{Name: "no currency", Mod: func(r *payonce.SendRequest) { r.Request.Currency = "" }, Field: "yookassa Request.Amount"},
		{Name: "long description", Mod: func(r *payonce.SendRequest) { r.Request.Description = strings.Repeat("d", 129) }, Field: "yookassa Request.Description"},
		{Name: "reserved metadata", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = map[string]string{"payonce_op": "x"} }, Field: "yookassa Request.Metadata"},
		{Name: "long metadata key", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = map[string]string{strings.Repeat("k", 33): "x"} }, Field: "yookassa Request.Metadata"},
		{Name: "too much metadata", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = tooMany }, Field: "yookassa Request.Metadata"},
	}, testSecret)
}

func TestNewRequestLongReferences(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testkit.RequireLongReferences(t, b.P, chargeReq(), testkit.JSONRefs(t), 512, utf8.RuneCountInString)
}

func TestNewRequestRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := chargeReq()
	got, _, o := testkit.RoundTrip(t, b, base+"/v3/payments", r, respond(200, `{"id":"p1","status":"succeeded","amount":{"value":"1200.00","currency":"RUB"}}`))
	require.Equal(t, r.Key, got.Header.Get("Idempotence-Key"))
	require.Equal(t, "p1", o.ProviderRef)
}
