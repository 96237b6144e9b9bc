package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
	"github.com/payonce/payonce/providers/yookassa"
)

// demoFault is one fault kind of a demo's mix, as a share of the total
// fault rate (the shares of a mix add up to 1).
type demoFault struct {
	kind  mocks.FaultKind
	share float64
}

// faultShares gives each fault kind its share of a demo's total fault
// rate; a kind with share 0 is left out of the mix.
type faultShares struct {
	drop, hang, gatewayBefore, gatewayAfter, rateLimit, slow, stored500, processed500 float64
}

// mix lists the kinds with a share, always in the same order.
func (f faultShares) mix() []demoFault {
	var out []demoFault
	for _, m := range []demoFault{
		{mocks.FaultDropAfterProcessing, f.drop},
		{mocks.FaultHangAfterProcessing, f.hang},
		{mocks.FaultGatewayBefore502, f.gatewayBefore},
		{mocks.FaultGatewayAfter502, f.gatewayAfter},
		{mocks.FaultRateLimit429, f.rateLimit},
		{mocks.FaultSlow, f.slow},
		{mocks.FaultStored500, f.stored500},
		{mocks.FaultProcessed500, f.processed500},
	} {
		if m.share > 0 {
			out = append(out, m)
		}
	}
	return out
}

// demoFake is the part of a fake provider the demo uses.
type demoFake interface {
	URL() string
	Truth() mocks.Truth
	// FlushWebhooks waits until every event queued so far was delivered
	// or given up on; WebhookStats counts what the sender did.
	FlushWebhooks(ctx context.Context) error
	WebhookStats() mocks.WebhookStats
	Close()
}

// fakeOptions are what every fake is built with, by the demo and by
// "payonce fake": the fake's seed, key TTL, lookup lag, faults and webhook
// delivery.
type fakeOptions struct {
	Seed                                       int64
	KeyTTL, SearchLag, HangFor, SlowFor, Retry time.Duration
	FaultRates                                 map[mocks.FaultKind]float64
	Webhooks                                   mocks.WebhookDelivery
}

// fakeHandler is a fake provider's handler, to be served on any listener.
type fakeHandler interface {
	http.Handler
	Truth() mocks.Truth
	FlushWebhooks(ctx context.Context) error
	WebhookStats() mocks.WebhookStats
	// Release ends held requests (hangs, slow answers); StopWebhooks
	// stops the sender.
	Release()
	StopWebhooks()
}

// newFake builds a fake's handler and the adapter's credential variables
// that authenticate to it (STRIPE_API_KEY, ...). It refuses options the
// fake would panic on.
type newFake func(o fakeOptions) (fakeHandler, map[string]string, error)

// buildFake builds a fake's handler from opts with build, and the adapter's
// credential variables that authenticate to it with creds. It checks opts
// first: a fake's constructor panics on options that cannot work, and
// "payonce fake" and the demo report them as errors instead.
func buildFake[O interface{ Validate() error }, H fakeHandler](opts O, build func(O) H, creds func(H) map[string]string) (fakeHandler, map[string]string, error) {
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	h := build(opts)
	return h, creds(h), nil
}

// servedFake is a fakeHandler on an httptest.Server on 127.0.0.1, closed
// in the order mocks' own servers close: held requests released first (so
// that Close does not wait out a hang), the webhook sender stopped last
// (requests in progress may still emit events).
type servedFake struct {
	fakeHandler
	srv *httptest.Server
}

func (f *servedFake) URL() string { return f.srv.URL }

func (f *servedFake) Close() {
	f.Release()
	f.srv.Close()
	f.StopWebhooks()
}

// startDemoFake serves the fake nf builds with the demo's settings, rates
// and webhooks, and returns it with its credential variables.
func startDemoFake(nf newFake, s demoSettings, rates map[mocks.FaultKind]float64, wh demoHooks) (*servedFake, map[string]string, error) {
	h, env, err := nf(fakeOptions{
		Seed: s.Seed, KeyTTL: s.KeyTTL, SearchLag: s.FakeSearchLag, FaultRates: rates,
		HangFor: s.HangFor, SlowFor: s.SlowFor, Retry: s.RetryAfter, Webhooks: wh.Delivery,
	})
	if err != nil {
		return nil, nil, err
	}
	return &servedFake{fakeHandler: h, srv: httptest.NewServer(h)}, env, nil
}

// start serves the provider's fake with the demo's settings, rates and
// webhooks (delivered when wh.Delivery has a URL) and its own credentials,
// and builds the adapter that talks to it through the provider's registry
// entry. On an adapter error the fake is returned too, for the caller to
// close.
func (p demoProvider) start(s demoSettings, rates map[mocks.FaultKind]float64, wh demoHooks) (demoFake, payonce.Provider, error) {
	f, env, err := startDemoFake(p.fake, s, rates, wh)
	if err != nil {
		return nil, nil, err
	}
	psp, err := p.adapter().New(adapterConfig(s, f.URL(), env, wh))
	return f, psp, err
}

// faultRates splits rate over the provider's fault mix: the fault kinds
// that matter there, in their shares.
func (p demoProvider) faultRates(rate float64) map[mocks.FaultKind]float64 {
	rates := map[mocks.FaultKind]float64{}
	for _, m := range p.faultMix {
		if rate > 0 {
			rates[m.kind] = rate * m.share
		}
	}
	return rates
}

// demoHooks is how one run's fake delivers webhooks and how its adapter
// verifies them; the zero value is a run without webhooks.
type demoHooks struct {
	// Delivery is the fake's: the receiver's URL, the signing secret or
	// credentials, and the delivery faults.
	Delivery mocks.WebhookDelivery
	// Env holds the adapter's webhook settings (its WebhookEnvVars) that
	// verify what the fake signs.
	Env map[string]string
}

// hexSecret returns n random bytes in hex, from crypto/rand: the
// receiver listens on a real port, so its secret must not be guessable
// from the demo's seed by another process on the machine.
func hexSecret(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a webhook secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// demoProvider is what the demo knows about one provider: its fake, the
// faults that matter there, its test payment methods, and how to read the
// fake's truth back as operation ids.
type demoProvider struct {
	name     string // --provider, and the adapter's Name
	title    string // for people: "Stripe"
	currency string // of every charge and refund
	// lagName is what the adapter's "not found is believed after" delay is
	// called there (--search-lag sets it).
	lagName string
	// fakeLag: the fake's own lookups run behind (Stripe's search); the
	// other fakes answer lists and reads at once.
	fakeLag bool
	// noLookupLag: the adapter declares no lookup lag at all (PayPal reads
	// by its own ids and repeats a lost charge with its key at once), so
	// the demo's --search-lag does not apply and is shown as 0.
	noLookupLag bool
	// auditSkip, when set, says why the demo does not audit this
	// provider's fake at the end of a run (PayPal's search lag).
	auditSkip string
	// webhookOnly: the adapter has no status lookup (Adyen), so outcomes
	// the calls did not bring arrive only by webhook; the demo refuses to
	// run it without webhooks.
	webhookOnly bool
	faultMix    []demoFault
	good        string   // a payment method that pays
	declines    []string // payment methods the provider declines
	// customer is the customer every charge names, where the provider
	// needs one (Adyen's shopperReference of a stored card).
	customer string
	// webhookCreds makes fresh webhook credentials: the fake's signing
	// secret (or basic-auth pair) in wh.Delivery, and the adapter's
	// settings that verify them in wh.Env.
	webhookCreds func() (demoHooks, error)
	// fake builds the provider's fake handler; "payonce fake" serves it.
	fake newFake
	// adapter is the provider's registry entry, through which start builds
	// the adapter that talks to the fake.
	adapter func() Adapter
	// chargeOp and refundOp name the operation that created a payment or a
	// refund, as the adapter marks it.
	chargeOp func(mocks.TruthPayment) string
	refundOp func(mocks.TruthRefund) string
	// charges counts authorized payments, refunds counts refunds (any
	// status), per operation id, with the grouping the fake documents.
	charges func(mocks.Truth) map[string]int
	refunds func(mocks.Truth) map[string]int
}

// demoProviders are the providers "payonce demo --provider" runs against.
func demoProviders() []demoProvider {
	return []demoProvider{stripeDemo(), yookassaDemo(), checkoutDemo(), adyenDemo(), paypalDemo()}
}

func findDemoProvider(name string) (demoProvider, bool) {
	for _, p := range demoProviders() {
		if p.name == name {
			return p, true
		}
	}
	return demoProvider{}, false
}

func demoProviderNames() string {
	var names []string
	for _, p := range demoProviders() {
		names = append(names, p.name)
	}
	return strings.Join(names, ", ")
}

// adapterConfig is what every demo adapter is built with: the fake's
// address and credentials, its webhook settings, the demo's key TTL and
// lookup lag.
func adapterConfig(s demoSettings, url string, env map[string]string, wh demoHooks) AdapterConfig {
	maps.Copy(env, wh.Env)
	return AdapterConfig{Env: env, BaseURL: url, KeyTTL: s.KeyTTL, SearchLag: s.AdapterSearchLag}
}

// hexWebhookSecret is webhookCreds for a provider that signs with one
// secret: prefix plus 32 random bytes in hex, in the fake's Secret and in
// the adapter's variable envVar.
func hexWebhookSecret(prefix, envVar string) func() (demoHooks, error) {
	return func() (demoHooks, error) {
		secret, err := hexSecret(32)
		if err != nil {
			return demoHooks{}, err
		}
		secret = prefix + secret
		return demoHooks{Delivery: mocks.WebhookDelivery{Secret: secret}, Env: map[string]string{envVar: secret}}, nil
	}
}

// stripeDemo: stored 500s are Stripe's own trap (the 500 is replayed for
// the key until it expires, so those operations reach review); processed
// 500s are left out, since Stripe replays the 500 of a charge that moved
// money just the same.
func stripeDemo() demoProvider {
	return demoProvider{
		name: "stripe", title: "Stripe", currency: "USD", lagName: "search lag", fakeLag: true,
		faultMix: faultShares{drop: 0.15, hang: 0.15, gatewayBefore: 0.15, gatewayAfter: 0.15, rateLimit: 0.10, slow: 0.15, stored500: 0.15}.mix(),
		good:     "pm_card_visa",
		declines: []string{"pm_card_chargeDeclined"},
		// Stripe's endpoint secrets start with whsec_, and the fake
		// refuses any other.
		webhookCreds: hexWebhookSecret("whsec_", "STRIPE_WEBHOOK_SECRET"),
		fake:         stripeFake,
		adapter:      StripeAdapter,
		chargeOp:     func(p mocks.TruthPayment) string { return p.Metadata[stripe.MetaOperation] },
		refundOp:     func(r mocks.TruthRefund) string { return r.Metadata[stripe.MetaOperation] },
		charges:      func(t mocks.Truth) map[string]int { return t.ChargesBy(stripe.MetaOperation) },
		refunds:      func(t mocks.Truth) map[string]int { return t.RefundsBy(stripe.MetaOperation) },
	}
}

// stripeFake builds a fake Stripe; its adapter authenticates with
// STRIPE_API_KEY.
func stripeFake(o fakeOptions) (fakeHandler, map[string]string, error) {
	return buildFake(mocks.StripeOptions{
		Options: mocks.Options{
			Seed: o.Seed, KeyTTL: o.KeyTTL, FaultRates: o.FaultRates,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.Retry, Webhooks: o.Webhooks,
		},
		SearchLag: o.SearchLag,
	}, mocks.NewStripeHandler, func(h *mocks.StripeHandler) map[string]string {
		return map[string]string{"STRIPE_API_KEY": h.APIKey()}
	})
}

// yookassaDemo: YooKassa never replays a 500 (a processed 500 keeps the
// real outcome under the key, a stored 500 frees it), and refunds carry no
// metadata: the adapter marks them in their description.
func yookassaDemo() demoProvider {
	return demoProvider{
		name: "yookassa", title: "YooKassa", currency: "RUB", lagName: "list lag",
		faultMix: faultShares{drop: 0.15, hang: 0.10, gatewayBefore: 0.10, gatewayAfter: 0.15, rateLimit: 0.10, slow: 0.10, stored500: 0.10, processed500: 0.20}.mix(),
		good:     mocks.YooKassaMethodSucceeds,
		declines: []string{mocks.YooKassaMethodInsufficientFunds, mocks.YooKassaMethodGeneralDecline,
			mocks.YooKassaMethodExpired, mocks.YooKassaMethodFraud},
		// YooKassa signs nothing: the adapter accepts notifications by
		// source address only, here the loopback the fake sends from, and
		// each one only makes the operation due for a lookup.
		webhookCreds: func() (demoHooks, error) {
			return demoHooks{Env: map[string]string{"YOOKASSA_WEBHOOK_ALLOW": "127.0.0.1/32"}}, nil
		},
		fake:     yookassaFake,
		adapter:  YooKassaAdapter,
		chargeOp: func(p mocks.TruthPayment) string { return p.Metadata[yookassa.MetaOperation] },
		refundOp: func(r mocks.TruthRefund) string { return yookassaRefundOp(r.Description) },
		charges:  func(t mocks.Truth) map[string]int { return t.ChargesBy(yookassa.MetaOperation) },
		refunds: func(t mocks.Truth) map[string]int {
			m := map[string]int{}
			for _, r := range t.Refunds {
				if op := yookassaRefundOp(r.Description); op != "" {
					m[op]++
				}
			}
			return m
		},
	}
}

// yookassaFake builds a fake YooKassa; its adapter authenticates with
// YOOKASSA_SHOP_ID and YOOKASSA_SECRET_KEY (HTTP Basic).
func yookassaFake(o fakeOptions) (fakeHandler, map[string]string, error) {
	return buildFake(mocks.YooKassaOptions{
		Options: mocks.Options{
			Seed: o.Seed, KeyTTL: o.KeyTTL, FaultRates: o.FaultRates,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.Retry, Webhooks: o.Webhooks,
		},
	}, mocks.NewYooKassaHandler, func(h *mocks.YooKassaHandler) map[string]string {
		return map[string]string{"YOOKASSA_SHOP_ID": h.ShopID(), "YOOKASSA_SECRET_KEY": h.SecretKey()}
	})
}

// yookassaRefundOp returns the operation id the adapter wrote in a refund's
// description after yookassa.RefundMarker, or "".
func yookassaRefundOp(desc string) string {
	i := strings.LastIndex(desc, yookassa.RefundMarker)
	if i < 0 {
		return ""
	}
	op := desc[i+len(yookassa.RefundMarker):]
	if j := strings.IndexByte(op, ' '); j >= 0 {
		op = op[:j]
	}
	return op
}

// checkoutDemo: Checkout.com keeps an answer under the key only when it was
// 2xx, so a processed 500 (the payment made, then a 500) frees the key and a
// blind resend would charge twice; the adapter sends the operation id as the
// reference of every payment and refund action.
func checkoutDemo() demoProvider {
	return demoProvider{
		name: "checkout", title: "Checkout.com", currency: "EUR", lagName: "settle lag",
		faultMix: faultShares{drop: 0.15, hang: 0.10, gatewayBefore: 0.10, gatewayAfter: 0.10, rateLimit: 0.10, slow: 0.10, stored500: 0.10, processed500: 0.25}.mix(),
		good:     mocks.CheckoutSourceApproved,
		declines: []string{mocks.CheckoutSourceDoNotHonour, mocks.CheckoutSourceInsufficientFunds, mocks.CheckoutSourceExpiredCard},
		// The signature key of Cko-Signature (HMAC-SHA256 of the body).
		webhookCreds: hexWebhookSecret("", "CHECKOUT_WEBHOOK_SECRET"),
		fake:         checkoutFake,
		adapter:      CheckoutAdapter,
		chargeOp:     func(p mocks.TruthPayment) string { return p.Reference },
		refundOp:     func(r mocks.TruthRefund) string { return r.Reference },
		charges:      func(t mocks.Truth) map[string]int { return t.ChargesByReference() },
		refunds:      func(t mocks.Truth) map[string]int { return t.RefundsByReference() },
	}
}

// checkoutFake builds a fake Checkout.com; its adapter authenticates with
// CHECKOUT_SECRET_KEY.
func checkoutFake(o fakeOptions) (fakeHandler, map[string]string, error) {
	return buildFake(mocks.CheckoutOptions{
		Options: mocks.Options{
			Seed: o.Seed, KeyTTL: o.KeyTTL, FaultRates: o.FaultRates,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.Retry, Webhooks: o.Webhooks,
		},
	}, mocks.NewCheckoutHandler, func(h *mocks.CheckoutHandler) map[string]string {
		return map[string]string{"CHECKOUT_SECRET_KEY": h.SecretKey()}
	})
}

// adyenFake builds a fake Adyen; its adapter authenticates with
// ADYEN_API_KEY and names ADYEN_MERCHANT_ACCOUNT.
func adyenFake(o fakeOptions) (fakeHandler, map[string]string, error) {
	return buildFake(mocks.AdyenOptions{
		Options: mocks.Options{
			Seed: o.Seed, KeyTTL: o.KeyTTL, FaultRates: o.FaultRates,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.Retry, Webhooks: o.Webhooks,
		},
	}, mocks.NewAdyenHandler, func(h *mocks.AdyenHandler) map[string]string {
		return map[string]string{"ADYEN_API_KEY": h.APIKey(), "ADYEN_MERCHANT_ACCOUNT": h.MerchantAccount()}
	})
}

// adyenDemo: Adyen has no status endpoint (the adapter's Lookup answers
// "not found" without a request), its refunds are answered "received" and
// settle only by their REFUND webhook, and it stores every executed answer
// under its key, errors too: a processed 500 (the payment made, then a
// 500) is replayed to every resend, so only the AUTHORISATION webhook tells
// that the money moved. The adapter sends the operation id as the
// reference of every payment and modification.
func adyenDemo() demoProvider {
	return demoProvider{
		name: "adyen", title: "Adyen", currency: "EUR", lagName: "webhook lag", webhookOnly: true,
		faultMix: faultShares{drop: 0.15, hang: 0.10, gatewayBefore: 0.10, gatewayAfter: 0.10, rateLimit: 0.10, slow: 0.10, stored500: 0.10, processed500: 0.25}.mix(),
		good:     mocks.AdyenMethodAuthorised,
		declines: []string{mocks.AdyenMethodRefused, mocks.AdyenMethodNotEnoughBalance},
		customer: "demo-shopper",
		webhookCreds: func() (demoHooks, error) {
			key, err := hexSecret(32)
			if err != nil {
				return demoHooks{}, err
			}
			user, err := hexSecret(8)
			if err != nil {
				return demoHooks{}, err
			}
			pass, err := hexSecret(16)
			if err != nil {
				return demoHooks{}, err
			}
			user = "demo-" + user
			return demoHooks{
				Delivery: mocks.WebhookDelivery{Secret: key, Username: user, Password: pass},
				Env:      map[string]string{"ADYEN_HMAC_KEY": key, "ADYEN_WEBHOOK_USERNAME": user, "ADYEN_WEBHOOK_PASSWORD": pass},
			}, nil
		},
		fake: adyenFake,
		// The demo's short lookup lag is the adapter's WebhookLag: how
		// long a "not found" waits for the webhook before the client
		// resends with the same key (Adyen answers a processed key with
		// its stored first answer, so the resend cannot pay twice); the
		// default 10 minutes would outlast the demo.
		adapter:  AdyenAdapter,
		chargeOp: func(p mocks.TruthPayment) string { return p.Reference },
		refundOp: func(r mocks.TruthRefund) string { return r.Reference },
		charges:  func(t mocks.Truth) map[string]int { return t.ChargesByReference() },
		refunds:  func(t mocks.Truth) map[string]int { return t.RefundsByReference() },
	}
}
