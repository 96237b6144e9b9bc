package stripe

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Defaults applied by New to the zero fields of a Config.
const (
	// DefaultBaseURL is Stripe's API endpoint.
	DefaultBaseURL = "https://api.stripe.com"
	// DefaultKeyTTL is how long Stripe (API v1) keeps an idempotency key:
	// keys may be pruned once they are at least 24 hours old.
	DefaultKeyTTL = 24 * time.Hour
	// DefaultSearchLag is how far behind Stripe's search may be under normal
	// operation ("searchable in under 1 minute"). During incidents it can be
	// much longer (Stripe mentions up to an hour); raise it if you prefer a
	// later "not found" to an earlier one.
	DefaultSearchLag = time.Minute
	// DefaultWebhookTolerance is how old a webhook's signed timestamp may
	// be: stripe-go's webhook.DefaultTolerance (300 s, webhook/client.go in
	// github.com/stripe/stripe-go).
	DefaultWebhookTolerance = 5 * time.Minute
	// DefaultLookupMargin widens the creation-time window in which a charge
	// lookup lists PaymentIntents, on both ends, for clock skew between this
	// host (which dates LookupQuery.Since and the lookup) and Stripe (which
	// dates created): LookupQuery.Since minus it to now plus it. Hosts kept
	// by NTP are within a second of each other; two minutes leaves room for
	// a drifting clock while keeping the window (and so the pages listed)
	// small.
	DefaultLookupMargin = 2 * time.Minute
	// DefaultMaxListPages bounds the pages (100 PaymentIntents each) one
	// charge lookup lists: 1 page, 100 PaymentIntents created in the
	// window, one read request. Past it the lookup falls back to search
	// (or, with SearchDisabled, reports that it cannot tell). An account
	// that creates more than about one PaymentIntent every two seconds
	// fills the window beyond it; listing further would cost more requests
	// than the one search it would spare, and lookups come in bursts when
	// Stripe is slow (timeouts), which is when extra reads hurt most: a
	// lookup then costs at most one read more than a search alone.
	DefaultMaxListPages = 1
)

// MaxKeyLength is the longest idempotency key Stripe accepts.
const MaxKeyLength = 255

// Config configures a Provider. Zero fields take the documented defaults.
//
// Config formats itself (fmt verbs, String, GoString, slog) with the API key
// and the webhook signing secret redacted.
type Config struct {
	// APIKey is the Stripe secret or restricted key (sk_... or rk_...).
	// Required. It is sent only in the Authorization header and never
	// appears in an error, a log value, an Outcome or a LookupResult.
	APIKey string
	// BaseURL is the API endpoint: an absolute http or https URL without
	// user info, query or fragment. Defaults to DefaultBaseURL. Tests and
	// fakes point it elsewhere.
	BaseURL string
	// KeyTTL is how long Stripe remembers an idempotency key. Defaults to
	// DefaultKeyTTL (24 h); set it if Stripe changes the window for your
	// account or API version.
	KeyTTL time.Duration
	// SearchLag is how far behind Stripe's search endpoint may be. A charge
	// looked up by search reports "not found" only once SearchLag has passed
	// since the last attempt. Defaults to DefaultSearchLag (1 minute).
	SearchLag time.Duration
	// LookupMargin widens, on both ends, the creation-time window in which a
	// charge lookup lists PaymentIntents: from LookupQuery.Since minus
	// LookupMargin to now plus LookupMargin, for clock skew between this host
	// and Stripe. Defaults to DefaultLookupMargin (2 minutes); it must be at
	// least the skew your hosts' clocks may have against Stripe's.
	LookupMargin time.Duration
	// MaxListPages bounds the pages of 100 PaymentIntents one charge lookup
	// lists in that window. Defaults to DefaultMaxListPages (1). When the
	// window holds more, the lookup falls back to search, whose answers
	// carry SearchLag.
	MaxListPages int
	// SearchDisabled makes lookups never call Stripe's search, which "is not
	// available to merchants in India" (https://docs.stripe.com/search,
	// Regional availability). A charge lookup whose window cannot be listed
	// (LookupQuery.Since unknown, or more than MaxListPages pages) then
	// fails with an error, the answer not known: never "not found".
	SearchDisabled bool
	// ListDisabled makes charge lookups find PaymentIntents by search
	// alone, as before lists were used: every "not found" then waits
	// SearchLag. It exists for tests of a lagging lookup (the conformance
	// suite's LookupLag scenarios); production has no reason to set it.
	// It cannot be combined with SearchDisabled.
	ListDisabled bool
	// APIVersion, when set, is sent as the Stripe-Version header on every
	// request, e.g. "2024-06-20". Empty uses the account's default version.
	APIVersion string
	// WebhookSecret is the signing secret of the webhook endpoint
	// (whsec_..., shown by the Dashboard for each endpoint). Optional:
	// without it ParseWebhook refuses every delivery. Like APIKey it never
	// appears in an error or a log value.
	WebhookSecret string
	// WebhookTolerance is how old a webhook's signed timestamp may be
	// before the delivery is refused as a replay. Defaults to
	// DefaultWebhookTolerance (5 minutes); keep the host's clock in sync.
	WebhookTolerance time.Duration
	// AuditRate is how many requests per second ListObjects (an audit's
	// listing) sends at most. Defaults to DefaultAuditRate (10); Stripe's
	// limits are 25 per second per endpoint, and 25 per second in all in a
	// sandbox (https://docs.stripe.com/rate-limits). Raise it for a live
	// account with little other traffic; lower it if the audit meets 429s.
	AuditRate float64
	// Now returns the current time; it turns a Retry-After date into a
	// wait, dates webhook signatures and ends a charge lookup's list
	// window (plus LookupMargin). Defaults to time.Now; tests set it.
	Now func() time.Time
}

// Provider is the Stripe adapter: it implements payonce.Provider against
// Stripe's v1 API (PaymentIntents and Refunds). It is safe for concurrent
// use and holds no mutable state.
type Provider struct {
	apiKey     adapterkit.Secret
	baseURL    string // without a trailing slash
	keyTTL     time.Duration
	searchLag  time.Duration
	apiVersion string

	lookupMargin   time.Duration
	maxListPages   int
	searchDisabled bool
	listDisabled   bool
	now            func() time.Time
	// denseUntil (Unix nanoseconds by now) is when lookups list windows
	// again after one held more than maxListPages pages (see listCharges).
	// A pointer: the Provider's value methods copy it.
	denseUntil *atomic.Int64

	// auditRate paces ListObjects; sleep waits for its turn (a timer;
	// tests replace it to pace on a manual clock).
	auditRate rate.Limit
	sleep     func(context.Context, time.Duration) error

	webhookSecret    adapterkit.Secret
	webhookTolerance time.Duration

	// answer is answers(), built once by New: the table depends only on
	// the Provider's fixed fields.
	answer *adapterkit.Answer[apiErrorBody]
}

var _ payonce.Provider = (*Provider)(nil)

// New checks cfg, applies its defaults and returns a Provider. An error is a
// *payonce.ValidationError (errors.Is(err, payonce.ErrInvalid)) naming the
// Config field and how to fix it; it never contains the API key.
func New(cfg Config) (*Provider, error) {
	p := &Provider{apiKey: adapterkit.Secret(cfg.APIKey), apiVersion: cfg.APIVersion, webhookSecret: adapterkit.Secret(cfg.WebhookSecret),
		searchDisabled: cfg.SearchDisabled, listDisabled: cfg.ListDisabled, denseUntil: new(atomic.Int64)}
	const prefix = "stripe.Config."
	switch {
	case cfg.APIKey == "":
		return nil, adapterkit.Invalid(prefix, "APIKey", "is empty; set it to your Stripe secret key (sk_live_... / sk_test_...) or a restricted key (rk_...)")
	case strings.ContainsFunc(cfg.APIKey, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "APIKey", "contains spaces or control characters; copy the key exactly as the Stripe Dashboard shows it")
	case strings.ContainsFunc(cfg.WebhookSecret, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "WebhookSecret", "contains spaces or control characters; copy the endpoint's signing secret (whsec_...) exactly as the Stripe Dashboard shows it")
	}
	var err error
	if p.baseURL, err = adapterkit.CheckBaseURL(cfg.BaseURL, DefaultBaseURL, "the API key goes in Config.APIKey"); err != nil {
		return nil, adapterkit.Invalid(prefix, "BaseURL", "%v", err)
	}
	if p.keyTTL, err = adapterkit.DurationOrDefault(prefix, "KeyTTL", cfg.KeyTTL, DefaultKeyTTL, " or set Stripe's key window"); err != nil {
		return nil, err
	}
	if p.searchLag, err = adapterkit.DurationOrDefault(prefix, "SearchLag", cfg.SearchLag, DefaultSearchLag, ""); err != nil {
		return nil, err
	}
	if p.lookupMargin, err = adapterkit.DurationOrDefault(prefix, "LookupMargin", cfg.LookupMargin, DefaultLookupMargin, ""); err != nil {
		return nil, err
	}
	switch p.maxListPages = cfg.MaxListPages; {
	case p.maxListPages < 0:
		return nil, adapterkit.Invalid(prefix, "MaxListPages", "is negative (%d); use 0 for the default %d, or a positive number of pages", cfg.MaxListPages, DefaultMaxListPages)
	case p.maxListPages == 0:
		p.maxListPages = DefaultMaxListPages
	}
	if p.listDisabled && p.searchDisabled {
		return nil, adapterkit.Invalid(prefix, "ListDisabled", "and SearchDisabled are both set: a charge whose answer was lost could never be found; unset ListDisabled")
	}
	if p.webhookTolerance, err = adapterkit.DurationOrDefault(prefix, "WebhookTolerance", cfg.WebhookTolerance, DefaultWebhookTolerance, ""); err != nil {
		return nil, err
	}
	switch {
	case cfg.AuditRate < 0 || math.IsNaN(cfg.AuditRate) || math.IsInf(cfg.AuditRate, 0):
		return nil, adapterkit.Invalid(prefix, "AuditRate", "is %v; use 0 for the default %d requests per second, or a positive number", cfg.AuditRate, DefaultAuditRate)
	case cfg.AuditRate == 0:
		p.auditRate = DefaultAuditRate
	default:
		p.auditRate = rate.Limit(cfg.AuditRate)
	}
	p.sleep = adapterkit.Sleep
	if p.now = cfg.Now; p.now == nil {
		p.now = time.Now
	}
	answer := p.answers()
	p.answer = &answer
	// APIVersion, optional, is checked last, so that a Config with several
	// problems keeps reporting the same first one.
	if strings.ContainsFunc(cfg.APIVersion, adapterkit.NotToken) {
		return nil, adapterkit.Invalid("stripe.Config.", "APIVersion", "contains spaces or control characters; use a Stripe API version such as \"2024-06-20\"")
	}
	return p, nil
}

// Name returns "stripe".
func (p *Provider) Name() string { return "stripe" }

// Info returns the configured key TTL and Stripe's key length limit (255).
func (p *Provider) Info() payonce.ProviderInfo {
	return payonce.ProviderInfo{KeyTTL: p.keyTTL, MaxKeyLength: MaxKeyLength,
		// Stripe: "In live mode, Stripe attempts to deliver a given event to your
		// webhook endpoint for up to 3 days with an exponential back off"
		// (https://docs.stripe.com/webhooks#retries). A charge's absence is
		// proved by listing the window it was created in (consistent: Lag 0)
		// or by the search on its metadata, believed after SearchLag
		// (lookup.go); with SearchDisabled a window that cannot be listed
		// is an error, never "not found".
		LookupProvesAbsence: true, WebhookRedelivery: 3 * 24 * time.Hour}
}

// SearchLag returns how far behind Stripe's search is assumed to be.
func (p *Provider) SearchLag() time.Duration { return p.searchLag }

// String describes the Provider without its API key and webhook secret
// (the webhook fields are shown only when a WebhookSecret is set). String,
// GoString, Format and LogValue have value receivers so that a copied
// Provider value is redacted too (adapterkit's Redaction: the other three
// print String).
func (p Provider) String() string {
	webhook := ""
	if p.webhookSecret != "" {
		webhook = fmt.Sprintf(" WebhookSecret:%s WebhookTolerance:%s", p.webhookSecret, p.webhookTolerance)
	}
	lookup := ""
	if p.lookupMargin != DefaultLookupMargin || p.maxListPages != DefaultMaxListPages || p.searchDisabled || p.listDisabled {
		lookup = fmt.Sprintf(" LookupMargin:%s MaxListPages:%d SearchDisabled:%t ListDisabled:%t", p.lookupMargin, p.maxListPages, p.searchDisabled, p.listDisabled)
	}
	if p.auditRate != DefaultAuditRate {
		lookup += fmt.Sprintf(" AuditRate:%v", float64(p.auditRate))
	}
	return fmt.Sprintf("stripe.Provider{APIKey:%s BaseURL:%s KeyTTL:%s SearchLag:%s APIVersion:%q%s%s}",
		p.apiKey, p.baseURL, p.keyTTL, p.searchLag, p.apiVersion, lookup, webhook)
}

// GoString is String: %#v never shows the API key either.
func (p Provider) GoString() string { return p.String() }

// Format writes String for every verb, so that no fmt verb (%v, %+v, %#v,
// %s, %d, ...) can print the API key.
func (p Provider) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, p) }

// LogValue makes slog log the Provider without its API key.
func (p Provider) LogValue() slog.Value { return adapterkit.LogValue(p) }

// String describes the Config with its API key and webhook secret
// redacted. A BaseURL's user
// info is dropped: Stripe accepts the key as a Basic-auth user name.
func (c Config) String() string {
	return fmt.Sprintf("stripe.Config{APIKey:%s BaseURL:%q KeyTTL:%s SearchLag:%s LookupMargin:%s MaxListPages:%d SearchDisabled:%t ListDisabled:%t APIVersion:%q WebhookSecret:%s WebhookTolerance:%s AuditRate:%v Now:%s}",
		adapterkit.Secret(c.APIKey), adapterkit.DisplayURL(c.BaseURL, false), c.KeyTTL, c.SearchLag, c.LookupMargin, c.MaxListPages, c.SearchDisabled, c.ListDisabled, c.APIVersion,
		adapterkit.Secret(c.WebhookSecret), c.WebhookTolerance, c.AuditRate, adapterkit.NowSet(c.Now))
}

// GoString is String: %#v never shows the API key either.
func (c Config) GoString() string { return c.String() }

// Format writes String for every verb, so that no fmt verb can print the
// API key.
func (c Config) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, c) }

// LogValue makes slog log the Config with its API key redacted.
func (c Config) LogValue() slog.Value { return adapterkit.LogValue(c) }

// keyLike matches Stripe API keys, whole or masked ("sk_live_****abcd"), as
// Stripe may echo a masked key in an authentication error message.
var keyLike = regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z*]+`)

// scrub removes anything that looks like an API key from a provider message
// and bounds its length, so that it may be stored and logged.
func (p *Provider) scrub(s string) string {
	return adapterkit.Scrub(s, keyLike, string(p.apiKey), string(p.webhookSecret))
}
