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
		"missing":       {"", body, "no Cko-Signature header"},
		"wrong secret":  {ckoSig("other", body), body, "does not match"},
		"tampered body": {ckoSig(whSecret, body), bytes.Replace(body, []byte("pay_1"), []byte("pay_2"), 1), "does not match"},
		"not hex":       {"zz", body, "does not match"},
		"truncated":     {ckoSig(whSecret, body)[:40], body, "does not match"},
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
		{"approved", "payment_approved", `{"id":"pay_1","action_id":"act_0","reference":"op-c",` + payMeta + `}`,
			[]payonce.WebhookTarget{chargeOK}},
		{"approved, reference only", "payment_approved", `{"id":"pay_1","reference":"op-c"}`,
			[]payonce.WebhookTarget{chargeOK}},
		{"approved, another kind's metadata", "payment_approved", `{"id":"pay_1","reference":"op-c",` + actMeta("refund") + `}`,
			[]payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "pay_1", State: payonce.LookupSucceeded}}},
		{"declined", "payment_declined", `{"id":"pay_1","reference":"op-c",` + decl + `,` + payMeta + `}`,
			[]payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-c", ProviderRef: "pay_1", State: payonce.LookupFailed,
				Code: "declined", DeclineCode: "20051", Message: "Insufficient Funds"}}},
		{"pending", "payment_pending", `{"id":"pay_1","reference":"op-c"}`,
			[]payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-c", ProviderRef: "pay_1", State: payonce.LookupProcessing}}},
		{"expired: a lookup decides", "payment_expired", `{"id":"pay_1","reference":"op-c"}`,
			[]payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-c", ProviderRef: "pay_1", State: payonce.LookupProcessing,
				LookupOnly: true, Message: "checkout: payment expired; a lookup decides whether it was authorized first"}}},
		{"captured: the capture and the charge", "payment_captured", `{"id":"pay_1","action_id":"act_1","reference":"op-c",` + payMeta + `}`,
			[]payonce.WebhookTarget{action(payonce.KindCapture, payonce.LookupSucceeded, ""), chargeOK}},
		{"captured, the action's metadata", "payment_captured", `{"id":"pay_1","action_id":"act_1","reference":"op-a",` + actMeta("capture") + `}`,
			[]payonce.WebhookTarget{action(payonce.KindCapture, payonce.LookupSucceeded, "op-a"),
				{Kind: payonce.KindCharge, ProviderRef: "pay_1", State: payonce.LookupSucceeded}}},
		{"capture declined: a reversal", "payment_capture_declined", `{"id":"pay_1","action_id":"act_1",` + decl + `,` + actMeta("capture") + `}`,
			[]payonce.WebhookTarget{func() payonce.WebhookTarget {
				t := declined(payonce.KindCapture, "op-a", "")
				t.Reversal = true
				return t
			}()}},
		{"capture pending", "payment_capture_pending", `{"id":"pay_1","action_id":"act_1"}`,
			[]payonce.WebhookTarget{action(payonce.KindCapture, payonce.LookupProcessing, "")}},
		{"voided", "payment_voided", `{"id":"pay_1","action_id":"act_1",` + actMeta("cancel") + `}`,
			[]payonce.WebhookTarget{action(payonce.KindCancel, payonce.LookupSucceeded, "op-a")}},
		{"void declined", "payment_void_declined", `{"id":"pay_1","action_id":"act_1"}`,
			[]payonce.WebhookTarget{declined(payonce.KindCancel, "", "Void")}},
		{"refunded", "payment_refunded", `{"id":"pay_1","action_id":"act_1","reference":"op-a",` + actMeta("refund") + `}`,
			[]payonce.WebhookTarget{action(payonce.KindRefund, payonce.LookupSucceeded, "op-a")}},
		{"refunded, the payment's metadata: no operation id", "payment_refunded", `{"id":"pay_1","action_id":"act_1","reference":"op-c",` + payMeta + `}`,
			[]payonce.WebhookTarget{action(payonce.KindRefund, payonce.LookupSucceeded, "")}},
		{"refund declined", "payment_refund_declined", `{"id":"pay_1","action_id":"act_1",` + decl + `,` + actMeta("refund") + `}`,
			[]payonce.WebhookTarget{declined(payonce.KindRefund, "op-a", "")}},
		{"refund pending", "payment_refund_pending", `{"id":"pay_1","action_id":"act_1"}`,
			[]payonce.WebhookTarget{action(payonce.KindRefund, payonce.LookupProcessing, "")}},
		{"unknown type", "dispute_received", `{"id":"dsp_1"}`, nil},
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
		{"approved", "payment_approved", pay(payMeta), []kac{charge}},
		{"declined", "payment_declined", pay(`"response_code":"20051",` + payMeta), []kac{charge}},
		{"pending", "payment_pending", pay(payMeta), []kac{charge}},
		{"canceled (lookup only)", "payment_canceled", pay(payMeta), []kac{charge}},
		{"expired (lookup only)", "payment_expired", pay(payMeta), []kac{charge}},
		{"approved, another kind's metadata: no key", "payment_approved", pay(actMeta("refund")),
			[]kac{{payonce.KindCharge, "", 1999, "USD", "pay_1"}}},
		{"approved, no amount", "payment_approved", `{"id":"pay_1","reference":"op-c",` + payMeta + `}`,
			[]kac{{payonce.KindCharge, "key-c1", 0, "", "pay_1"}}},
		{"approved, amount null", "payment_approved", `{"id":"pay_1","amount":null,"currency":"EUR",` + payMeta + `}`,
			[]kac{{payonce.KindCharge, "key-c1", 0, "EUR", "pay_1"}}},
		{"captured: the capture's amount, the charge's key and currency", "payment_captured", act("700", payMeta),
			[]kac{{payonce.KindCapture, "", 700, "", "act_1"}, {payonce.KindCharge, "key-c1", 0, "USD", "pay_1"}}},
		{"captured, the action's metadata", "payment_captured", act("700", actMeta("capture")),
			[]kac{{payonce.KindCapture, "key-a1", 700, "", "act_1"}, {payonce.KindCharge, "", 0, "USD", "pay_1"}}},
		{"capture declined", "payment_capture_declined", act("700", payMeta), []kac{{payonce.KindCapture, "", 700, "", "act_1"}}},
		{"capture pending", "payment_capture_pending", act("700", actMeta("capture")), []kac{{payonce.KindCapture, "key-a1", 700, "", "act_1"}}},
		{"voided: no amount", "payment_voided", act("1999", actMeta("cancel")), []kac{{payonce.KindCancel, "key-a1", 0, "", "act_1"}}},
		{"void declined", "payment_void_declined", act("1999", payMeta), []kac{{payonce.KindCancel, "", 0, "", "act_1"}}},
		{"refunded, the payment's metadata", "payment_refunded", act("300", payMeta), []kac{{payonce.KindRefund, "", 300, "", "act_1"}}},
		{"refunded, the action's metadata", "payment_refunded", act("300", actMeta("refund")), []kac{{payonce.KindRefund, "key-a1", 300, "", "act_1"}}},
		{"refund declined", "payment_refund_declined", act("300", actMeta("refund")), []kac{{payonce.KindRefund, "key-a1", 300, "", "act_1"}}},
		{"refund pending", "payment_refund_pending", act("300", payMeta), []kac{{payonce.KindRefund, "", 300, "", "act_1"}}},
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
