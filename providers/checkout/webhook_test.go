package checkout_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/checkout"
)

const (
	whSecret = "cko-webhook-signature-key-FAKE-0123456789"
	whAuth   = "Bearer cko-webhook-authorization-FAKE-abcdef"
)

// ckoSig is what Checkout.com sends in Cko-Signature: hex HMAC-SHA256 of
// the raw body keyed with the signature key.
func ckoSig(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func webhookProvider(t testing.TB, mod ...func(*checkout.Config)) *checkout.Provider {
	t.Helper()
	return testkit.New(t, checkout.New, checkout.Config{SecretKey: testKey, WebhookSecret: whSecret, Now: func() time.Time { return testNow }}, mod...)
}

func delivery(body []byte, sig, auth string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/checkout", bytes.NewReader(body))
	if sig != "" {
		r.Header.Set("Cko-Signature", sig)
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	return r
}

func parseSigned(t *testing.T, p *checkout.Provider, body string) ([]payonce.WebhookEvent, error) {
	t.Helper()
	return p.ParseWebhook(delivery([]byte(body), ckoSig(whSecret, []byte(body)), ""), []byte(body))
}

func ckoEvent(typ, data string) string {
	return `{"id":"evt_1","type":"` + typ + `","created_on":"2026-03-01T11:59:00Z","data":` + data + `}`
}

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	body := []byte(ckoEvent("card_verified", `{"id":"pay_1"}`))
	evs, err := p.ParseWebhook(delivery(body, ckoSig(whSecret, body), ""), body)
	require.NoError(t, err)
	require.Equal(t, []payonce.WebhookEvent{{ID: "evt_1", Type: "card_verified", OccurredAt: time.Date(2026, 3, 1, 11, 59, 0, 0, time.UTC)}}, evs)

	// Upper-case hex is the same signature.
	_, err = p.ParseWebhook(delivery(body, strings.ToUpper(ckoSig(whSecret, body)), ""), body)
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		sig  string
		body []byte
		want string
	}{
		"missing":       {sig: "", body: body, want: "no Cko-Signature header"},
		"wrong secret":  {sig: ckoSig("other", body), body: body, want: "does not match"},
		"tampered body": {sig: ckoSig(whSecret, body), body: bytes.Replace(body, []byte("pay_1"), []byte("pay_2"), 1), want: "does not match"},
		"not hex":       {sig: "zz", body: body, want: "does not match"},
		"truncated":     {sig: ckoSig(whSecret, body)[:40], body: body, want: "does not match"},
	} {
		_, err := p.ParseWebhook(delivery(tc.body, tc.sig, ""), tc.body)
		require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated, name)
		require.NotErrorIs(t, err, payonce.ErrWebhookCredentials, name)
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), whSecret, name)
	}

	none, err := checkout.New(checkout.Config{SecretKey: testKey})
	require.NoError(t, err)
	_, err = none.ParseWebhook(delivery(body, ckoSig(whSecret, body), ""), body)
	require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated)
	require.ErrorContains(t, err, "checkout.Config.WebhookSecret")
}

func TestWebhookAuthorization(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t, func(c *checkout.Config) { c.WebhookAuthorization = whAuth })
	body := []byte(ckoEvent("card_verified", `{"id":"pay_1"}`))
	sig := ckoSig(whSecret, body)
	_, err := p.ParseWebhook(delivery(body, sig, whAuth), body)
	require.NoError(t, err)
	for _, auth := range []string{"", "Bearer wrong", whAuth + " ", strings.ToLower(whAuth)} {
		_, err := p.ParseWebhook(delivery(body, sig, auth), body)
		require.ErrorIs(t, err, payonce.ErrWebhookCredentials, auth)
		require.NotContains(t, err.Error(), whAuth)
	}
}

func TestWebhookMalformed(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	testkit.RequireMalformed(t, func(body string) error { _, err := parseSigned(t, p, body); return err }, map[string]string{
		"empty":         ``,
		"not json":      `{"id":`,
		"no id":         `{"type":"payment_approved","data":{"id":"pay_1"}}`,
		"no type":       `{"id":"evt_1","data":{"id":"pay_1"}}`,
		"no data":       `{"id":"evt_1","type":"payment_approved"}`,
		"no payment id": ckoEvent("payment_captured", `{"action_id":"act_1"}`),
		"data not obj":  ckoEvent("payment_captured", `"pay_1"`),
		"nul in ref":    ckoEvent("payment_approved", `{"id":"pay_\u0000"}`),
	})
}

func TestWebhookTargets(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	payMeta := `"metadata":{"payonce_op":"op-c","payonce_kind":"charge","partner_id":123}`
	actMeta := func(kind string) string {
		return `"metadata":{"payonce_op":"op-a","payonce_kind":"` + kind + `"}`
	}
	action := func(k payonce.Kind, state payonce.LookupState, op string) payonce.WebhookTarget {
		return payonce.WebhookTarget{Kind: k, OperationID: op, ProviderRef: "act_1", PaymentRef: "pay_1", State: state}
	}
	declined := func(k payonce.Kind, op, what string) payonce.WebhookTarget {
		t := action(k, payonce.LookupFailed, op)
		t.Code, t.DeclineCode, t.Message = "action_declined", "20051", "Insufficient Funds"
		if what != "" {
			t.DeclineCode, t.Message = "", "checkout: "+what+" declined"
		}
		return t
	}
	chargeOK := payonce.WebhookTarget{Kind: payonce.KindCharge, OperationID: "op-c", ProviderRef: "pay_1", State: payonce.LookupSucceeded}
	decl := `"response_code":"20051","response_summary":"Insufficient Funds"`

	for _, tc := range []struct {
		name, typ, data string
		want            []payonce.WebhookTarget
	}{
		{name: "approved", typ: "payment_approved", data: `{"id":"pay_1","action_id":"act_0","reference":"op-c",` + payMeta + `}`,
			want: []payonce.WebhookTarget{chargeOK}},
		{name: "approved, reference only", typ: "payment_approved", data: `{"id":"pay_1","reference":"op-c"}`,
			want: []payonce.WebhookTarget{chargeOK}},
		{name: "approved, another kind's metadata", typ: "payment_approved", data: `{"id":"pay_1","reference":"op-c",` + actMeta("refund") + `}`,
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "pay_1", State: payonce.LookupSucceeded}}},
		{name: "declined", typ: "payment_declined", data: `{"id":"pay_1","reference":"op-c",` + decl + `,` + payMeta + `}`,
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-c", ProviderRef: "pay_1", State: payonce.LookupFailed,
				Code: "declined", DeclineCode: "20051", Message: "Insufficient Funds"}}},
		{name: "pending", typ: "payment_pending", data: `{"id":"pay_1","reference":"op-c"}`,
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-c", ProviderRef: "pay_1", State: payonce.LookupProcessing}}},
		{name: "expired: a lookup decides", typ: "payment_expired", data: `{"id":"pay_1","reference":"op-c"}`,
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-c", ProviderRef: "pay_1", State: payonce.LookupProcessing,
				LookupOnly: true, Message: "checkout: payment expired; a lookup decides whether it was authorized first"}}},
		{name: "captured: the capture and the charge", typ: "payment_captured", data: `{"id":"pay_1","action_id":"act_1","reference":"op-c",` + payMeta + `}`,
			want: []payonce.WebhookTarget{action(payonce.KindCapture, payonce.LookupSucceeded, ""), chargeOK}},
		{name: "captured, the action's metadata", typ: "payment_captured", data: `{"id":"pay_1","action_id":"act_1","reference":"op-a",` + actMeta("capture") + `}`,
			want: []payonce.WebhookTarget{action(payonce.KindCapture, payonce.LookupSucceeded, "op-a"),
				{Kind: payonce.KindCharge, ProviderRef: "pay_1", State: payonce.LookupSucceeded}}},
		{name: "capture declined: a reversal", typ: "payment_capture_declined", data: `{"id":"pay_1","action_id":"act_1",` + decl + `,` + actMeta("capture") + `}`,
			want: []payonce.WebhookTarget{func() payonce.WebhookTarget {
				t := declined(payonce.KindCapture, "op-a", "")
				t.Reversal = true
				return t
			}()}},
		{name: "capture pending", typ: "payment_capture_pending", data: `{"id":"pay_1","action_id":"act_1"}`,
			want: []payonce.WebhookTarget{action(payonce.KindCapture, payonce.LookupProcessing, "")}},
		{name: "voided", typ: "payment_voided", data: `{"id":"pay_1","action_id":"act_1",` + actMeta("cancel") + `}`,
			want: []payonce.WebhookTarget{action(payonce.KindCancel, payonce.LookupSucceeded, "op-a")}},
		{name: "void declined", typ: "payment_void_declined", data: `{"id":"pay_1","action_id":"act_1"}`,
			want: []payonce.WebhookTarget{declined(payonce.KindCancel, "", "Void")}},
		{name: "refunded", typ: "payment_refunded", data: `{"id":"pay_1","action_id":"act_1","reference":"op-a",` + actMeta("refund") + `}`,
			want: []payonce.WebhookTarget{action(payonce.KindRefund, payonce.LookupSucceeded, "op-a")}},
		{name: "refunded, the payment's metadata: no operation id", typ: "payment_refunded", data: `{"id":"pay_1","action_id":"act_1","reference":"op-c",` + payMeta + `}`,
			want: []payonce.WebhookTarget{action(payonce.KindRefund, payonce.LookupSucceeded, "")}},
		{name: "refund declined", typ: "payment_refund_declined", data: `{"id":"pay_1","action_id":"act_1",` + decl + `,` + actMeta("refund") + `}`,
			want: []payonce.WebhookTarget{declined(payonce.KindRefund, "op-a", "")}},
		{name: "refund pending", typ: "payment_refund_pending", data: `{"id":"pay_1","action_id":"act_1"}`,
			want: []payonce.WebhookTarget{action(payonce.KindRefund, payonce.LookupProcessing, "")}},
		{name: "unknown type", typ: "dispute_received", data: `{"id":"dsp_1"}`},
	} {
		evs, err := parseSigned(t, p, ckoEvent(tc.typ, tc.data))
		require.NoError(t, err, tc.name)
		require.Len(t, evs, 1, tc.name)
		require.Equal(t, tc.want, evs[0].Targets, tc.name)
	}

	// Workflow notifications carry timestamp instead of created_on.
	evs, err := parseSigned(t, p, `{"id":"evt_2","type":"payment_pending","timestamp":"2023-05-24T09:12:32.357+00:00","data":{"id":"pay_1"}}`)
	require.NoError(t, err)
	require.Equal(t, time.Date(2023, 5, 24, 9, 12, 32, 357e6, time.UTC), evs[0].OccurredAt)
}

// Every target carries the object's key, amount and currency as far as the
// event carries them and the lookup checks them (adapterkit.Belongs): the
// ledger compares them with the operation. The payment's own events carry
// the payment's amount, currency and metadata (payonce_key); an action's
// event carries the action's amount and the payment's metadata, so an
// action's target has the amount (not for a void) and no key, and the
// charge target of payment_captured the key and currency but not the
// capture's amount.
func TestWebhookTargetsKeyAmountCurrency(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	payMeta := `"metadata":{"payonce_op":"op-c","payonce_key":"key-c1","payonce_kind":"charge","order_id":"42"}`
	actMeta := func(kind string) string {
		return `"metadata":{"payonce_op":"op-a","payonce_key":"key-a1","payonce_kind":"` + kind + `"}`
	}
	pay := func(extra string) string {
		return `{"id":"pay_1","action_id":"act_0","reference":"op-c","amount":1999,"currency":"USD",` + extra + `}`
	}
	act := func(amount, extra string) string {
		return `{"id":"pay_1","action_id":"act_1","reference":"op-c","amount":` + amount + `,"currency":"USD","balances":{"total_authorized":1999},` + extra + `}`
	}
	type kac struct {
		kind          payonce.Kind
		key           string
		amount        int64
		currency, ref string
	}
	charge := kac{payonce.KindCharge, "key-c1", 1999, "USD", "pay_1"}
	for _, tc := range []struct {
		name, typ, data string
		want            []kac
	}{
		{name: "approved", typ: "payment_approved", data: pay(payMeta), want: []kac{charge}},
		{name: "declined", typ: "payment_declined", data: pay(`"response_code":"20051",` + payMeta), want: []kac{charge}},
		{name: "pending", typ: "payment_pending", data: pay(payMeta), want: []kac{charge}},
		{name: "canceled (lookup only)", typ: "payment_canceled", data: pay(payMeta), want: []kac{charge}},
		{name: "expired (lookup only)", typ: "payment_expired", data: pay(payMeta), want: []kac{charge}},
		{name: "approved, another kind's metadata: no key", typ: "payment_approved", data: pay(actMeta("refund")),
			want: []kac{{kind: payonce.KindCharge, amount: 1999, currency: "USD", ref: "pay_1"}}},
		{name: "approved, no amount", typ: "payment_approved", data: `{"id":"pay_1","reference":"op-c",` + payMeta + `}`,
			want: []kac{{kind: payonce.KindCharge, key: "key-c1", amount: 0, ref: "pay_1"}}},
		{name: "approved, amount null", typ: "payment_approved", data: `{"id":"pay_1","amount":null,"currency":"EUR",` + payMeta + `}`,
			want: []kac{{kind: payonce.KindCharge, key: "key-c1", amount: 0, currency: "EUR", ref: "pay_1"}}},
		{name: "captured: the capture's amount, the charge's key and currency", typ: "payment_captured", data: act("700", payMeta),
			want: []kac{{kind: payonce.KindCapture, amount: 700, ref: "act_1"}, {kind: payonce.KindCharge, key: "key-c1", amount: 0, currency: "USD", ref: "pay_1"}}},
		{name: "captured, the action's metadata", typ: "payment_captured", data: act("700", actMeta("capture")),
			want: []kac{{kind: payonce.KindCapture, key: "key-a1", amount: 700, ref: "act_1"}, {kind: payonce.KindCharge, amount: 0, currency: "USD", ref: "pay_1"}}},
		{name: "capture declined", typ: "payment_capture_declined", data: act("700", payMeta), want: []kac{{kind: payonce.KindCapture, amount: 700, ref: "act_1"}}},
		{name: "capture pending", typ: "payment_capture_pending", data: act("700", actMeta("capture")), want: []kac{{kind: payonce.KindCapture, key: "key-a1", amount: 700, ref: "act_1"}}},
		{name: "voided: no amount", typ: "payment_voided", data: act("1999", actMeta("cancel")), want: []kac{{kind: payonce.KindCancel, key: "key-a1", amount: 0, ref: "act_1"}}},
		{name: "void declined", typ: "payment_void_declined", data: act("1999", payMeta), want: []kac{{kind: payonce.KindCancel, amount: 0, ref: "act_1"}}},
		{name: "refunded, the payment's metadata", typ: "payment_refunded", data: act("300", payMeta), want: []kac{{kind: payonce.KindRefund, amount: 300, ref: "act_1"}}},
		{name: "refunded, the action's metadata", typ: "payment_refunded", data: act("300", actMeta("refund")), want: []kac{{kind: payonce.KindRefund, key: "key-a1", amount: 300, ref: "act_1"}}},
		{name: "refund declined", typ: "payment_refund_declined", data: act("300", actMeta("refund")), want: []kac{{kind: payonce.KindRefund, key: "key-a1", amount: 300, ref: "act_1"}}},
		{name: "refund pending", typ: "payment_refund_pending", data: act("300", payMeta), want: []kac{{kind: payonce.KindRefund, amount: 300, ref: "act_1"}}},
	} {
		evs, err := parseSigned(t, p, ckoEvent(tc.typ, tc.data))
		require.NoError(t, err, tc.name)
		require.Len(t, evs, 1, tc.name)
		var got []kac
		for _, tg := range evs[0].Targets {
			got = append(got, kac{tg.Kind, tg.Key, tg.Amount, tg.Currency, tg.ProviderRef})
		}
		require.Equal(t, tc.want, got, tc.name)
	}

	// An amount that is not minor units, or a key that cannot be stored:
	// not Checkout.com's event, refused before anything is recorded.
	testkit.RequireMalformed(t, func(body string) error { _, err := parseSigned(t, p, body); return err }, map[string]string{
		"empty":           ``,
		"not json":        `{"id":`,
		"negative amount": ckoEvent("payment_approved", `{"id":"pay_1","amount":-5,"currency":"USD"}`),
		"decimal amount":  ckoEvent("payment_refunded", `{"id":"pay_1","action_id":"act_1","amount":10.5}`),
		"string amount":   ckoEvent("payment_captured", `{"id":"pay_1","action_id":"act_1","amount":"700"}`),
		"huge amount":     ckoEvent("payment_approved", `{"id":"pay_1","amount":99999999999999999999}`),
		"nul in key":      ckoEvent("payment_approved", `{"id":"pay_1","metadata":{"payonce_key":"k\u0000","payonce_kind":"charge"}}`),
	})
	// Event types the adapter does not map may carry other shapes.
	evs, err := parseSigned(t, p, ckoEvent("dispute_received", `{"id":"dsp_1","amount":"12.50"}`))
	require.NoError(t, err)
	require.Empty(t, evs[0].Targets)
}

func TestWebhookConfig(t *testing.T) {
	t.Parallel()
	_, err := checkout.New(checkout.Config{SecretKey: testKey, WebhookSecret: "a\nb"})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "checkout.Config.WebhookSecret")
	_, err = checkout.New(checkout.Config{SecretKey: testKey, WebhookAuthorization: "Bearer x\r\n"})
	require.ErrorContains(t, err, "checkout.Config.WebhookAuthorization")

	cfg := checkout.Config{SecretKey: testKey, WebhookSecret: whSecret, WebhookAuthorization: whAuth}
	p, err := checkout.New(cfg)
	require.NoError(t, err)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "cfg", cfg, "p", p, "pv", *p)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg), fmt.Sprintf("%v %+v %#v %s", p, p, p, *p), buf.String()} {
		require.NotContains(t, s, whSecret)
		require.NotContains(t, s, "cko-webhook-authorization")
	}
	require.Contains(t, cfg.String(), "WebhookSecret:[REDACTED] WebhookAuthorization:[REDACTED]")
	require.Contains(t, p.String(), "WebhookSecret:[REDACTED] WebhookAuthorization:[REDACTED]")
}
