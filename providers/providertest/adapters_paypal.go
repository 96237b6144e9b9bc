package providertest

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
)

// PayPal's routes, as the fake's route patterns name them (the suite
// counts requests per pattern).
const (
	paypalOrders         = "/v2/checkout/orders"
	paypalAuthCapture    = "/v2/payments/authorizations/{id}/capture"
	paypalAuthVoid       = "/v2/payments/authorizations/{id}/void"
	paypalCaptureRefund  = "/v2/payments/captures/{id}/refund"
	paypalToken          = "/v1/oauth2/token"
	paypalVerifySig      = "/v1/notifications/verify-webhook-signature"
	paypalCert           = "/v1/notifications/certs/{name}"
	paypalCustomID       = "custom_id"
	paypalHeaderSig      = "Paypal-Transmission-Sig"
	paypalHeaderID       = "Paypal-Transmission-Id"
	paypalHeaderTime     = "Paypal-Transmission-Time"
	paypalHeaderCertURL  = "Paypal-Cert-Url"
	paypalReversedCharge = "PAYMENT.CAPTURE.REVERSED"
)

// PayPalEnv is the environment of the PayPal adapter, verifying webhooks
// offline (the certificate from PAYPAL-CERT-URL, fetched from the fake's
// certificate host, chained to the fake's test root), with both of
// PayPal's key windows set to Options.KeyTTL.
func PayPalEnv(t *testing.T, o Options) *Env { return PayPalEnvConfig{}.Env(t, o) }

// PayPalEnvConfig varies PayPalEnv.
type PayPalEnvConfig struct {
	// Verification is how the adapter verifies webhooks. Defaults to
	// paypal.VerifyOffline.
	Verification paypal.WebhookVerification
	// OrdersKeyTTL, when set, is the Orders window (charges) of the fake
	// and the adapter, which then differs from the Payments window
	// (captures, cancels, refunds: Options.KeyTTL). Zero: Options.KeyTTL.
	OrdersKeyTTL time.Duration
}

// Env builds the environment; it has the signature Run and Soak take.
func (c PayPalEnvConfig) Env(t *testing.T, o Options) *Env {
	verify := cmp.Or(c.Verification, paypal.VerifyOffline)
	orders := cmp.Or(c.OrdersKeyTTL, o.KeyTTL)
	fake := mocks.NewPayPal(mocks.PayPalOptions{
		Options: mocks.Options{
			Clock: o.Clock.Now, Seed: o.Seed,
			FaultRates: o.FaultRates, FaultGETs: o.FaultGETs,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.RetryAfter,
			// PayPal signs with its certificate over the webhook's id: the
			// fake's own, which the adapter is configured with below.
			Webhooks: o.WebhookDelivery(false),
		},
		// The suite has one key window: both of PayPal's (Orders: 6 h by
		// default, up to 72 h; Payments: 45 days) are set to it unless
		// c.OrdersKeyTTL says otherwise (24 h <= 72 h is an Orders window
		// an account may have).
		OrdersKeyTTL: orders, PaymentsKeyTTL: o.KeyTTL,
		// Transaction search lag (the audit's); lookups read objects by
		// id, which PayPal answers at once.
		SearchLag: o.FakeLag,
	})
	psp, err := paypal.New(paypal.Config{ClientID: fake.ClientID(), ClientSecret: fake.ClientSecret(), BaseURL: fake.URL(),
		OrdersKeyTTL: orders, PaymentsKeyTTL: o.KeyTTL, Now: o.Clock.Now,
		WebhookID: fake.WebhookID(), WebhookVerification: verify,
		WebhookRoots: fake.WebhookRoots(), WebhookCertHosts: []string{fake.CertHost()}})
	// A certificate URL on a host the adapter does not list must be
	// refused without fetching it: this loopback server counts every
	// fetch.
	var elsewhere atomic.Int64
	foreignCerts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(func() {
		foreignCerts.Close()
		if n := elsewhere.Load(); n > 0 && verify == paypal.VerifyOffline {
			t.Errorf("the adapter fetched a webhook certificate %d times from a host it does not list", n)
		}
	})
	e := Env{
		Currency:       "USD",
		GoodMethod:     mocks.PayPalVaultApproved,
		DeclinedMethod: mocks.PayPalVaultDeclined,

		// "If you make a call with the same PayPal-Request-Id, the API
		// returns the latest status of the request"
		// (https://developer.paypal.com/reference/guidelines/idempotency/):
		// a 500 is not what the key keeps; a repeat learns the outcome.
		StoredErrors: StoredErrorsRealOutcome,
		// 409 PREVIOUS_REQUEST_IN_PROGRESS while the first request with
		// the request id still runs.
		KeyInUseStatus: http.StatusConflict,
		// PayPal documents no refusal of a request id reused with another
		// body: the repeat answers the earlier request's latest status,
		// which the adapter reads as a Contradiction (another custom_id,
		// amount or currency): review with ReasonContradicted, as for
		// Checkout.com and Adyen.
		ReportsKeyMismatch: false,
		TwoStage:           true,
		// Orders has no search by the adapter's ids: a charge whose
		// request never answered with an order or capture id is looked
		// up by repeating it with the same PayPal-Request-Id, at once
		// (the adapter's lookups read by id and never lag).
		RepeatIsLookup: true,
		// A verified event is applied from its object as PayPal's API
		// holds it (GET by id): the signature binds the body only by
		// CRC32.
		WebhookReads: true,
		// The token call, the webhook certificate and the webhook
		// verification call move no money and look nothing up.
		Auxiliary: []mocks.Match{{Method: http.MethodPost, Path: paypalToken},
			{Method: http.MethodPost, Path: paypalVerifySig}, {Method: http.MethodGet, Path: paypalCert}},
		// custom_id carries the operation id on the order's payment
		// objects and on refunds (the fake's Reference and metadata).
		RefundOperation: func(r mocks.TruthRefund) string {
			if v := r.Metadata[paypalCustomID]; v != "" {
				return v
			}
			return r.Reference
		},

		// Offline verification: SHA256withRSA over
		// transmissionId|transmissionTime|webhookId|crc32(body) with the
		// certificate PAYPAL-CERT-URL names
		// (https://developer.paypal.com/api/rest/webhooks/rest/#link-verifysignature).
		WebhookForgeries: []Forgery{
			dropHeader(paypalHeaderSig),
			changedBody(),
			{Name: "event changed after signing (its summary)", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
				var ev map[string]any
				require.NoError(t, json.Unmarshal(d.Body, &ev))
				ev["summary"] = fmt.Sprint(ev["summary"], " (changed)")
				body, err := json.Marshal(ev)
				require.NoError(t, err)
				d.Body = body
			}},
			{Name: "transmission id changed after signing", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
				d.Header.Set(paypalHeaderID, d.Header.Get(paypalHeaderID)+"0")
			}},
			{Name: "transmission time changed after signing", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
				d.Header.Set(paypalHeaderTime, "2001-01-01T00:00:00Z")
			}},
			{Name: "signature bytes changed", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
				sig, err := base64.StdEncoding.DecodeString(d.Header.Get(paypalHeaderSig))
				if err != nil || len(sig) == 0 {
					sig = []byte{0}
				}
				sig[len(sig)/2] ^= 0x5a
				d.Header.Set(paypalHeaderSig, base64.StdEncoding.EncodeToString(sig))
			}},
			{Name: "a certificate URL on a host the adapter does not list", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
				d.Header.Set(paypalHeaderCertURL, foreignCerts.URL+"/v1/notifications/certs/CERT-360caa42-fca2a594-1d93a270")
			}},
		},
		// A capture PayPal reported COMPLETED can be reversed later
		// (PAYMENT.CAPTURE.REVERSED: "PayPal reverses a payment capture",
		// https://developer.paypal.com/api/rest/webhooks/event-names/#payments).
		Reversal: &Reversal{Kind: payonce.KindCapture, EventType: paypalReversedCharge, Reverse: func(ref string) error {
			_, err := fake.ReverseCapture(ref)
			return err
		}},
		Skip: map[string]string{
			ScenarioWebhookEarlierGeneration: "PayPal's reversal (PAYMENT.CAPTURE.REVERSED, a chargeback) undoes a capture that " +
				"succeeded: the capture stays made (REFUNDED by the reversal) and its authorization was captured for good " +
				"(final_capture), so the resend under a new key the scenario has the operator make is refused, rightly " +
				"(\"the provider reports object ... succeeded\"); WebhookContradiction covers the reversal",
			ScenarioLookupLag: "the adapter declares no lookup lag (Options.LookupLag does not apply): its lookups read PayPal's " +
				"objects by id, which PayPal answers at once, and a charge without an id is repeated with the same " +
				"PayPal-Request-Id at once (Env.RepeatIsLookup; Gateway502BeforeProcessing covers it)",
			ScenarioKeyWindowPassed + "/lookup_fails": "PayPal has no lookup by payonce's id (custom_id is not searchable, and transaction " +
				"search lags up to 3 hours and serves the audit only): a charge whose answer was lost while every lookup failed has " +
				"no PayPal id in the ledger, so once its window passed no read-only lookup can find it; only its webhook (WebhookInReview) " +
				"or the audit can settle the review",
		},
	}
	if verify == paypal.VerifyAPI {
		// The adapter sends the event as JSON to PayPal, which judges the
		// signature over it: white space added to the body is no change
		// to the event, and a certificate URL elsewhere is PayPal's to
		// judge, never fetched by the adapter.
		var kept []Forgery
		for _, f := range e.WebhookForgeries {
			if f.Name != changedBody().Name && f.Name != "a certificate URL on a host the adapter does not list" {
				kept = append(kept, f)
			}
		}
		e.WebhookForgeries = kept
	}
	return adapterEnv(t, fake, fake.Close, psp, err, paypalOrders, paypalAuthCapture, paypalAuthVoid, paypalCaptureRefund, e)
}
