package providertest

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/adyen"
	"github.com/payonce/payonce/providers/checkout"
	"github.com/payonce/payonce/providers/stripe"
	"github.com/payonce/payonce/providers/yookassa"
)

// The environments of the four adapters: a fresh fake built from the
// Options and the adapter pointed at it. Each adapter's package runs the
// suite with its own; the root package runs its soak on PostgreSQL with
// StripeEnv (Soak).

// The webhook credentials of the environments: test values, shared by
// each fake (which signs or sends them) and its adapter (which verifies).
const (
	stripeWebhookSecret          = "whsec_providertest_endpoint"
	checkoutWebhookSecret        = "providertest-cko-signature-key"
	checkoutWebhookAuthorization = "providertest-cko-authorization"
	// adyenHMACKey is hex, as Adyen's Customer Area shows an HMAC key.
	adyenHMACKey        = "5D2F8A61C0E94B7385AF1D0C6E2B9A4F7C31E8D05B6A92F4E1C7D83A0B5F6E29"
	adyenWebhookUser    = "providertest-adyen"
	adyenWebhookPass    = "providertest-adyen-password"
	adyenShopper        = "providertest-shopper"
	adyenAnotherHMACKey = "0A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F9"
)

// StripeEnv is the environment of the Stripe adapter.
func StripeEnv(t *testing.T, o Options) *Env {
	hooks := o.WebhookDelivery(false)
	hooks.Secret = stripeWebhookSecret
	fake := mocks.NewStripe(mocks.StripeOptions{
		Options: mocks.Options{
			Clock: o.Clock.Now, KeyTTL: o.KeyTTL, Seed: o.Seed,
			FaultRates: o.FaultRates, FaultGETs: o.FaultGETs,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.RetryAfter,
			Webhooks: hooks,
		},
		SearchLag: o.FakeLag,
	})
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(),
		KeyTTL: o.KeyTTL, SearchLag: o.LookupLag, Now: o.Clock.Now, WebhookSecret: stripeWebhookSecret,
		// The suite's lag scenarios need a lookup that lags: Stripe's
		// search. The adapter's default list lookup (consistent, Lag 0) is
		// tested in providers/stripe.
		ListDisabled: true})
	return adapterEnv(t, fake, fake.Close, psp, err, "/v1/payment_intents", "/v1/payment_intents/{id}/capture",
		"/v1/payment_intents/{id}/cancel", "/v1/refunds", Env{
			Currency:         "USD",
			GoodMethod:       "pm_card_visa",
			DeclinedMethod:   "pm_card_chargeDeclinedInsufficientFunds",
			DeclineErrorCode: "card_declined",
			DeclineCode:      "insufficient_funds",
			DeclineMessage:   "Your card has insufficient funds.",

			// Stripe stores every executed answer, 500s included, and
			// replays it for the key.
			StoredErrors:       StoredErrorsReplayed,
			KeyInUseStatus:     http.StatusConflict,
			ReportsKeyMismatch: true,
			TwoStage:           true,
			// The fake's search lags behind creation by SearchLag.
			FakeLag: true,

			// Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret,
			// "<t>.<body>")>, refused once older than the tolerance
			// (https://docs.stripe.com/webhooks#verify-manually).
			WebhookForgeries: []Forgery{
				dropHeader("Stripe-Signature"),
				changedBody(),
				{Name: "signed with another endpoint's secret", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
					d.Header.Set("Stripe-Signature", stripeSignature("whsec_another_endpoint", o.Clock.Now().Unix(), d.Body))
				}},
				{Name: "signed longer ago than the tolerance (a captured delivery replayed later)", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
					old := o.Clock.Now().Add(-2 * stripe.DefaultWebhookTolerance).Unix()
					d.Header.Set("Stripe-Signature", stripeSignature(stripeWebhookSecret, old, d.Body))
				}},
			},
			// A card refund can fail days after it succeeded: refund.updated
			// (status failed, failure_reason) then refund.failed
			// (https://docs.stripe.com/refunds#failed-refunds). The first
			// is the contradiction; the second finds the operation in
			// review already.
			Reversal: &Reversal{Kind: payonce.KindRefund, EventType: "refund.updated",
				Reverse: func(ref string) error { return fake.FailRefund(ref, "expired_or_canceled_card") }},
		})
}

// stripeSignature is a Stripe-Signature header for body, signed at unix
// with secret (https://docs.stripe.com/webhooks#verify-manually).
func stripeSignature(secret string, unix int64, body []byte) string {
	t := strconv.FormatInt(unix, 10)
	return "t=" + t + ",v1=" + hmacHex(secret, []byte(t+"."), body)
}

// YooKassaEnv is the environment of the YooKassa adapter.
func YooKassaEnv(t *testing.T, o Options) *Env {
	fake := mocks.NewYooKassa(mocks.YooKassaOptions{
		Options: mocks.Options{
			Clock: o.Clock.Now, KeyTTL: o.KeyTTL, Seed: o.Seed,
			FaultRates: o.FaultRates, FaultGETs: o.FaultGETs,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.RetryAfter,
			// YooKassa signs nothing and sends no credentials.
			Webhooks: o.WebhookDelivery(false),
		},
	})
	psp, err := yookassa.New(yookassa.Config{ShopID: fake.ShopID(), SecretKey: fake.SecretKey(), BaseURL: fake.URL(),
		KeyTTL: o.KeyTTL, ListLag: o.LookupLag, Now: o.Clock.Now,
		// The fake delivers from loopback; exactly these two addresses,
		// so that a neighbour (127.0.0.2) is refused as any other source.
		WebhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}})
	return adapterEnv(t, fake, fake.Close, psp, err, "/v3/payments", "/v3/payments/{id}/capture",
		"/v3/payments/{id}/cancel", "/v3/refunds", Env{
			Currency:         "RUB",
			GoodMethod:       mocks.YooKassaMethodSucceeds,
			DeclinedMethod:   mocks.YooKassaMethodInsufficientFunds,
			DeclineErrorCode: "canceled",
			DeclineCode:      "insufficient_funds",

			// "500: the result is unknown, repeat with the same key": the
			// key keeps the real outcome.
			StoredErrors: StoredErrorsRealOutcome,
			// A repeat while the first request runs: 202 with retry_after.
			KeyInUseStatus:     http.StatusAccepted,
			ReportsKeyMismatch: true,
			TwoStage:           true,

			// Notifications are neither signed nor authenticated: only the
			// source address is checked (403), and each one only makes the
			// operation due for a lookup (yookassa.Provider.ParseWebhook).
			WebhooksLookupOnly: true,
			WebhookForgeries: []Forgery{
				fromAddress("203.0.113.9:443"), fromAddress("[2001:db8::1]:443"), fromAddress("127.0.0.2:40000"),
			},
			Skip: map[string]string{
				ScenarioWebhookContradiction: "YooKassa sends no event that undoes a settled outcome (its notifications are " +
					"payment.waiting_for_capture, payment.succeeded, payment.canceled and refund.succeeded), and a notification " +
					"is never trusted by itself: only the lookup it prompts decides",
				ScenarioWebhookEarlierGeneration: "the scenario undoes key generation 0 at the provider with Env.Reversal, and " +
					"YooKassa sends no event that undoes a settled outcome (see WebhookContradiction); its notifications only " +
					"prompt a lookup, which sees every key generation",
			},
		})
}

// CheckoutEnv is the environment of the Checkout.com adapter.
func CheckoutEnv(t *testing.T, o Options) *Env {
	hooks := o.WebhookDelivery(false)
	hooks.Secret, hooks.Authorization = checkoutWebhookSecret, checkoutWebhookAuthorization
	fake := mocks.NewCheckout(mocks.CheckoutOptions{
		Options: mocks.Options{
			Clock: o.Clock.Now, KeyTTL: o.KeyTTL, Seed: o.Seed,
			FaultRates: o.FaultRates, FaultGETs: o.FaultGETs,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.RetryAfter,
			Webhooks: hooks,
		},
	})
	psp, err := checkout.New(checkout.Config{SecretKey: fake.SecretKey(), BaseURL: fake.URL(),
		KeyTTL: o.KeyTTL, SettleLag: o.LookupLag, Now: o.Clock.Now,
		WebhookSecret: checkoutWebhookSecret, WebhookAuthorization: checkoutWebhookAuthorization})
	return adapterEnv(t, fake, fake.Close, psp, err, "/payments", "/payments/{id}/captures",
		"/payments/{id}/voids", "/payments/{id}/refunds", Env{
			Currency:         "USD",
			GoodMethod:       mocks.CheckoutSourceApproved,
			DeclinedMethod:   mocks.CheckoutSourceInsufficientFunds,
			DeclineErrorCode: "declined",
			DeclineCode:      "20051",
			DeclineMessage:   "Insufficient Funds",

			// Only 2xx answers are kept under Cko-Idempotency-Key: after a
			// 5xx the same key is processed as a new payment.
			StoredErrors:   StoredErrorsForgotten,
			KeyInUseStatus: http.StatusConflict,
			// Checkout.com documents no answer for a key reused with
			// another body; the fake replays the first request's 2xx (the
			// documented "same status and body"), which the adapter reads
			// as key_mismatch with a Contradiction. The client sends that
			// to review with ReasonContradicted, not ReasonKeyMismatch, so
			// the suite's scenario (which expects the latter) is skipped;
			// TestE2ESameKeyOtherRequest covers it.
			ReportsKeyMismatch: false,
			TwoStage:           true,
			// Captures, voids and refunds: 202 Accepted, finished later.
			AcceptsActions: true,

			// The webhook's Authorization header (401 when wrong) and
			// Cko-Signature, the hex HMAC-SHA256 of the raw body keyed with
			// the signature key
			// (https://www.checkout.com/docs/developer-resources/webhooks/manage-webhooks/set-up-your-webhook-receiver).
			WebhookForgeries: []Forgery{
				dropHeader("Cko-Signature"),
				changedBody(),
				{Name: "signed with another signature key", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
					d.Header.Set("Cko-Signature", hmacHex("another-signature-key", d.Body))
				}},
				{Name: "no Authorization header", Status: http.StatusUnauthorized, Forge: func(d *Delivery) { d.Header.Del("Authorization") }},
				{Name: "wrong Authorization header", Status: http.StatusUnauthorized, Forge: func(d *Delivery) {
					d.Header.Set("Authorization", checkoutWebhookAuthorization+"x")
				}},
			},
			// A capture answered 202 Accepted may be declined afterwards:
			// payment_capture_declined
			// (https://www.checkout.com/docs/workflows/webhook-event-types/payment_capture_declined).
			Reversal: &Reversal{Kind: payonce.KindCapture, EventType: "payment_capture_declined",
				Reverse: fake.DeclineCapture},
		})
}

// AdyenEnv is the environment of the Adyen adapter. Adyen has no status
// lookup and reports the outcome of captures, cancels and refunds only by
// webhook, so its fake delivers webhooks in every scenario (Env.WebhookOnly).
func AdyenEnv(t *testing.T, o Options) *Env {
	hooks := o.WebhookDelivery(true)
	hooks.Secret, hooks.Username, hooks.Password = adyenHMACKey, adyenWebhookUser, adyenWebhookPass
	fake := mocks.NewAdyen(mocks.AdyenOptions{
		Options: mocks.Options{
			Clock: o.Clock.Now, KeyTTL: o.KeyTTL, Seed: o.Seed,
			FaultRates: o.FaultRates, FaultGETs: o.FaultGETs,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.RetryAfter,
			Webhooks: hooks,
		},
	})
	psp, err := adyen.New(adyen.Config{APIKey: fake.APIKey(), MerchantAccount: fake.MerchantAccount(), BaseURL: fake.URL(),
		KeyTTL: o.KeyTTL, WebhookLag: o.LookupLag, Now: o.Clock.Now,
		HMACKey: adyenHMACKey, WebhookUsername: adyenWebhookUser, WebhookPassword: adyenWebhookPass})
	return adapterEnv(t, fake, fake.Close, psp, err, "/payments", "/payments/{id}/captures",
		"/payments/{id}/cancels", "/payments/{id}/refunds", Env{
			Currency:       "EUR",
			GoodMethod:     mocks.AdyenMethodAuthorised,
			DeclinedMethod: mocks.AdyenMethodNotEnoughBalance,
			// A refusal: resultCode Refused, refusalReasonCode 12, "Not
			// enough balance" (providers/adyen/classify.go).
			DeclineCode: "12",
			// Stored payment methods belong to a shopper (shopperReference).
			Customer: adyenShopper,
			// Adyen keeps keys per company: the adapter sends a key scoped
			// to its merchant account.
			WireKey: func(key string) string { return adyen.IdempotencyKey(fake.MerchantAccount(), key) },
			// Captures and refunds name their amount: Adyen has no "the
			// whole payment" form.
			NoFullCapture: true,

			// "If the Adyen payments platform already processed the
			// request, the response to the first attempt will be returned"
			// (https://docs.adyen.com/development-resources/api-idempotency):
			// every executed answer is kept, errors included.
			StoredErrors: StoredErrorsReplayed,
			// 409, errorCode 704: "request already processed or in progress".
			KeyInUseStatus: http.StatusConflict,
			// A key reused with another request is answered with the first
			// request's stored answer, which the adapter reads as
			// key_mismatch with a Contradiction: review with
			// ReasonContradicted, as for Checkout.com.
			ReportsKeyMismatch: false,
			TwoStage:           true,
			WebhookOnly:        true,

			// Basic auth on the endpoint (401), and every item's
			// additionalData.hmacSignature: base64 HMAC-SHA256 of
			// pspReference:originalReference:merchantAccountCode:
			// merchantReference:value:currency:eventCode:success
			// (providers/adyen/webhook.go; Adyen's HMACValidator).
			WebhookForgeries: []Forgery{
				{Name: "no basic auth", Status: http.StatusUnauthorized, Forge: func(d *Delivery) { d.Header.Del("Authorization") }},
				{Name: "wrong basic-auth password", Status: http.StatusUnauthorized, Forge: func(d *Delivery) {
					d.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(adyenWebhookUser+":wrong")))
				}},
				{Name: "amount changed after signing", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
					adyenItems(t, d, func(it adyenItem) {
						amount := it["amount"].(map[string]any)
						v, err := amount["value"].(json.Number).Int64()
						require.NoError(t, err)
						amount["value"] = v + 1
					})
				}},
				{Name: "signed with another HMAC key", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
					adyenItems(t, d, func(it adyenItem) {
						it["additionalData"] = map[string]string{"hmacSignature": adyenSignature(adyenAnotherHMACKey, it)}
					})
				}},
				{Name: "no hmacSignature", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
					adyenItems(t, d, func(it adyenItem) { it["additionalData"] = nil })
				}},
			},
			// A capture can be rejected by the card scheme after Adyen
			// reported it: CAPTURE_FAILED
			// (https://docs.adyen.com/online-payments/capture/failure-reasons).
			Reversal: &Reversal{Kind: payonce.KindCapture, EventType: "CAPTURE_FAILED", Reverse: func(ref string) error {
				if !fake.FailCapture(ref) {
					return errors.New("providertest: " + ref + " is no succeeded capture of the fake Adyen")
				}
				return nil
			}},
		})
}

// adyenItem is one NotificationRequestItem of an Adyen notification as
// decoded JSON (numbers as json.Number), so that a forgery changes the one
// member it means to and keeps every other as the fake rendered it.
type adyenItem map[string]any

// adyenItems rewrites every notification item of d's body,
// {"live": ..., "notificationItems": [{"NotificationRequestItem": {...}}]},
// with change.
func adyenItems(t *testing.T, d *Delivery, change func(adyenItem)) {
	var n map[string]any
	dec := json.NewDecoder(bytes.NewReader(d.Body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&n))
	containers, ok := n["notificationItems"].([]any)
	require.True(t, ok, "an Adyen notification has notificationItems")
	for _, c := range containers {
		it, ok := c.(map[string]any)["NotificationRequestItem"].(map[string]any)
		require.True(t, ok, "each notificationItems entry wraps a NotificationRequestItem")
		change(it)
	}
	body, err := json.Marshal(n)
	require.NoError(t, err)
	d.Body = body
}

// adyenSignature is an item's hmacSignature under the hex key.
func adyenSignature(hexKey string, it adyenItem) string {
	key, err := hex.DecodeString(hexKey)
	if err != nil {
		panic(err)
	}
	str := func(m map[string]any, k string) string {
		switch v := m[k].(type) {
		case string:
			return v
		case json.Number:
			return v.String()
		}
		return ""
	}
	amount, _ := it["amount"].(map[string]any)
	data := strings.Join([]string{str(it, "pspReference"), str(it, "originalReference"), str(it, "merchantAccountCode"),
		str(it, "merchantReference"), str(amount, "value"), str(amount, "currency"), str(it, "eventCode"), str(it, "success")}, ":")
	raw, _ := hex.DecodeString(hmacHex(string(key), []byte(data)))
	return base64.StdEncoding.EncodeToString(raw)
}

// adapterEnv completes e, the adapter's traits, with its provider, its
// fake (closed with t.Cleanup) and the paths of its four POST endpoints.
func adapterEnv(t *testing.T, fake Fake, closeFake func(), psp payonce.Provider, err error,
	charge, capture, cancel, refund string, e Env) *Env {
	t.Cleanup(closeFake)
	require.NoError(t, err)
	e.Provider, e.Fake = psp, fake
	post := func(path string) mocks.Match { return mocks.Match{Method: http.MethodPost, Path: path} }
	e.Charge, e.Capture, e.Cancel, e.Refund = post(charge), post(capture), post(cancel), post(refund)
	return &e
}
