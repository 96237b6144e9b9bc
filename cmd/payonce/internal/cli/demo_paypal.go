package cli

import (
	"cmp"
	"net/http"

	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
)

// paypalCustomID is where the adapter writes the operation id on PayPal's
// objects (the purchase unit's and the refund's custom_id); the fake's
// truth has it as each object's Reference.
const paypalCustomID = "custom_id"

// paypalDemo: a repeat of a PayPal-Request-Id answers the latest status of
// the earlier request, so a processed 500 leaves the real outcome under
// the key and a resend learns it (as at YooKassa); a charge is an order
// created with a saved card (payment_source.card.vault_id) and captured
// at once, its ProviderRef the capture's id. The fake signs its webhooks
// with a test certificate; the demo's adapter asks the fake's
// verify-webhook-signature endpoint (PAYPAL_WEBHOOK_VERIFICATION=api),
// since the fake's root is no system root.
func paypalDemo() demoProvider {
	return demoProvider{
		name: "paypal", title: "PayPal", currency: "USD", lagName: "lookup lag (reads by PayPal's ids)", noLookupLag: true,
		faultMix: faultShares{drop: 0.15, hang: 0.10, gatewayBefore: 0.10, gatewayAfter: 0.15, rateLimit: 0.10, slow: 0.10, stored500: 0.10, processed500: 0.20}.mix(),
		good:     mocks.PayPalVaultApproved,
		declines: []string{mocks.PayPalVaultDeclined},
		webhookCreds: func() (demoHooks, error) {
			id, err := hexSecret(8)
			if err != nil {
				return demoHooks{}, err
			}
			// The webhook id is no secret (PayPal shows it in the
			// dashboard), but every signature is made over it. The fake
			// reads it from the delivery's Secret (paypalFake).
			id = "WH-DEMO-" + id
			return demoHooks{Delivery: mocks.WebhookDelivery{Secret: id},
				Env: map[string]string{envPayPalWebhookID: id, envPayPalWebhookVerification: string(paypal.VerifyAPI)}}, nil
		},
		// PayPal's transaction search shows a transaction up to 3 hours
		// late (https://developer.paypal.com/docs/api/transaction-search/v1/),
		// and the adapter refuses to audit a period PayPal has not
		// published whole (paypal.SearchLag, plus the audit's margin):
		// a half-minute run cannot be audited at its end.
		auditSkip: "PayPal's transaction search shows a transaction up to " + paypal.SearchLag.String() +
			" late, and the adapter audits a period only once PayPal has published it whole; with a PayPal account, " +
			"run payonce audit --provider paypal over a period that ended more than " + (paypal.SearchLag + paypal.DefaultAuditMargin).String() + " ago",
		fake:     paypalFake,
		adapter:  PayPalAdapter,
		chargeOp: func(p mocks.TruthPayment) string { return p.Reference },
		refundOp: paypalRefundOp,
		charges:  func(t mocks.Truth) map[string]int { return t.ChargesByReference() },
		refunds: func(t mocks.Truth) map[string]int {
			m := map[string]int{}
			for _, r := range t.Refunds {
				if op := paypalRefundOp(r); op != "" {
					m[op]++
				}
			}
			return m
		},
	}
}

// paypalRefundOp is the operation a refund of the fake was made for: its
// custom_id.
func paypalRefundOp(r mocks.TruthRefund) string {
	return cmp.Or(r.Metadata[paypalCustomID], r.Reference)
}

// paypalFake builds a fake PayPal; its adapter authenticates with
// PAYPAL_CLIENT_ID and PAYPAL_CLIENT_SECRET, and verifies webhooks over
// PAYPAL_WEBHOOK_ID by asking the fake (PAYPAL_WEBHOOK_VERIFICATION=api).
// The webhook id is --webhook-secret when given (PayPal signs with its
// certificate, over that id), else one drawn from the seed. Its
// transaction search lags as PayPal's (3 hours).
func paypalFake(o fakeOptions) (fakeHandler, map[string]string, error) {
	hooks := o.Webhooks
	id := hooks.Secret
	hooks.Secret = ""
	h, env, err := buildFake(mocks.PayPalOptions{
		Options: mocks.Options{
			Seed: o.Seed, KeyTTL: o.KeyTTL, FaultRates: o.FaultRates,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.Retry, Webhooks: hooks,
		},
		WebhookID: id,
		SearchLag: o.SearchLag,
	}, mocks.NewPayPalHandler, func(h *mocks.PayPalHandler) map[string]string {
		return map[string]string{paypal.EnvClientID: h.ClientID(), paypal.EnvClientSecret: h.ClientSecret(),
			envPayPalWebhookID: h.WebhookID(), envPayPalWebhookVerification: string(paypal.VerifyAPI)}
	})
	if err != nil {
		return nil, nil, err
	}
	// The fault rate is of the requests that move money: the
	// verify-webhook-signature call passes untouched (mocks.FaultNone, the
	// zero FaultKind, for its first paypalVerifyCalls calls); each failed
	// call would show as a delivery refused (503, delivered again).
	h.(*mocks.PayPalHandler).Script(mocks.Match{Method: http.MethodPost, Path: "/v1/notifications/verify-webhook-signature"},
		make([]mocks.FaultKind, paypalVerifyCalls)...)
	return h, env, nil
}

// paypalVerifyCalls bounds the verify-webhook-signature calls a fake
// answers without faults: far more than a demo's deliveries.
const paypalVerifyCalls = 200_000
