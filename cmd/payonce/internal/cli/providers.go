package cli

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/adyen"
	"github.com/payonce/payonce/providers/checkout"
	"github.com/payonce/payonce/providers/stripe"
	"github.com/payonce/payonce/providers/yookassa"
)

// Adapter tells the command line how to build one provider's adapter.
// Credentials come only from the environment variables it names, never from
// flags: flags end up in shell history and process listings.
type Adapter struct {
	// Name is the value of --provider, e.g. "stripe". It must be the name
	// the adapter reports (Provider.Name), which is part of every key.
	Name string
	// EnvVars name the environment variables holding the adapter's
	// credentials, e.g. STRIPE_API_KEY. Every one must be set and non-empty.
	EnvVars []string
	// WebhookEnvVars name the environment variables that configure
	// receiving the provider's webhooks (signing secrets, credentials,
	// allowed addresses). They are optional for every other command;
	// "webhooks serve" serves the provider only when every one is set.
	WebhookEnvVars []string
	// SettingEnvVars name optional environment variables holding settings
	// that are no secret (PayPal's PAYPAL_WEBHOOK_VERIFICATION); each is
	// passed to New when set.
	SettingEnvVars []string
	// KeyTTL is how long the provider documents that it keeps an
	// idempotency key (the adapter's default). A --key-ttl above it is
	// refused: past it the provider has forgotten the key, and a resend
	// would be a new request. 0 means the adapter's own default, read from
	// an adapter built without --key-ttl.
	KeyTTL time.Duration
	// New builds the adapter from the credentials and the tuning flags.
	New func(AdapterConfig) (payonce.Provider, error)
}

// AdapterConfig is what an Adapter's New receives.
type AdapterConfig struct {
	// Env holds the value of each of the Adapter's EnvVars (all non-empty),
	// and of each of its WebhookEnvVars and SettingEnvVars that is set.
	Env map[string]string
	// BaseURL points the adapter at another endpoint (a fake, a proxy);
	// empty means the provider's own.
	BaseURL string
	// KeyTTL, when > 0, replaces the adapter's idempotency key TTL. It may
	// only ever be shorter than what the provider really keeps.
	KeyTTL time.Duration
	// SearchLag, when > 0, replaces how long the adapter waits before it
	// believes a lookup that found nothing: Stripe's SearchLag, YooKassa's
	// ListLag, Checkout.com's SettleLag, Adyen's WebhookLag.
	SearchLag time.Duration
}

// Registry is the set of adapters --provider may name.
type Registry struct {
	adapters map[string]Adapter
}

// NewRegistry returns a registry holding adapters.
func NewRegistry(adapters ...Adapter) (*Registry, error) {
	r := &Registry{adapters: map[string]Adapter{}}
	for _, a := range adapters {
		if err := r.Register(a); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds an adapter. A second adapter with the same name, or one
// without a name or constructor, is refused.
func (r *Registry) Register(a Adapter) error {
	switch {
	case a.Name == "":
		return fmt.Errorf("cli: adapter without a name")
	case a.New == nil:
		return fmt.Errorf("cli: adapter %q has no constructor", a.Name)
	}
	if _, dup := r.adapters[a.Name]; dup {
		return fmt.Errorf("cli: adapter %q registered twice", a.Name)
	}
	r.adapters[a.Name] = a
	return nil
}

// Names lists the registered providers, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.adapters))
	for n := range r.adapters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DefaultRegistry returns the adapters the payonce binary knows: adyen,
// checkout, paypal, stripe and yookassa. A new adapter is added here with its constructor and
// credential variables.
func DefaultRegistry() *Registry {
	r, err := NewRegistry(StripeAdapter(), YooKassaAdapter(), CheckoutAdapter(), AdyenAdapter(), PayPalAdapter())
	if err != nil {
		panic(err) // a programming error in this file
	}
	return r
}

// StripeAdapter builds the Stripe adapter from STRIPE_API_KEY, and its
// webhook verification from STRIPE_WEBHOOK_SECRET (the endpoint's signing
// secret, whsec_...).
func StripeAdapter() Adapter {
	return Adapter{
		Name:           "stripe",
		EnvVars:        []string{"STRIPE_API_KEY"},
		WebhookEnvVars: []string{"STRIPE_WEBHOOK_SECRET"},
		KeyTTL:         stripe.DefaultKeyTTL,
		New: func(c AdapterConfig) (payonce.Provider, error) {
			return stripe.New(stripe.Config{
				APIKey: c.Env["STRIPE_API_KEY"], BaseURL: c.BaseURL, KeyTTL: c.KeyTTL, SearchLag: c.SearchLag,
				WebhookSecret: c.Env["STRIPE_WEBHOOK_SECRET"],
			})
		},
	}
}

// YooKassaAdapter builds the YooKassa adapter from YOOKASSA_SHOP_ID and
// YOOKASSA_SECRET_KEY. --search-lag sets its ListLag: how far behind the
// payments and refunds lists may be. YOOKASSA_WEBHOOK_ALLOW lists the
// addresses (CIDRs or IPs, comma-separated) webhooks are accepted from:
// YooKassa signs nothing, so its notifications are trusted only as far as
// to look the object up.
func YooKassaAdapter() Adapter {
	return Adapter{
		Name:           "yookassa",
		EnvVars:        []string{"YOOKASSA_SHOP_ID", "YOOKASSA_SECRET_KEY"},
		WebhookEnvVars: []string{"YOOKASSA_WEBHOOK_ALLOW"},
		KeyTTL:         yookassa.DefaultKeyTTL,
		New: func(c AdapterConfig) (payonce.Provider, error) {
			allow, err := parsePrefixes("YOOKASSA_WEBHOOK_ALLOW", c.Env["YOOKASSA_WEBHOOK_ALLOW"])
			if err != nil {
				return nil, err
			}
			return yookassa.New(yookassa.Config{
				ShopID: c.Env["YOOKASSA_SHOP_ID"], SecretKey: c.Env["YOOKASSA_SECRET_KEY"],
				BaseURL: c.BaseURL, KeyTTL: c.KeyTTL, ListLag: c.SearchLag, WebhookAllow: allow,
			})
		},
	}
}

// parsePrefixes reads a comma-separated list of CIDRs or single addresses;
// empty is nil (the adapter's default).
func parsePrefixes(name, s string) ([]netip.Prefix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		addr, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is neither a CIDR (185.71.76.0/27) nor an address (77.75.156.11)", name, part)
		}
		out = append(out, netip.PrefixFrom(addr, addr.BitLen()))
	}
	return out, nil
}

// CheckoutAdapter builds the Checkout.com adapter from CHECKOUT_SECRET_KEY.
// --search-lag sets its SettleLag: how long after the last attempt a lookup
// that found nothing is believed. CHECKOUT_WEBHOOK_SECRET is the webhook's
// signature key (Cko-Signature).
func CheckoutAdapter() Adapter {
	return Adapter{
		Name:           "checkout",
		EnvVars:        []string{"CHECKOUT_SECRET_KEY"},
		WebhookEnvVars: []string{"CHECKOUT_WEBHOOK_SECRET"},
		KeyTTL:         checkout.DefaultKeyTTL,
		New: func(c AdapterConfig) (payonce.Provider, error) {
			return checkout.New(checkout.Config{
				SecretKey: c.Env["CHECKOUT_SECRET_KEY"], BaseURL: c.BaseURL, KeyTTL: c.KeyTTL, SettleLag: c.SearchLag,
				WebhookSecret: c.Env["CHECKOUT_WEBHOOK_SECRET"],
			})
		},
	}
}

// AdyenAdapter builds the Adyen adapter from ADYEN_API_KEY and
// ADYEN_MERCHANT_ACCOUNT; its webhooks need ADYEN_HMAC_KEY (hex) and the
// basic-auth pair ADYEN_WEBHOOK_USERNAME / ADYEN_WEBHOOK_PASSWORD. Adyen has
// no status endpoint: without webhooks its captures, cancels and refunds
// settle only by a same-key resend or an operator.
func AdyenAdapter() Adapter {
	return Adapter{
		Name:           "adyen",
		EnvVars:        []string{"ADYEN_API_KEY", "ADYEN_MERCHANT_ACCOUNT"},
		WebhookEnvVars: []string{"ADYEN_HMAC_KEY", "ADYEN_WEBHOOK_USERNAME", "ADYEN_WEBHOOK_PASSWORD"},
		KeyTTL:         adyen.DefaultKeyTTL,
		New: func(c AdapterConfig) (payonce.Provider, error) {
			return adyen.New(adyen.Config{
				APIKey: c.Env["ADYEN_API_KEY"], MerchantAccount: c.Env["ADYEN_MERCHANT_ACCOUNT"],
				BaseURL: c.BaseURL, KeyTTL: c.KeyTTL, WebhookLag: c.SearchLag,
				HMACKey: c.Env["ADYEN_HMAC_KEY"], WebhookUsername: c.Env["ADYEN_WEBHOOK_USERNAME"],
				WebhookPassword: c.Env["ADYEN_WEBHOOK_PASSWORD"],
			})
		},
	}
}

// credentialHelp lists each provider's credential variables for help texts.
func (r *Registry) credentialHelp() string {
	var parts []string
	for _, n := range r.Names() {
		parts = append(parts, strings.Join(r.adapters[n].EnvVars, ", ")+" for "+n)
	}
	return strings.Join(parts, "; ")
}

// missing lists the credential variables of provider name that env does
// not set; none for a provider not registered.
func (r *Registry) missing(name string, env func(string) string) []string {
	var out []string
	for _, v := range r.adapters[name].EnvVars {
		if env(v) == "" {
			out = append(out, v)
		}
	}
	return out
}

// build returns the adapter of provider name, reading its credentials with
// env. Every error is a usage error naming what to fix; none contains a
// credential.
func (r *Registry) build(name string, env func(string) string, c AdapterConfig) (payonce.Provider, error) {
	a, ok := r.adapters[name]
	if !ok {
		return nil, usageErrorf("unknown provider %q: known providers are %s", name, strings.Join(r.Names(), ", "))
	}
	if missing := r.missing(name, env); len(missing) > 0 {
		return nil, usageErrorf("provider %s needs %s set in the environment (credentials are never taken from flags)",
			name, strings.Join(missing, " and "))
	}
	c.Env = map[string]string{}
	for _, v := range a.EnvVars {
		c.Env[v] = env(v)
	}
	for _, v := range slices.Concat(a.WebhookEnvVars, a.SettingEnvVars) {
		if val := env(v); val != "" {
			c.Env[v] = val
		}
	}
	if c.KeyTTL > 0 {
		documented := a.KeyTTL
		if documented == 0 {
			def := c
			def.KeyTTL = 0
			p, err := a.newChecked(name, def)
			if err != nil {
				return nil, err
			}
			documented = p.Info().KeyTTL
		}
		if c.KeyTTL > documented {
			return nil, usageErrorf("--key-ttl %s is longer than the key TTL %s documents (%s): %s forgets an idempotency key "+
				"after %s, so a resend after that is a new request and could move the money twice; "+
				"use --key-ttl %s or less, or leave it out",
				fmtDuration(c.KeyTTL), name, fmtDuration(documented), name, fmtDuration(documented), fmtDuration(documented))
		}
	}
	return a.newChecked(name, c)
}

// newChecked builds the adapter, scrubbing credentials from its errors and
// checking the name it reports.
func (a Adapter) newChecked(name string, c AdapterConfig) (payonce.Provider, error) {
	p, err := a.New(c)
	if err != nil {
		// Adapters keep credentials out of their errors; scrub anyway.
		msg := err.Error()
		for _, v := range c.Env {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
		return nil, usageErrorf("provider %s: %s", name, msg)
	}
	if p.Name() != name {
		return nil, fmt.Errorf("cli: adapter registered as %q calls itself %q", name, p.Name())
	}
	return p, nil
}
