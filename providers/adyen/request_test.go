package adyen_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/adyen"
)

func requirePost(t *testing.T, hr *http.Request, key string) {
	t.Helper()
	require.Equal(t, http.MethodPost, hr.Method)
	require.Equal(t, testKey, hr.Header.Get("X-API-Key"))
	require.Equal(t, "application/json", hr.Header.Get("Content-Type"))
	require.Equal(t, []string{adyen.IdempotencyKey(merchant, key)}, hr.Header.Values("Idempotency-Key"))
}

func TestChargeRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *testConfigT) { c.ReturnURL = "https://shop.example/return" })
	r := chargeReq()
	got, body, o := testkit.RoundTrip(t, b, base+"/payments", r, respond(200, payJSON("PAY1", "Authorised", "", "")))
	requirePost(t, got, r.Key)
	require.Equal(t, ledger.OutcomeSuccess, o.Class)
	require.JSONEq(t, `{
		"amount":{"currency":"EUR","value":1999},"reference":"`+r.OperationID+`","merchantAccount":"`+merchant+`",
		"paymentMethod":{"type":"scheme","storedPaymentMethodId":"8315892878479934"},
		"shopperReference":"shopper-42","shopperInteraction":"ContAuth","recurringProcessingModel":"UnscheduledCardOnFile",
		"returnUrl":"https://shop.example/return",
		"metadata":{"order_id":"42","payonce_op":"`+r.OperationID+`","payonce_key":"`+r.Key+`","payonce_kind":"charge","payonce_refs":"[\"order\",\"42\"]"}}`, body)

	// The same bytes on every attempt.
	_, again := testkit.Build(t, b.P, r)
	require.Equal(t, body, again)

	// Without Config.ReturnURL: the documented default, on every payment
	// (v71 requires returnUrl).
	_, body = testkit.Build(t, setup(t).P, r)
	require.Equal(t, adyen.DefaultReturnURL, testkit.DecodeJSON(t, body)["returnUrl"])

	// Manual capture.
	r.Request.CaptureManual = true
	_, body = testkit.Build(t, b.P, r)
	require.Equal(t, "true", testkit.DecodeJSON(t, body)["additionalData"].(map[string]any)["manualCapture"])
}

type testConfigT = adyen.Config

func TestModificationRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := chargeReq()
	for _, tc := range []struct {
		kind   payonce.Kind
		amount int64
		path   string
		want   string
	}{
		{kind: payonce.KindCapture, amount: 1999, path: "/payments/PAY%2F1/captures", want: `{"merchantAccount":"` + merchant + `","amount":{"currency":"EUR","value":1999},"reference":"` + r.OperationID + `"}`},
		{kind: payonce.KindCancel, amount: 0, path: "/payments/PAY%2F1/cancels", want: `{"merchantAccount":"` + merchant + `","reference":"` + r.OperationID + `"}`},
		{kind: payonce.KindRefund, amount: 500, path: "/payments/PAY%2F1/refunds", want: `{"merchantAccount":"` + merchant + `","amount":{"currency":"EUR","value":500},"reference":"` + r.OperationID + `"}`},
	} {
		m := withKind(r, tc.kind, tc.amount, "PAY/1")
		if tc.kind == payonce.KindCancel {
			m.Request.Currency = ""
		}
		hr, body := testkit.Build(t, b.P, m)
		requirePost(t, hr, m.Key)
		require.Equal(t, base+tc.path, hr.URL.String())
		require.JSONEq(t, tc.want, body)
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("k", 65)
	testkit.RequireRequestErrors(t, b.P, chargeReq, []testkit.RequestCase{
		{Name: "no key", Mod: func(r *payonce.SendRequest) { r.Key = "" }, Field: "adyen Key"},
		{Name: "key too long", Mod: func(r *payonce.SendRequest) { r.Key = long }, Field: "adyen Key"},
		{Name: "no operation", Mod: func(r *payonce.SendRequest) { r.OperationID = "" }, Field: "adyen OperationID"},
		{Name: "no payment method", Mod: func(r *payonce.SendRequest) { r.Request.PaymentMethod = "" }, Field: "adyen Request.PaymentMethod"},
		{Name: "no shopper", Mod: func(r *payonce.SendRequest) { r.Request.Customer = "" }, Field: "adyen Request.Customer"},
		{Name: "zero amount", Mod: func(r *payonce.SendRequest) { r.Request.Amount = 0 }, Field: "adyen Request.Amount"},
		{Name: "reserved metadata", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = map[string]string{"Payonce_x": "1"} }, Field: "adyen Request.Metadata"},
		{Name: "metadata key too long", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = map[string]string{strings.Repeat("k", 21): "1"} }, Field: "adyen Request.Metadata"},
		{Name: "metadata value too long", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = map[string]string{"k": strings.Repeat("v", 81)} }, Field: "adyen Request.Metadata"},
		{Name: "too many metadata keys", Mod: func(r *payonce.SendRequest) {
			r.Request.Metadata = map[string]string{}
			for i := 0; i < 17; i++ {
				r.Request.Metadata["k"+strconv.Itoa(i+10)] = "v"
			}
		}, Field: "adyen Request.Metadata"},
		{Name: "capture without payment", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindCapture, 100, "") }, Field: "adyen Request.PaymentRef"},
		{Name: "capture of the whole", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindCapture, 0, "PAY1") }, Field: "adyen Request.Amount"},
		{Name: "refund of the whole", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindRefund, 0, "PAY1") }, Field: "adyen Request.Amount"},
		{Name: "unknown kind", Mod: func(r *payonce.SendRequest) { r.Request.Kind = "payout" }, Field: "adyen Request.Kind"},
	}, testKey)
	// 16 caller keys fit with payonce's 4; long references are cut to 80 characters.
	r := chargeReq()
	r.Request.Metadata = map[string]string{}
	for i := 0; i < 16; i++ {
		r.Request.Metadata["k"+strconv.Itoa(i+10)] = strings.Repeat("é", 80)
	}
	_, err := b.P.NewRequest(context.Background(), r)
	require.NoError(t, err)
	testkit.RequireLongReferences(t, b.P, chargeReq(), testkit.JSONRefs(t), 80, utf8.RuneCountInString)
}

func TestLookupSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, k := range []payonce.Kind{payonce.KindCharge, payonce.KindCapture, payonce.KindCancel, payonce.KindRefund} {
		q := payonce.LookupQuery{OperationID: testkit.OpID, Key: testkit.OpID, Request: payonce.Request{Kind: k}, ProviderRef: "PAY1"}
		res, err := b.P.Lookup(context.Background(), testkit.DoerFunc(func(*http.Request) (*http.Response, error) {
			t.Fatal("Lookup sent a request")
			return nil, nil
		}), q)
		require.NoError(t, err)
		require.Equal(t, payonce.LookupResult{State: payonce.LookupNotFound, Lag: b.P.WebhookLag()}, res)
		res, err = b.P.Lookup(context.Background(), nil, q)
		require.NoError(t, err)
		require.Equal(t, payonce.LookupNotFound, res.State)
	}
	_, err := b.P.Lookup(context.Background(), nil, payonce.LookupQuery{Request: payonce.Request{Kind: "payout"}})
	require.ErrorContains(t, err, "unknown kind")
}
