package cli

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/payonce/payonce"
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
	// Env holds the value of each of the Adapter's EnvVars (all non-empty).
	Env map[string]string
	// BaseURL points the adapter at another endpoint (a fake, a proxy);
	// empty means the provider's own.
	BaseURL string
	// KeyTTL, when > 0, replaces the adapter's idempotency key TTL. It may
	// only ever be shorter than what the provider really keeps.
	KeyTTL time.Duration
	// SearchLag, when > 0, replaces how long the adapter waits before it
	// believes a lookup that found nothing: Stripe's SearchLag, YooKassa's
	// ListLag, Checkout.com's SettleLag.
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

// DefaultRegistry returns the adapters the payonce binary knows: checkout,
// stripe and yookassa. A new adapter is added here with its constructor and
// credential variables.
func DefaultRegistry() *Registry {
	r, err := NewRegistry(StripeAdapter(), YooKassaAdapter(), CheckoutAdapter())
	if err != nil {
		panic(err) // a programming error in this file
	}
	return r
}

// StripeAdapter builds the Stripe adapter from STRIPE_API_KEY.
func StripeAdapter() Adapter {
	return Adapter{
		Name:    "stripe",
		EnvVars: []string{"STRIPE_API_KEY"},
		KeyTTL:  stripe.DefaultKeyTTL,
		New: func(c AdapterConfig) (payonce.Provider, error) {
			return stripe.New(stripe.Config{
				APIKey: c.Env["STRIPE_API_KEY"], BaseURL: c.BaseURL, KeyTTL: c.KeyTTL, SearchLag: c.SearchLag,
			})
		},
	}
}

// YooKassaAdapter builds the YooKassa adapter from YOOKASSA_SHOP_ID and
// YOOKASSA_SECRET_KEY. --search-lag sets its ListLag: how far behind the
// payments and refunds lists may be.
func YooKassaAdapter() Adapter {
	return Adapter{
		Name:    "yookassa",
		EnvVars: []string{"YOOKASSA_SHOP_ID", "YOOKASSA_SECRET_KEY"},
		KeyTTL:  yookassa.DefaultKeyTTL,
		New: func(c AdapterConfig) (payonce.Provider, error) {
			return yookassa.New(yookassa.Config{
				ShopID: c.Env["YOOKASSA_SHOP_ID"], SecretKey: c.Env["YOOKASSA_SECRET_KEY"],
				BaseURL: c.BaseURL, KeyTTL: c.KeyTTL, ListLag: c.SearchLag,
			})
		},
	}
}

// CheckoutAdapter builds the Checkout.com adapter from CHECKOUT_SECRET_KEY.
// --search-lag sets its SettleLag: how long after the last attempt a lookup
// that found nothing is believed.
func CheckoutAdapter() Adapter {
	return Adapter{
		Name:    "checkout",
		EnvVars: []string{"CHECKOUT_SECRET_KEY"},
		KeyTTL:  checkout.DefaultKeyTTL,
		New: func(c AdapterConfig) (payonce.Provider, error) {
			return checkout.New(checkout.Config{
				SecretKey: c.Env["CHECKOUT_SECRET_KEY"], BaseURL: c.BaseURL, KeyTTL: c.KeyTTL, SettleLag: c.SearchLag,
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

// build returns the adapter of provider name, reading its credentials with
// env. Every error is a usage error naming what to fix; none contains a
// credential.
func (r *Registry) build(name string, env func(string) string, c AdapterConfig) (payonce.Provider, error) {
	a, ok := r.adapters[name]
	if !ok {
		return nil, usageErrorf("unknown provider %q: known providers are %s", name, strings.Join(r.Names(), ", "))
	}
	c.Env = map[string]string{}
	var missing []string
	for _, v := range a.EnvVars {
		val := env(v)
		if val == "" {
			missing = append(missing, v)
			continue
		}
		c.Env[v] = val
	}
	if len(missing) > 0 {
		return nil, usageErrorf("provider %s needs %s set in the environment (credentials are never taken from flags)",
			name, strings.Join(missing, " and "))
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
