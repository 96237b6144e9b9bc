package stripe_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/stripe"
)

// testKey is a fake secret key; tests check it never leaks.
const testKey = "sk_test_51FAKEkeyForPayonceTests0123456789abcdefXYZ"

const base = "https://api.stripe.com"

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle = testkit.Adapter[*stripe.Provider]

// setup returns a Provider and an *http.Client whose own mock transport
// answers its requests (testkit.Setup).
func setup(t *testing.T, mod ...func(*stripe.Config)) bundle {
	t.Helper()
	return testkit.Setup(t, stripe.New, stripe.Config{APIKey: testKey, Now: func() time.Time { return testNow }}, mod...)
}

// wire is how the adapter's requests look to Stripe.
var wire = testkit.Wire{
	Authorization: "Bearer " + testKey,
	ContentType:   "application/x-www-form-urlencoded",
	KeyHeader:     "Idempotency-Key",
	Bad: func() *http.Response {
		return respond(400, `{"error":{"type":"invalid_request_error","message":"bad lookup request"}}`)
	},
}

func chargeReq() payonce.SendRequest {
	return testkit.ChargeRequest(1999, "EUR", "pm_card_visa", "cus_123", map[string]string{"order_id": "42", "shop": "main"})
}

var withKind = testkit.WithKind

var respond = testkit.Respond

// opID and opKey are chargeReq's operation id and key (generation 0).
const (
	opID  = testkit.OpID
	opKey = opID
)

// object renders a Stripe object: base with the overrides kv (name,
// value pairs; a nil value renders null) applied.
func object(base map[string]any, kv ...any) string {
	for i := 0; i+1 < len(kv); i += 2 {
		base[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(base)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// md is payonce's metadata for the operation opID under key.
func md(key string) map[string]string {
	return map[string]string{stripe.MetaOperation: opID, stripe.MetaKey: key, stripe.MetaKind: "charge"}
}

// piObj is a PaymentIntent of chargeReq's charge (amount 1999, eur,
// created under opKey), with overrides.
func piObj(id, status string, kv ...any) string {
	return object(map[string]any{
		"id": id, "object": "payment_intent", "status": status, "amount": 1999,
		"amount_capturable": 0, "amount_received": 0, "currency": "eur", "capture_method": "automatic",
		"metadata": md(opKey), "latest_charge": nil, "last_payment_error": nil, "cancellation_reason": nil,
	}, kv...)
}

// refundObj is a Refund of pi_1 for operation opID (amount 100, eur), with
// overrides.
func refundObj(id, status string, kv ...any) string {
	return object(map[string]any{
		"id": id, "object": "refund", "status": status, "amount": 100, "currency": "eur",
		"payment_intent": "pi_1", "failure_reason": nil,
		"metadata": map[string]string{stripe.MetaOperation: opID, stripe.MetaKey: opKey, stripe.MetaKind: "refund"},
	}, kv...)
}

// chargeObj is a Charge of PaymentIntent pi, with overrides.
func chargeObj(id, pi, status string, paid bool, kv ...any) string {
	return object(map[string]any{
		"id": id, "object": "charge", "status": status, "paid": paid, "captured": false,
		"amount": 1999, "amount_captured": 0, "currency": "eur", "payment_intent": pi,
	}, kv...)
}

// rawJSON embeds s in an object as JSON, not as a string.
func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }
