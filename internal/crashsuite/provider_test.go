package crashsuite

import (
	"cmp"
	cryptorand "crypto/rand"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
	"github.com/payonce/payonce/providers/stripe"
)

// The provider TestCrashSuite runs against: its fake in the fake child,
// its adapter in the workers and the final audit. Stripe unless -provider
// (or PAYONCE_CRASH_PROVIDER) names another:
//
//	go test -race -count=1 -run TestCrashSuite ./internal/crashsuite/ -provider paypal
//	PAYONCE_CRASH_PROVIDER=paypal go test -race -count=1 -run TestCrashSuite ./internal/crashsuite/
//
// The crash tests of one charging process (crash_test.go) and the
// regression tests run against Stripe only.
var providerFlag = flag.String("provider", "", "run TestCrashSuite against this provider's fake and adapter: "+
	"stripe (the default) or paypal; same as "+envProvider)

// envProvider names the provider of TestCrashSuite (see providerFlag).
const envProvider = "PAYONCE_CRASH_PROVIDER"

// crashProvider is what the suite needs of one provider.
type crashProvider struct {
	name string
	// good and declined are payment methods that pay and that are
	// declined.
	good, declined string
	// keyHeader carries the idempotency key on the requests that move
	// money.
	keyHeader string
	// webhookHeaders are the delivery headers the webhook front forwards
	// besides Content-Type and User-Agent (the signature's).
	webhookHeaders []string
	// auxiliaryPOST reports a POST that moves no money and carries no key
	// (PayPal's token and verify-webhook-signature calls): the fake's
	// observer does not count it among the POSTs per key.
	auxiliaryPOST func(path string) bool
	// webhookSecret is the fake's Webhooks.Secret for one run ("" where
	// the provider signs with a certificate).
	webhookSecret func() string
	// fake builds the fake's handler and the credentials the workers
	// need, as one word for the fake's ready line.
	fake func(cfg childConfig, o mocks.Options) (crashFakeHandler, string)
	// adapter builds the adapter from the credentials of the ready line.
	adapter func(cfg childConfig) (payonce.Provider, error)
	// verifiesAtProvider: the adapter verifies a webhook by asking the
	// provider (PayPal's verify call, the event's object read back by
	// id): while the provider fails a delivery is answered 503 (payonce
	// since b8ad445), or 400 by an older handler (webhookInput).
	verifiesAtProvider bool
	// auditSkip, when set, says why the final audit does not run.
	auditSkip string
	// paymentOp and refundOp name the operation a payment or a refund of
	// the fake's truth was made for ("" when none).
	paymentOp func(mocks.TruthPayment) string
	refundOp  func(mocks.TruthRefund) string
}

// crashFakeHandler is a fake's handler as the fake child serves it.
type crashFakeHandler interface {
	http.Handler
	Truth() mocks.Truth
	WebhookStats() mocks.WebhookStats
	Release()
	StopWebhooks()
}

// suiteProvider is the provider the flag or the environment names.
func suiteProvider() (crashProvider, error) {
	return providerNamed(cmp.Or(*providerFlag, os.Getenv(envProvider), "stripe"))
}

// providerNamed returns the provider called name.
func providerNamed(name string) (crashProvider, error) {
	switch name {
	case "", "stripe":
		return stripeCrash(), nil
	case "paypal":
		return paypalCrash(), nil
	}
	return crashProvider{}, fmt.Errorf("crashsuite: unknown provider %q: use stripe or paypal", name)
}

func stripeCrash() crashProvider {
	return crashProvider{
		name: "stripe", good: "pm_card_visa", declined: "pm_card_chargeDeclined",
		keyHeader: "Idempotency-Key", webhookHeaders: []string{"Stripe-Signature"},
		auxiliaryPOST: func(string) bool { return false },
		// A signing secret of this run only (Stripe's are whsec_ plus
		// random text): the fake signs with it, the receivers verify.
		webhookSecret: func() string { return "whsec_" + cryptorand.Text() },
		fake: func(cfg childConfig, o mocks.Options) (crashFakeHandler, string) {
			h := mocks.NewStripeHandler(mocks.StripeOptions{Options: o, SearchLag: cfg.FakeSearchLag})
			return h, h.APIKey()
		},
		adapter: func(cfg childConfig) (payonce.Provider, error) {
			return stripe.New(stripe.Config{APIKey: cfg.APIKey, BaseURL: cfg.FakeURL, KeyTTL: cfg.KeyTTL, SearchLag: cfg.SearchLag,
				WebhookSecret: cfg.Webhooks.Secret})
		},
		paymentOp: func(p mocks.TruthPayment) string { return p.Metadata[stripe.MetaOperation] },
		refundOp:  func(r mocks.TruthRefund) string { return r.Metadata[stripe.MetaOperation] },
	}
}

// paypalCrash: the fake PayPal signs its webhooks with a test certificate
// whose root only the fake process holds, so the workers verify them with
// PayPal's other documented way, the verify-webhook-signature call (to the
// fake). Both of PayPal's key windows are the suite's key TTL. The final
// audit does not run: PayPal's transaction search lags up to 3 hours, and
// the adapter refuses a period PayPal has not published whole.
func paypalCrash() crashProvider {
	return crashProvider{
		name: "paypal", good: mocks.PayPalVaultApproved, declined: mocks.PayPalVaultDeclined,
		keyHeader: "PayPal-Request-Id",
		webhookHeaders: []string{"Paypal-Transmission-Id", "Paypal-Transmission-Time", "Paypal-Transmission-Sig",
			"Paypal-Cert-Url", "Paypal-Auth-Algo"},
		auxiliaryPOST: func(path string) bool {
			return path == "/v1/oauth2/token" || path == "/v1/notifications/verify-webhook-signature"
		},
		webhookSecret: func() string { return "" },
		// A verified event is applied from its object read back by id
		// (GET, within the fake's faults on GETs).
		verifiesAtProvider: true,
		auditSkip: "PayPal's transaction search shows a transaction up to " + paypal.SearchLag.String() +
			" late; the adapter audits a period only once it is published whole",
		fake: func(cfg childConfig, o mocks.Options) (crashFakeHandler, string) {
			h := mocks.NewPayPalHandler(mocks.PayPalOptions{Options: o})
			// The verify-webhook-signature call is kept out of the random
			// faults. A PayPal delivery needs it and two reads of the
			// event's object (GETs, faulted like every lookup) besides its
			// own trip; with the call faulted too, a fifth of the attempts
			// of each fail (503, delivered again) and the sender's backoff
			// outlasts the suite's wait for every delivery (679 events,
			// 551 acknowledged when the driver stopped, in a run with it).
			h.Script(mocks.Match{Method: http.MethodPost, Path: "/v1/notifications/verify-webhook-signature"},
				make([]mocks.FaultKind, paypalVerifyCalls)...)
			return h, strings.Join([]string{h.ClientID(), h.ClientSecret(), h.WebhookID()}, ",")
		},
		adapter: func(cfg childConfig) (payonce.Provider, error) {
			creds := strings.Split(cfg.APIKey, ",")
			if len(creds) != 3 {
				return nil, fmt.Errorf("the fake's credentials are %d words, not client id, secret and webhook id", len(creds))
			}
			return paypal.New(paypal.Config{ClientID: creds[0], ClientSecret: creds[1], WebhookID: creds[2],
				WebhookVerification: paypal.VerifyAPI, BaseURL: cfg.FakeURL,
				OrdersKeyTTL: cfg.KeyTTL, PaymentsKeyTTL: cfg.KeyTTL})
		},
		paymentOp: func(p mocks.TruthPayment) string { return p.Reference },
		refundOp:  func(r mocks.TruthRefund) string { return cmp.Or(r.Metadata["custom_id"], r.Reference) },
	}
}

// paypalVerifyCalls bounds the verify-webhook-signature calls of one run
// that pass untouched (mocks.FaultNone, the zero FaultKind): far more
// than the deliveries of the long run.
const paypalVerifyCalls = 200_000

// childProvider is the provider a child was started for (stripe when the
// config names none: the crash tests' chargers).
func childProvider(cfg childConfig) (crashProvider, error) { return providerNamed(cfg.Provider) }

// duplicates lists the operations with more than one authorized payment.
func (p crashProvider) duplicates(t mocks.Truth) map[string]int {
	n := map[string]int{}
	for _, pay := range t.Payments {
		if op := p.paymentOp(pay); op != "" && pay.Authorized && !pay.Injected {
			n[op]++
		}
	}
	out := map[string]int{}
	for op, c := range n {
		if c > 1 {
			out[op] = c
		}
	}
	return out
}
