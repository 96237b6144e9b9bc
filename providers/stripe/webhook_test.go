package stripe_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/stripe"
)

const whSecret = "whsec_test_0123456789abcdefFAKEsecretForPayonce"

// stripeSig is the v1 signature Stripe computes: hex HMAC-SHA256 of
// "<t>.<body>" keyed with the endpoint secret.
func stripeSig(secret string, t time.Time, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", t.Unix())
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func sigHeader(secret string, t time.Time, body []byte) string {
	return "t=" + strconv.FormatInt(t.Unix(), 10) + ",v1=" + stripeSig(secret, t, body)
}

func webhookProvider(t testing.TB, mod ...func(*stripe.Config)) *stripe.Provider {
	t.Helper()
	return testkit.New(t, stripe.New, stripe.Config{APIKey: testKey, WebhookSecret: whSecret, Now: func() time.Time { return testNow }}, mod...)
}

func delivery(body []byte, header string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(body))
	if header != "" {
		r.Header.Set("Stripe-Signature", header)
	}
	return r
}

func parseSigned(t *testing.T, p *stripe.Provider, body string) ([]payonce.WebhookEvent, error) {
	t.Helper()
	return p.ParseWebhook(delivery([]byte(body), sigHeader(whSecret, testNow, []byte(body))), []byte(body))
}

func evtBody(id, typ, object string) string {
	return `{"id":"` + id + `","object":"event","type":"` + typ + `","created":1772366400,"data":{"object":` + object + `}}`
}

// evtUpdated is evtBody with data.previous_attributes prev (a JSON object).
func evtUpdated(id, typ, object, prev string) string {
	return `{"id":"` + id + `","object":"event","type":"` + typ + `","created":1772366400,"data":{"object":` + object +
		`,"previous_attributes":` + prev + `}}`
}

const piMeta = `"metadata":{"payonce_op":"op-1","payonce_kind":"charge","payonce_key":"key-1"}`

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	body := []byte(evtBody("evt_1", "customer.created", `{"id":"cus_1","object":"customer"}`))
	good := sigHeader(whSecret, testNow, body)

	evs, err := p.ParseWebhook(delivery(body, good), body)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, "evt_1", evs[0].ID)
	require.Equal(t, "customer.created", evs[0].Type)
	require.Equal(t, time.Unix(1772366400, 0).UTC(), evs[0].OccurredAt)
	require.Empty(t, evs[0].Targets, "an event about nothing payonce sends has no targets")

	ts := strconv.FormatInt(testNow.Unix(), 10)
	for name, tc := range map[string]struct {
		header string
		body   []byte
		want   string
	}{
		"missing header":   {header: "", body: body, want: "no Stripe-Signature header"},
		"wrong secret":     {header: sigHeader("whsec_other", testNow, body), body: body, want: "no v1 signature matches"},
		"tampered body":    {header: good, body: bytes.Replace(body, []byte("cus_1"), []byte("cus_2"), 1), want: "no v1 signature matches"},
		"no v1":            {header: "t=" + ts, body: body, want: "no v1 signature"},
		"only v0":          {header: "t=" + ts + ",v0=" + stripeSig(whSecret, testNow, body), body: body, want: "no v1 signature"},
		"no timestamp":     {header: "v1=" + stripeSig(whSecret, testNow, body), body: body, want: "no valid timestamp"},
		"bad timestamp":    {header: "t=abc,v1=" + stripeSig(whSecret, testNow, body), body: body, want: "no valid timestamp"},
		"signed t changed": {header: "t=" + strconv.FormatInt(testNow.Unix()+1, 10) + ",v1=" + stripeSig(whSecret, testNow, body), body: body, want: "no v1 signature matches"},
		"two timestamps":   {header: good + ",t=" + ts, body: body, want: "more than one timestamp"},
		"not pairs":        {header: "garbage", body: body, want: "not t=...,v1=..."},
		"not hex":          {header: "t=" + ts + ",v1=zz", body: body, want: "no v1 signature matches"},
		"expired": {header: sigHeader(whSecret, testNow.Add(-5*time.Minute-time.Second), body), body: body,
			want: "more than the tolerance 5m0s"},
	} {
		_, err := p.ParseWebhook(delivery(tc.body, tc.header), tc.body)
		require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated, name)
		require.NotErrorIs(t, err, payonce.ErrWebhookCredentials, name)
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), whSecret, name)
		require.NotContains(t, err.Error(), stripeSig(whSecret, testNow, body), name)
	}

	// Within the tolerance, at its edge, and in the future (stripe-go
	// accepts future timestamps: it checks only their age).
	for _, at := range []time.Time{testNow.Add(-5 * time.Minute), testNow.Add(-time.Minute), testNow.Add(time.Hour)} {
		_, err := p.ParseWebhook(delivery(body, sigHeader(whSecret, at, body)), body)
		require.NoError(t, err, at)
	}

	// Rotation: Stripe sends a v1 per secret; any one may match, in any
	// place, next to other schemes.
	rotated := "t=" + ts + ",v1=" + stripeSig("whsec_old", testNow, body) + ", v0=abcd,v1=" + stripeSig(whSecret, testNow, body) + ",v1=00"
	_, err = p.ParseWebhook(delivery(body, rotated), body)
	require.NoError(t, err)

	// A longer tolerance accepts what the default refused.
	long := webhookProvider(t, func(c *stripe.Config) { c.WebhookTolerance = time.Hour })
	_, err = long.ParseWebhook(delivery(body, sigHeader(whSecret, testNow.Add(-30*time.Minute), body)), body)
	require.NoError(t, err)

	// No secret configured: refused with what to set.
	none, err := stripe.New(stripe.Config{APIKey: testKey})
	require.NoError(t, err)
	_, err = none.ParseWebhook(delivery(body, good), body)
	require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated)
	require.ErrorContains(t, err, "stripe.Config.WebhookSecret")
}

func TestWebhookMalformed(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	testkit.RequireMalformed(t, func(body string) error { _, err := parseSigned(t, p, body); return err }, map[string]string{
		"empty":                              ``,
		"not json":                           `{"id":`,
		"array":                              `[1,2]`,
		"no id":                              `{"object":"event","type":"payment_intent.succeeded","data":{"object":{}}}`,
		"no type":                            `{"id":"evt_1","object":"event","data":{"object":{}}}`,
		"thin event":                         `{"id":"evt_1","object":"v2.core.event","type":"x"}`,
		"wrong object":                       evtBody("evt_1", "payment_intent.succeeded", `{"id":"re_1","object":"refund"}`),
		"pi without id":                      evtBody("evt_1", "payment_intent.succeeded", `{"object":"payment_intent","status":"succeeded"}`),
		"refund not one":                     evtBody("evt_1", "refund.updated", `{"id":"pi_1","object":"payment_intent"}`),
		"charge not one":                     evtBody("evt_1", "charge.refunded", `{"id":"re_1","object":"refund"}`),
		"dispute not one":                    evtBody("evt_1", "charge.dispute.created", `{"id":"ch_1","object":"charge"}`),
		"nul in id":                          evtBody(`evt_\u0000`, "customer.created", `{}`),
		"no data":                            `{"id":"evt_1","object":"event","type":"refund.created"}`,
		"charge.refund.updated not a refund": evtBody("evt_1", "charge.refund.updated", `{"id":"ch_1","object":"charge"}`),
		"previous status not a string": evtUpdated("evt_1", "charge.refund.updated",
			`{"id":"re_1","object":"refund","status":"failed","metadata":{}}`, `{"status":7}`),
	})
}

func TestWebhookTargets(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	// Every target carries the object's own amount and currency (in upper
	// case), and the key of an object payonce created for its operation.
	charge := func(state payonce.LookupState) payonce.WebhookTarget {
		return payonce.WebhookTarget{Kind: payonce.KindCharge, OperationID: "op-1", ProviderRef: "pi_1", Key: "key-1",
			Amount: 500, Currency: "USD", State: state}
	}
	onPI := func(k payonce.Kind, state payonce.LookupState, amount int64, code, msg string) payonce.WebhookTarget {
		return payonce.WebhookTarget{Kind: k, ProviderRef: "pi_1", PaymentRef: "pi_1", Amount: amount, Currency: "USD",
			State: state, Code: code, Message: msg}
	}
	refundT := func(state payonce.LookupState, reversal bool, code, msg string) payonce.WebhookTarget {
		return payonce.WebhookTarget{Kind: payonce.KindRefund, OperationID: "op-r", ProviderRef: "re_1", PaymentRef: "pi_1",
			Key: "key-r", Amount: 300, Currency: "USD", State: state, Reversal: reversal, Code: code, Message: msg}
	}
	refundObj := func(status, reason string) string {
		return `{"id":"re_1","object":"refund","status":"` + status + `","failure_reason":"` + reason +
			`","payment_intent":"pi_1","amount":300,"currency":"usd","metadata":{"payonce_op":"op-r","payonce_kind":"refund","payonce_key":"key-r"}}`
	}
	pi := func(fields string) string {
		return `{"id":"pi_1","object":"payment_intent","amount":500,"currency":"usd",` + fields + `,` + piMeta + `}`
	}
	cannotCancel := "stripe: PaymentIntent is succeeded and can no longer be canceled"
	failedAfter := func(reason string) payonce.WebhookTarget {
		return refundT(payonce.LookupFailed, true, reason, "stripe: refund failed ("+reason+")")
	}

	for _, tc := range []struct {
		name, typ, object string
		// prev, when set, is the event's data.previous_attributes.
		prev string
		want []payonce.WebhookTarget
	}{
		{name: "succeeded, automatic capture", typ: "payment_intent.succeeded",
			object: pi(`"status":"succeeded","amount_received":500,"capture_method":"automatic"`),
			want:   []payonce.WebhookTarget{charge(payonce.LookupSucceeded), onPI(payonce.KindCancel, payonce.LookupFailed, 0, "payment_intent_unexpected_state", cannotCancel)}},
		{name: "succeeded, manual capture: the capture too, with the amount captured", typ: "payment_intent.succeeded",
			object: pi(`"status":"succeeded","amount_received":450,"capture_method":"manual"`),
			want: []payonce.WebhookTarget{charge(payonce.LookupSucceeded), onPI(payonce.KindCapture, payonce.LookupSucceeded, 450, "", ""),
				onPI(payonce.KindCancel, payonce.LookupFailed, 0, "payment_intent_unexpected_state", cannotCancel)}},
		{name: "authorized", typ: "payment_intent.amount_capturable_updated",
			object: pi(`"status":"requires_capture","amount_capturable":500,"capture_method":"manual"`),
			want:   []payonce.WebhookTarget{charge(payonce.LookupSucceeded)}},
		{name: "processing", typ: "payment_intent.processing", object: pi(`"status":"processing"`),
			want: []payonce.WebhookTarget{charge(payonce.LookupProcessing)}},
		{name: "payment failed", typ: "payment_intent.payment_failed",
			object: pi(`"status":"requires_payment_method","capture_method":"automatic"` +
				`,"last_payment_error":{"code":"card_declined","decline_code":"insufficient_funds","message":"Your card has insufficient funds."}`),
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-1", ProviderRef: "pi_1", Key: "key-1", Amount: 500, Currency: "USD",
				State: payonce.LookupFailed, Code: "card_declined", DeclineCode: "insufficient_funds", Message: "Your card has insufficient funds."}}},
		{name: "canceled before any charge: the failed capture checks no amount", typ: "payment_intent.canceled",
			object: pi(`"status":"canceled","cancellation_reason":"abandoned","latest_charge":null,"capture_method":"manual"`),
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-1", ProviderRef: "pi_1", Key: "key-1", Amount: 500, Currency: "USD",
				State: payonce.LookupFailed, Code: "canceled", Message: "stripe: PaymentIntent was canceled (abandoned) before any authorization"},
				onPI(payonce.KindCapture, payonce.LookupFailed, 0, "payment_intent_unexpected_state", "stripe: PaymentIntent is canceled"),
				onPI(payonce.KindCancel, payonce.LookupSucceeded, 0, "", "")}},
		{name: "canceled after a charge: the charge is left to its lookup", typ: "payment_intent.canceled",
			object: pi(`"status":"canceled","cancellation_reason":"requested_by_customer","latest_charge":"ch_1","capture_method":"manual"`),
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-1", ProviderRef: "pi_1", Key: "key-1", Amount: 500, Currency: "USD",
				State:   payonce.LookupProcessing,
				Message: "stripe: PaymentIntent is canceled (requested_by_customer); whether it was authorized first is known from its charge ch_1"},
				onPI(payonce.KindCapture, payonce.LookupFailed, 0, "payment_intent_unexpected_state", "stripe: PaymentIntent is canceled"),
				onPI(payonce.KindCancel, payonce.LookupSucceeded, 0, "", "")}},
		{name: "unknown status changes nothing", typ: "payment_intent.processing", object: pi(`"status":"brand_new"`),
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: "op-1", ProviderRef: "pi_1", Key: "key-1", Amount: 500, Currency: "USD",
				State: payonce.LookupProcessing, Message: `stripe: PaymentIntent status "brand_new"`}}},
		{name: "not payonce's: no operation id, no key", typ: "payment_intent.succeeded",
			object: `{"id":"pi_1","object":"payment_intent","status":"succeeded","amount":5,"amount_received":5,"currency":"usd","capture_method":"automatic",` +
				`"metadata":{"order":"x","payonce_key":"someone-else"}}`,
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "pi_1", Amount: 5, Currency: "USD", State: payonce.LookupSucceeded},
				onPI(payonce.KindCancel, payonce.LookupFailed, 0, "payment_intent_unexpected_state", cannotCancel)}},
		{name: "another kind's object: its key names no charge", typ: "payment_intent.succeeded",
			object: `{"id":"pi_1","object":"payment_intent","status":"succeeded","amount":500,"amount_received":500,"currency":"usd","capture_method":"automatic",` +
				`"metadata":{"payonce_op":"op-1","payonce_kind":"refund","payonce_key":"key-1"}}`,
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "pi_1", Amount: 500, Currency: "USD", State: payonce.LookupSucceeded},
				onPI(payonce.KindCancel, payonce.LookupFailed, 0, "payment_intent_unexpected_state", cannotCancel)}},

		{name: "refund created pending", typ: "refund.created", object: refundObj("pending", ""),
			want: []payonce.WebhookTarget{refundT(payonce.LookupProcessing, false, "", "")}},
		{name: "refund succeeded", typ: "refund.updated", object: refundObj("succeeded", ""), prev: `{"status":"pending"}`,
			want: []payonce.WebhookTarget{refundT(payonce.LookupSucceeded, false, "", "")}},
		{name: "refund failed after success", typ: "refund.failed", object: refundObj("failed", "lost_or_stolen_card"),
			want: []payonce.WebhookTarget{failedAfter("lost_or_stolen_card")}},
		{name: "refund.updated to failed with a reason", typ: "refund.updated", object: refundObj("failed", "expired_or_canceled_card"),
			prev: `{"status":"succeeded","failure_reason":null,"failure_balance_transaction":null}`,
			want: []payonce.WebhookTarget{failedAfter("expired_or_canceled_card")}},
		{name: "refund canceled", typ: "refund.updated", object: refundObj("canceled", ""), prev: `{"status":"pending"}`,
			want: []payonce.WebhookTarget{refundT(payonce.LookupFailed, false, "refund_canceled", "stripe: refund canceled")}},
		{name: "refund not payonce's: matched by its id only", typ: "refund.updated",
			object: `{"id":"re_9","object":"refund","status":"succeeded","payment_intent":"pi_1","amount":70,"currency":"eur","metadata":{"payonce_key":"k"}}`,
			want:   []payonce.WebhookTarget{{Kind: payonce.KindRefund, ProviderRef: "re_9", Amount: 70, Currency: "EUR", State: payonce.LookupSucceeded}}},

		// API versions before 2024-10-28: a card refund's changes come as
		// charge.refund.updated, whose object is the Refund.
		{name: "charge.refund.updated: failed after it succeeded", typ: "charge.refund.updated", object: refundObj("failed", "expired_or_canceled_card"),
			prev: `{"failure_balance_transaction":null,"failure_reason":null,"status":"succeeded"}`,
			want: []payonce.WebhookTarget{failedAfter("expired_or_canceled_card")}},
		{name: "charge.refund.updated: failed after it succeeded, no reason given", typ: "charge.refund.updated", object: refundObj("failed", ""),
			prev: `{"status":"succeeded"}`,
			want: []payonce.WebhookTarget{refundT(payonce.LookupFailed, true, "refund_failed", "stripe: refund failed")}},
		{name: "charge.refund.updated: failed while pending", typ: "charge.refund.updated", object: refundObj("failed", ""), prev: `{"status":"pending"}`,
			want: []payonce.WebhookTarget{refundT(payonce.LookupFailed, false, "refund_failed", "stripe: refund failed")}},
		{name: "charge.refund.updated: succeeded", typ: "charge.refund.updated", object: refundObj("succeeded", ""), prev: `{"status":"pending"}`,
			want: []payonce.WebhookTarget{refundT(payonce.LookupSucceeded, false, "", "")}},
		{name: "charge.refund.updated: metadata changed", typ: "charge.refund.updated", object: refundObj("succeeded", ""), prev: `{"metadata":{}}`,
			want: []payonce.WebhookTarget{refundT(payonce.LookupSucceeded, false, "", "")}},

		{name: "charge.refunded with embedded refunds", typ: "charge.refunded",
			object: `{"id":"ch_1","object":"charge","payment_intent":"pi_1","amount":500,"currency":"usd","refunds":{"object":"list","data":[` + refundObj("succeeded", "") + `,` +
				`{"id":"re_2","object":"refund","status":"pending","amount":200,"currency":"usd","metadata":{"payonce_op":"op-r2","payonce_kind":"refund","payonce_key":"key-r2"}}]}}`,
			want: []payonce.WebhookTarget{refundT(payonce.LookupSucceeded, false, "", ""),
				{Kind: payonce.KindRefund, OperationID: "op-r2", ProviderRef: "re_2", PaymentRef: "pi_1", Key: "key-r2", Amount: 200, Currency: "USD",
					State: payonce.LookupProcessing}}},
		{name: "charge.refunded with an embedded refund that failed", typ: "charge.refunded",
			object: `{"id":"ch_1","object":"charge","payment_intent":"pi_1","refunds":{"object":"list","data":[` + refundObj("failed", "lost_or_stolen_card") + `]}}`,
			want:   []payonce.WebhookTarget{failedAfter("lost_or_stolen_card")}},
		{name: "charge.refunded without refunds", typ: "charge.refunded", object: `{"id":"ch_1","object":"charge","payment_intent":"pi_1"}`},
		{name: "dispute: no amount, currency or key", typ: "charge.dispute.created",
			object: `{"id":"du_1","object":"dispute","reason":"fraudulent","status":"needs_response","payment_intent":"pi_1","charge":"ch_1","amount":200,"currency":"usd","metadata":{}}`,
			want: []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: "pi_1", State: payonce.LookupFailed, Reversal: true,
				Code: "dispute", Message: "stripe: dispute du_1 opened (reason fraudulent, status needs_response)"}}},
		{name: "dispute without a PaymentIntent", typ: "charge.dispute.created", object: `{"id":"du_1","object":"dispute","charge":"ch_1"}`},
		{name: "unknown type", typ: "invoice.paid", object: `{"id":"in_1","object":"invoice"}`},
		{name: "unknown type whose previous status is not a string", typ: "account.updated", object: `{"id":"acct_1","object":"account"}`,
			prev: `{"status":{"x":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := evtBody("evt_x", tc.typ, tc.object)
			if tc.prev != "" {
				body = evtUpdated("evt_x", tc.typ, tc.object, tc.prev)
			}
			evs, err := parseSigned(t, p, body)
			require.NoError(t, err)
			require.Len(t, evs, 1)
			require.Equal(t, tc.want, evs[0].Targets)
			require.Equal(t, tc.typ, evs[0].Type)
		})
	}
}

func TestWebhookScrubsMessages(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	obj := `{"id":"pi_1","object":"payment_intent","status":"requires_payment_method",` + piMeta +
		`,"last_payment_error":{"code":"x\u0000y","message":"key ` + testKey + ` secret ` + whSecret + `"}}`
	evs, err := parseSigned(t, p, evtBody("evt_1", "payment_intent.payment_failed", obj))
	require.NoError(t, err)
	got := evs[0].Targets[0]
	require.Equal(t, "xy", got.Code)
	require.NotContains(t, got.Message, testKey)
	require.NotContains(t, got.Message, whSecret)
}

func TestWebhookConfig(t *testing.T) {
	t.Parallel()
	_, err := stripe.New(stripe.Config{APIKey: testKey, WebhookTolerance: -time.Second})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "stripe.Config.WebhookTolerance")
	_, err = stripe.New(stripe.Config{APIKey: testKey, WebhookSecret: "whsec_a b"})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "stripe.Config.WebhookSecret")
	require.NotContains(t, err.Error(), "whsec_a b")

	cfg := stripe.Config{APIKey: testKey, WebhookSecret: whSecret}
	p, err := stripe.New(cfg)
	require.NoError(t, err)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	log.Info("x", "cfg", cfg, "p", p, "pv", *p)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg), fmt.Sprintf("%v %+v %#v %s", p, p, p, *p), buf.String()} {
		require.NotContains(t, s, whSecret)
		require.NotContains(t, s, testKey)
	}
	require.Contains(t, cfg.String(), "WebhookSecret:[REDACTED] WebhookTolerance:0s")
	require.Contains(t, p.String(), "WebhookSecret:[REDACTED] WebhookTolerance:5m0s")
}

// TestWebhookErrorsAreTyped: a rejected delivery is a typed error that
// never quotes the body.
func TestWebhookErrorsAreTyped(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	_, err := p.ParseWebhook(delivery([]byte(`{}`), "t=1,v1=00"), []byte(`{}`))
	require.True(t, errors.Is(err, payonce.ErrWebhookUnauthenticated))
	require.False(t, strings.Contains(err.Error(), "{}"), "the body is never quoted")
}

// The ledger tells an event's key generation by the key payonce wrote on
// the object (metadata payonce_key), and checks the object's amount and
// currency against the operation: a target without them can only be
// placed by its reference, and an object of another amount settles the
// operation. Every object payonce creates carries its key.
func TestWebhookTargetsCarryKeyAmountCurrency(t *testing.T) {
	t.Parallel()
	p := webhookProvider(t)
	refund := `{"id":"re_1","object":"refund","status":"succeeded","payment_intent":"pi_1","amount":500,"currency":"usd",` +
		`"metadata":{"payonce_op":"op-r","payonce_kind":"refund","payonce_key":"key-r-g1"}}`
	evs, err := parseSigned(t, p, evtBody("evt_k", "refund.updated", refund))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Len(t, evs[0].Targets, 1)
	got := evs[0].Targets[0]
	require.Equal(t, "key-r-g1", got.Key, "the refund's key names its generation")
	require.Equal(t, int64(500), got.Amount)
	require.Equal(t, "usd", strings.ToLower(got.Currency))

	pi := `{"id":"pi_1","object":"payment_intent","status":"succeeded","amount":500,"amount_received":500,"currency":"usd","capture_method":"automatic",` +
		`"metadata":{"payonce_op":"op-1","payonce_kind":"charge","payonce_key":"key-c-g0"}}`
	evs, err = parseSigned(t, p, evtBody("evt_c", "payment_intent.succeeded", pi))
	require.NoError(t, err)
	require.Equal(t, "key-c-g0", evs[0].Targets[0].Key, "the charge's key names its generation")
	require.Equal(t, int64(500), evs[0].Targets[0].Amount)
}
