package checkout_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/checkout"
)

func TestNewRequestCharge(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *checkout.Config) { c.ProcessingChannelID = "pc_channel1" })
	r := chargeReq()
	hr, body := testkit.Build(t, b.P, r)
	wire.RequirePost(t, hr, r.Key)
	require.Equal(t, base+"/payments", hr.URL.String())
	require.Equal(t, map[string]any{
		"source":                map[string]any{"type": "id", "id": "src_nwd3m4in3hkuddfpjsaevunhdy"},
		"amount":                json.Number("1999"),
		"currency":              "USD",
		"reference":             r.OperationID,
		"capture":               true,
		"description":           "Order 42",
		"customer":              map[string]any{"id": "cus_udst2tfldj6upmye2reztkmm4i"},
		"processing_channel_id": "pc_channel1",
		"metadata": map[string]any{
			"order_id":     "42",
			"payonce_op":   r.OperationID,
			"payonce_key":  r.Key,
			"payonce_kind": "charge",
			"payonce_refs": `["order","42"]`,
		},
	}, testkit.DecodeJSON(t, body))
	testkit.RequireSameBytes(t, b.P, r, hr, body)
}

func TestNewRequestChargeTokenAuthorizeOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := chargeReq()
	r.Request.PaymentMethod = "tok_4gzeau5o2uqubbk6fufs3m7p54"
	r.Request.CaptureManual = true
	r.Request.Customer, r.Request.Description, r.Request.Metadata = "", "", nil
	r.Request.Amount, r.Request.Currency = 1500, "JPY"
	_, body := testkit.Build(t, b.P, r)
	m := testkit.DecodeJSON(t, body)
	require.Equal(t, map[string]any{"type": "token", "token": "tok_4gzeau5o2uqubbk6fufs3m7p54"}, m["source"])
	require.Equal(t, false, m["capture"])
	require.Equal(t, json.Number("1500"), m["amount"], "minor units as they are")
	for _, absent := range []string{"customer", "description", "processing_channel_id"} {
		require.NotContains(t, m, absent)
	}
}

func TestNewRequestActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		kind   payonce.Kind
		amount int64
		path   string
		want   map[string]any
	}{
		{kind: payonce.KindCapture, amount: 500, path: "/payments/pay_1/captures", want: map[string]any{"amount": json.Number("500")}},
		{kind: payonce.KindCapture, amount: 0, path: "/payments/pay_1/captures", want: map[string]any{}},
		{kind: payonce.KindCancel, amount: 0, path: "/payments/pay_1/voids", want: map[string]any{}},
		{kind: payonce.KindRefund, amount: 700, path: "/payments/pay_1/refunds", want: map[string]any{"amount": json.Number("700")}},
		{kind: payonce.KindRefund, amount: 0, path: "/payments/pay_1/refunds", want: map[string]any{}},
	} {
		r := withKind(chargeReq(), tc.kind, tc.amount, "pay_1")
		hr, body := testkit.Build(t, b.P, r)
		wire.RequirePost(t, hr, r.Key)
		require.Equal(t, base+tc.path, hr.URL.String())
		m := testkit.DecodeJSON(t, body)
		require.Equal(t, r.OperationID, m["reference"])
		md := m["metadata"].(map[string]any)
		require.Equal(t, r.OperationID, md["payonce_op"])
		require.Equal(t, string(tc.kind), md["payonce_kind"])
		delete(m, "reference")
		delete(m, "metadata")
		require.Equal(t, tc.want, m, "%s %d", tc.kind, tc.amount)
	}
	hr, _ := testkit.Build(t, b.P, withKind(chargeReq(), payonce.KindCapture, 0, "pay_1/../x?y"))
	require.Equal(t, base+"/payments/pay_1%2F..%2Fx%3Fy/captures", hr.URL.String())
}

func TestNewRequestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testkit.RequireRequestErrors(t, b.P, chargeReq, []testkit.RequestCase{
		{Name: "capture without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindCapture, 0, "") }, Field: "checkout Request.PaymentRef"},
		{Name: "cancel without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindCancel, 0, "") }, Field: "checkout Request.PaymentRef"},
		{Name: "refund without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindRefund, 1, "") }, Field: "checkout Request.PaymentRef"},
		{Name: "no key", Mod: func(r *payonce.SendRequest) { r.Key = "" }, Field: "checkout Key"},
		{Name: "long key", Mod: func(r *payonce.SendRequest) { r.Key = strings.Repeat("a", 37) }, Field: "checkout Key"},
		{Name: "key with newline", Mod: func(r *payonce.SendRequest) { r.Key = "abc\ndef" }, Field: "checkout Key"},
		{Name: "no operation id", Mod: func(r *payonce.SendRequest) { r.OperationID = "" }, Field: "checkout OperationID"},
		{Name: "unknown kind", Mod: func(r *payonce.SendRequest) { r.Request.Kind = "payout" }, Field: "checkout Request.Kind"},
		{Name: "no payment method", Mod: func(r *payonce.SendRequest) { r.Request.PaymentMethod = "" }, Field: "checkout Request.PaymentMethod"},
		{Name: "card number", Mod: func(r *payonce.SendRequest) { r.Request.PaymentMethod = "4242424242424242" }, Field: "checkout Request.PaymentMethod"},
		{Name: "zero amount", Mod: func(r *payonce.SendRequest) { r.Request.Amount = 0 }, Field: "checkout Request.Amount"},
		{Name: "reserved metadata", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = map[string]string{"payonce_kind": "x"} }, Field: "checkout Request.Metadata"},
	}, testKey)
}

func TestNewRequestLongReferences(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testkit.RequireLongReferences(t, b.P, chargeReq(), testkit.JSONRefs(t), 255, func(s string) int { return len(s) })
}
