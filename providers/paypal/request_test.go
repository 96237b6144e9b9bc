package paypal_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/paypal"
)

// Every kind's request as PayPal receives it: method, path, headers (the
// token, the key in PayPal-Request-Id, Prefer: return=representation) and
// body.
func TestRequestShapes(t *testing.T) {
	t.Parallel()
	manual := func(r payonce.SendRequest) payonce.SendRequest { r.Request.CaptureManual = true; return r }
	wallet := vaultCharge()
	wallet.Request.PaymentMethod = "paypal:8kk8451t"
	for _, tc := range []struct {
		name string
		r    payonce.SendRequest
		path string
		body string
	}{
		{"card vault, capture", vaultCharge(), "/v2/checkout/orders",
			`{"intent":"CAPTURE","purchase_units":[{"amount":{"currency_code":"USD","value":"19.99"},"custom_id":"` + opID + `","invoice_id":"` + opID + `","description":"Order 42"}],` +
				`"payment_source":{"card":{"vault_id":"7ts2yx1yv5","stored_credential":{"payment_initiator":"MERCHANT","payment_type":"UNSCHEDULED","usage":"SUBSEQUENT"}}}}`},
		{"wallet vault, authorize", manual(wallet), "/v2/checkout/orders",
			`{"intent":"AUTHORIZE","purchase_units":[{"amount":{"currency_code":"USD","value":"19.99"},"custom_id":"` + opID + `","invoice_id":"` + opID + `","description":"Order 42"}],` +
				`"payment_source":{"paypal":{"vault_id":"8kk8451t"}}}`},
		{"approved order, capture", orderCharge(), "/v2/checkout/orders/5O190127TN364715T/capture", `{}`},
		{"approved order, authorize", manual(orderCharge()), "/v2/checkout/orders/5O190127TN364715T/authorize", `{}`},
		{"capture part", withKind(vaultCharge(), payonce.KindCapture, 1000, "0VF52814937998046"), "/v2/payments/authorizations/0VF52814937998046/capture",
			`{"amount":{"currency_code":"USD","value":"10.00"},"invoice_id":"` + opID + `","final_capture":true}`},
		{"capture all", withKind(vaultCharge(), payonce.KindCapture, 0, "0VF52814937998046"), "/v2/payments/authorizations/0VF52814937998046/capture",
			`{"invoice_id":"` + opID + `","final_capture":true}`},
		{"void", withKind(vaultCharge(), payonce.KindCancel, 0, "0VF52814937998046"), "/v2/payments/authorizations/0VF52814937998046/void", `{}`},
		{"refund part", withKind(vaultCharge(), payonce.KindRefund, 5, "2GG279541U471931P"), "/v2/payments/captures/2GG279541U471931P/refund",
			`{"amount":{"currency_code":"USD","value":"0.05"},"custom_id":"` + opID + `","invoice_id":"` + opID + `"}`},
		{"refund all", withKind(vaultCharge(), payonce.KindRefund, 0, "2GG279541U471931P"), "/v2/payments/captures/2GG279541U471931P/refund",
			`{"custom_id":"` + opID + `","invoice_id":"` + opID + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			got, body, _ := testkit.RoundTrip(t, b, base+tc.path, tc.r, respond(500, ""))
			// RoundTrip does not authorize: do it on a fresh build.
			hr := authorize(t, b, tc.r)
			wire.RequirePost(t, hr, tc.r.Key)
			require.Equal(t, "return=representation", hr.Header.Get("Prefer"))
			require.Equal(t, tc.path, got.URL.Path)
			require.Equal(t, "return=representation", got.Header.Get("Prefer"))
			require.Equal(t, tc.r.Key, got.Header.Get("PayPal-Request-Id"))
			require.JSONEq(t, tc.body, body)
			testkit.RequireSameBytes(t, b.P, tc.r, hr, body)
		})
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testkit.RequireRequestErrors(t, b.P, vaultCharge, []testkit.RequestCase{
		{Name: "no key", Mod: func(r *payonce.SendRequest) { r.Key = "" }, Field: "paypal Key"},
		{Name: "key over 108", Mod: func(r *payonce.SendRequest) { r.Key = strings.Repeat("k", 109) }, Field: "paypal Key"},
		{Name: "no operation", Mod: func(r *payonce.SendRequest) { r.OperationID = "" }, Field: "paypal OperationID"},
		{Name: "metadata", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = map[string]string{"a": "b"} }, Field: "paypal Request.Metadata"},
		{Name: "no method", Mod: func(r *payonce.SendRequest) { r.Request.PaymentMethod = "" }, Field: "paypal Request.PaymentMethod"},
		{Name: "stripe method", Mod: func(r *payonce.SendRequest) { r.Request.PaymentMethod = "pm_card_visa" }, Field: "paypal Request.PaymentMethod"},
		{Name: "empty vault id", Mod: func(r *payonce.SendRequest) { r.Request.PaymentMethod = "card:" }, Field: "paypal Request.PaymentMethod"},
		{Name: "path in order id", Mod: func(r *payonce.SendRequest) { r.Request.PaymentMethod = "order:../x" }, Field: "paypal Request.PaymentMethod"},
		{Name: "no amount", Mod: func(r *payonce.SendRequest) { r.Request.Amount = 0 }, Field: "paypal Request.Amount"},
		{Name: "forint cents", Mod: func(r *payonce.SendRequest) { r.Request.Currency = "HUF"; r.Request.Amount = 1050 }, Field: "paypal Request.Amount"},
		{Name: "TWD cents", Mod: func(r *payonce.SendRequest) { r.Request.Currency = "TWD"; r.Request.Amount = 1 }, Field: "paypal Request.Amount"},
		{Name: "lower-case currency", Mod: func(r *payonce.SendRequest) { r.Request.Currency = "usd" }, Field: "paypal Request.Currency"},
		{Name: "capture without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindCapture, 0, "") }, Field: "paypal Request.PaymentRef"},
		{Name: "refund of a path", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindRefund, 0, "a/b") }, Field: "paypal Request.PaymentRef"},
		{Name: "unknown kind", Mod: func(r *payonce.SendRequest) { r.Request.Kind = "payout" }, Field: "paypal Request.Kind"},
	}, testClientID, testSecret)

	_, err := b.P.NewRequest(t.Context(), func() payonce.SendRequest { r := vaultCharge(); r.Request.PaymentMethod = "pm_x"; return r }())
	require.ErrorContains(t, err, `"order:<ORDER_ID>"`, "the error names the forms that exist")
	_, err = b.P.NewRequest(t.Context(), func() payonce.SendRequest {
		r := vaultCharge()
		r.Request.Currency, r.Request.Amount = "HUF", 1050
		return r
	}())
	require.ErrorContains(t, err, "10.50 HUF")
	require.ErrorContains(t, err, "multiple of 100")
}

// Money is sent in PayPal's exponent for the currency and read back from
// it into ISO 4217 minor units, payonce's unit.
func TestMoney(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		cur    string
		minor  int64
		value  string
		parsed int64 // what reading value back gives
	}{
		{"USD", 1999, "19.99", 1999},
		{"USD", 5, "0.05", 5},
		{"EUR", 100000000, "1000000.00", 100000000},
		{"JPY", 1500, "1500", 1500},
		{"HUF", 150000, "1500", 150000},
		{"TWD", 1000, "10", 1000},
		{"BHD", 1234, "1.234", 1234},
	} {
		r := testkit.ChargeRequest(tc.minor, tc.cur, "paypal:v1", "", nil)
		_, body := testkit.Build(t, b.P, r)
		pu := testkit.DecodeJSON(t, body)["purchase_units"].([]any)[0].(map[string]any)
		require.Equal(t, map[string]any{"currency_code": tc.cur, "value": tc.value}, pu["amount"], tc.cur)

		// Classify reads the amount back: the same amount belongs.
		ans := `{"id":"O1","status":"COMPLETED","intent":"CAPTURE","purchase_units":[{"amount":{"currency_code":"` + tc.cur + `","value":"` + tc.value +
			`"},"custom_id":"` + opID + `","payments":{"captures":[{"id":"C1","status":"COMPLETED","amount":{"currency_code":"` + tc.cur + `","value":"` + tc.value + `"}}]}}]}`
		o := b.P.Classify(r, 201, nil, []byte(ans))
		require.Equal(t, ledger.OutcomeSuccess, o.Class, "%s %s: %s", tc.cur, tc.value, o.Message)
	}
	// HUF written with decimals by PayPal still reads.
	r := testkit.ChargeRequest(150000, "HUF", "paypal:v1", "", nil)
	o := b.P.Classify(r, 201, nil, []byte(`{"id":"O1","status":"COMPLETED","intent":"CAPTURE","purchase_units":[{"amount":{"currency_code":"HUF","value":"1500.00"},"payments":{"captures":[{"id":"C1","status":"COMPLETED"}]}}]}`))
	require.Equal(t, ledger.OutcomeSuccess, o.Class, o.Message)
	// Zeros past the currency's decimals are the same number: Classify
	// reads "1500.00" JPY as the audit's transaction search does (one
	// parser); another digit there is not understood.
	jpy := testkit.ChargeRequest(1500, "JPY", "paypal:v1", "", nil)
	o = b.P.Classify(jpy, 201, nil, []byte(`{"id":"O1","status":"COMPLETED","intent":"CAPTURE","purchase_units":[{"amount":{"currency_code":"JPY","value":"1500.00"},"payments":{"captures":[{"id":"C1","status":"COMPLETED"}]}}]}`))
	require.Equal(t, ledger.OutcomeSuccess, o.Class, o.Message)
	o = b.P.Classify(jpy, 201, nil, []byte(`{"id":"O1","status":"COMPLETED","intent":"CAPTURE","purchase_units":[{"amount":{"currency_code":"JPY","value":"1500.50"},"payments":{"captures":[{"id":"C1","status":"COMPLETED"}]}}]}`))
	require.Equal(t, ledger.OutcomeMaybeSent, o.Class)
	// An amount that cannot be read is not understood: maybe_sent.
	o = b.P.Classify(vaultCharge(), 201, nil, []byte(`{"id":"O1","status":"COMPLETED","intent":"CAPTURE","purchase_units":[{"amount":{"currency_code":"USD","value":"19.999"},"payments":{"captures":[{"id":"C1","status":"COMPLETED"}]}}]}`))
	require.Equal(t, ledger.OutcomeMaybeSent, o.Class)
	require.Contains(t, o.Message, "decimals")
}

func TestPaymentMethodForms(t *testing.T) {
	t.Parallel()
	require.Equal(t, "order:", paypal.MethodOrder)
	require.Equal(t, "paypal:", paypal.MethodPayPal)
	require.Equal(t, "card:", paypal.MethodCard)
	b := setup(t)
	r := vaultCharge()
	r.Request.Description = strings.Repeat("é", 200)
	_, body := testkit.Build(t, b.P, r)
	pu := testkit.DecodeJSON(t, body)["purchase_units"].([]any)[0].(map[string]any)
	require.Equal(t, strings.Repeat("é", 127), pu["description"], "PayPal keeps 127 characters")
}
