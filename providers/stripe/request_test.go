package stripe_test

import (
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/stripe"
)

func requireSortedForm(t *testing.T, body string) {
	t.Helper()
	var keys []string
	for _, kv := range strings.Split(body, "&") {
		if kv == "" {
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		k, err := url.QueryUnescape(k)
		require.NoError(t, err)
		keys = append(keys, k)
	}
	require.True(t, sort.StringsAreSorted(keys), "form keys not sorted: %v", keys)
}

func TestNewRequestCharge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := chargeReq()
	hr, body := testkit.Build(t, b.P, r)
	wire.RequirePost(t, hr, r.Key)
	require.Equal(t, base+"/v1/payment_intents", hr.URL.String())
	require.Empty(t, hr.Header.Get("Stripe-Version"))
	requireSortedForm(t, body)

	form, err := url.ParseQuery(body)
	require.NoError(t, err)
	require.Equal(t, url.Values{
		"amount":                             {"1999"},
		"currency":                           {"eur"},
		"confirm":                            {"true"},
		"capture_method":                     {"automatic"},
		"automatic_payment_methods[enabled]": {"true"},
		"automatic_payment_methods[allow_redirects]": {"never"},
		"payment_method":         {"pm_card_visa"},
		"customer":               {"cus_123"},
		"description":            {"Order 42"},
		"metadata[order_id]":     {"42"},
		"metadata[shop]":         {"main"},
		"metadata[payonce_op]":   {r.OperationID},
		"metadata[payonce_key]":  {r.Key},
		"metadata[payonce_kind]": {"charge"},
		"metadata[payonce_refs]": {`["order","42"]`},
	}, form)
	require.NotContains(t, form, "off_session")

	testkit.RequireSameBytes(t, b.P, r, hr, body)
}

func TestNewRequestChargeManualMinimal(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *stripe.Config) { c.APIVersion = "2024-06-20"; c.BaseURL = "http://127.0.0.1:12111/prefix/" })
	r := chargeReq()
	r.Request.CaptureManual = true
	r.Request.Customer, r.Request.Description, r.Request.Metadata = "", "", nil
	hr, body := testkit.Build(t, b.P, r)
	require.Equal(t, "http://127.0.0.1:12111/prefix/v1/payment_intents", hr.URL.String())
	require.Equal(t, "2024-06-20", hr.Header.Get("Stripe-Version"))
	form, err := url.ParseQuery(body)
	require.NoError(t, err)
	require.Equal(t, "manual", form.Get("capture_method"))
	for _, absent := range []string{"customer", "description", "metadata[order_id]"} {
		require.NotContains(t, form, absent)
	}
	require.Equal(t, r.OperationID, form.Get("metadata[payonce_op]"))
}

func TestNewRequestCapture(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := withKind(chargeReq(), payonce.KindCapture, 500, "pi_123")
	hr, body := testkit.Build(t, b.P, r)
	wire.RequirePost(t, hr, r.Key)
	require.Equal(t, base+"/v1/payment_intents/pi_123/capture", hr.URL.String())
	require.Equal(t, "amount_to_capture=500", body)

	r.Request.Amount = 0
	_, body = testkit.Build(t, b.P, r)
	require.Empty(t, body, "a full capture sends no amount")
}

func TestNewRequestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := withKind(chargeReq(), payonce.KindCancel, 0, "pi_123")
	hr, body := testkit.Build(t, b.P, r)
	wire.RequirePost(t, hr, r.Key)
	require.Equal(t, base+"/v1/payment_intents/pi_123/cancel", hr.URL.String())
	require.Empty(t, body)
}

func TestNewRequestRefund(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := withKind(chargeReq(), payonce.KindRefund, 700, "pi_123")
	r.Request.References = []string{"order", "42", "refund", "1"}
	hr, body := testkit.Build(t, b.P, r)
	wire.RequirePost(t, hr, r.Key)
	require.Equal(t, base+"/v1/refunds", hr.URL.String())
	requireSortedForm(t, body)
	form, err := url.ParseQuery(body)
	require.NoError(t, err)
	require.Equal(t, url.Values{
		"payment_intent":         {"pi_123"},
		"amount":                 {"700"},
		"metadata[order_id]":     {"42"},
		"metadata[shop]":         {"main"},
		"metadata[payonce_op]":   {r.OperationID},
		"metadata[payonce_key]":  {r.Key},
		"metadata[payonce_kind]": {"refund"},
		"metadata[payonce_refs]": {`["order","42","refund","1"]`},
	}, form)

	r.Request.Amount = 0
	_, body = testkit.Build(t, b.P, r)
	form, _ = url.ParseQuery(body)
	require.NotContains(t, form, "amount", "a full refund sends no amount")
}

func TestNewRequestPathEscape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := withKind(chargeReq(), payonce.KindCapture, 0, "pi_1/../refunds?x=1#y")
	hr, _ := testkit.Build(t, b.P, r)
	require.Equal(t, base+"/v1/payment_intents/pi_1%2F..%2Frefunds%3Fx=1%23y/capture", hr.URL.String())
	require.Empty(t, hr.URL.RawQuery)
}

func TestNewRequestErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tooMany := map[string]string{}
	for i := range 47 {
		tooMany[strings.Repeat("k", 1+i%40)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	testkit.RequireRequestErrors(t, b.P, chargeReq, []testkit.RequestCase{
		{Name: "capture without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindCapture, 0, "") }, Field: "stripe Request.PaymentRef"},
		{Name: "cancel without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindCancel, 0, "") }, Field: "stripe Request.PaymentRef"},
		{Name: "refund without ref", Mod: func(r *payonce.SendRequest) { *r = withKind(*r, payonce.KindRefund, 1, "") }, Field: "stripe Request.PaymentRef"},
		{Name: "no key", Mod: func(r *payonce.SendRequest) { r.Key = "" }, Field: "stripe Key"},
		{Name: "long key", Mod: func(r *payonce.SendRequest) { r.Key = strings.Repeat("a", 256) }, Field: "stripe Key"},
		{Name: "key with newline", Mod: func(r *payonce.SendRequest) { r.Key = "abc\ndef" }, Field: "stripe Key"},
		{Name: "no operation id", Mod: func(r *payonce.SendRequest) { r.OperationID = "" }, Field: "stripe OperationID"},
		{Name: "unknown kind", Mod: func(r *payonce.SendRequest) { r.Request.Kind = "payout" }, Field: "stripe Request.Kind"},
		{Name: "refund no operation id", Mod: func(r *payonce.SendRequest) {
			*r = withKind(*r, payonce.KindRefund, 1, "pi_1")
			r.OperationID = ""
		}, Field: "stripe OperationID"},
		{Name: "reserved metadata", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = map[string]string{"payonce_op": "x"} }, Field: "stripe Request.Metadata"},
		{Name: "bracket metadata", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = map[string]string{"a[b]": "x"} }, Field: "stripe Request.Metadata"},
		{Name: "too much metadata", Mod: func(r *payonce.SendRequest) { r.Request.Metadata = tooMany }, Field: "stripe Request.Metadata"},
	}, testKey)
}

func TestNewRequestMetadataLimitEdge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := chargeReq()
	r.Request.Metadata = map[string]string{}
	for i := range 46 {
		r.Request.Metadata["k"+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	_, body := testkit.Build(t, b.P, r)
	form, _ := url.ParseQuery(body)
	n := 0
	for k := range form {
		if strings.HasPrefix(k, "metadata[") {
			n++
		}
	}
	require.Equal(t, 50, n, "46 caller keys + 4 payonce keys = Stripe's 50")
}

func TestNewRequestLongReferences(t *testing.T) {
	t.Parallel()
	b := setup(t)
	formRefs := func(body string) string {
		form, _ := url.ParseQuery(body)
		return form.Get("metadata[payonce_refs]")
	}
	testkit.RequireLongReferences(t, b.P, chargeReq(), formRefs, 500, func(s string) int { return len(s) })
	r := chargeReq()

	// A single reference too long once escaped still gives valid JSON.
	r.Request.References = []string{strings.Repeat(`"`, 256)}
	_, body := testkit.Build(t, b.P, r)
	require.Equal(t, `["...+1"]`, formRefs(body))

	// No HTML escaping: what the caller wrote is what an operator sees.
	r.Request.References = []string{"a<b>&c"}
	_, body = testkit.Build(t, b.P, r)
	require.Equal(t, `["a<b>&c"]`, formRefs(body))
}

func TestNewRequestRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := chargeReq()
	got, gotBody, _ := testkit.RoundTrip(t, b, base+"/v1/payment_intents", r, respond(200, `{"id":"pi_1","object":"payment_intent","status":"succeeded"}`))
	require.Equal(t, r.Key, got.Header.Get("Idempotency-Key"))
	require.Contains(t, gotBody, "confirm=true")
}
