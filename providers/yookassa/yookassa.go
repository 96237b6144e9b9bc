package yookassa

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Defaults applied by New to the zero fields of a Config.
const (
	// DefaultBaseURL is YooKassa's API host; request paths start with /v3.
	DefaultBaseURL = "https://api.yookassa.ru"
	// DefaultKeyTTL is how long YooKassa treats a repeat with the same
	// Idempotence-Key as the same request: 24 hours after the first; after
	// that a repeat is processed as a new request.
	DefaultKeyTTL = 24 * time.Hour
	// DefaultListLag is how far behind YooKassa's payment and refund lists
	// payonce assumes they may be. YooKassa does not document their
	// consistency, so a "not found" from a list only counts once this much
	// time has passed since the last attempt. Reads by id are consistent.
	DefaultListLag = time.Minute
	// DefaultLookupMargin is subtracted from LookupQuery.Since when the
	// payments list is searched by creation time: clock skew between this
	// host and YooKassa.
	DefaultLookupMargin = 10 * time.Minute
)

// MaxKeyLength is the longest Idempotence-Key YooKassa accepts.
const MaxKeyLength = 64

// Config configures a Provider. Zero fields take the documented defaults.
//
// Config formats itself (fmt verbs, String, GoString, slog) with the shop id
// and secret key redacted.
type Config struct {
	// ShopID is the shop (or gateway) id, sent as the HTTP Basic user name.
	// Required.
	ShopID string
	// SecretKey is the shop's secret key (live_... or test_...), sent as
	// the HTTP Basic password. Required. Neither it nor ShopID appears in an
	// error, a log value, an Outcome or a LookupResult.
	SecretKey string
	// BaseURL is the API host: an absolute http or https URL without user
	// info, query or fragment; paths /v3/... are appended. Defaults to
	// DefaultBaseURL. Tests and fakes point it elsewhere.
	BaseURL string
	// KeyTTL is how long YooKassa remembers an Idempotence-Key. Defaults to
	// DefaultKeyTTL (24 h).
	KeyTTL time.Duration
	// ListLag is how far behind the payments and refunds lists may be; a
	// lookup by list reports "not found" only once it has passed since the
	// last attempt. Defaults to DefaultListLag (1 minute).
	ListLag time.Duration
	// LookupMargin widens the creation-time window of a payments list
	// search, for clock skew. Defaults to DefaultLookupMargin (10 minutes).
	LookupMargin time.Duration
	// AuditInterval is the pause between two list requests of an audit
	// (ListObjects). YooKassa does not publish its rate limit. Defaults to
	// DefaultAuditInterval (200 ms: at most 5 requests a second).
	AuditInterval time.Duration
	// WebhookAllow lists the networks YooKassa's notifications may come
	// from; ParseWebhook refuses (403) a delivery from any other address.
	// YooKassa signs nothing, so the source address is all there is, and
	// even an allowed notice only makes the operation due for a lookup.
	// Empty means DefaultWebhookAllow(), YooKassa's published ranges. The
	// address checked is the connection's (http.Request.RemoteAddr): behind
	// a reverse proxy, either have the proxy preserve the client address
	// (e.g. PROXY protocol, so RemoteAddr is YooKassa's), or set
	// WebhookAllow to the proxy's own address and filter YooKassa's
	// ranges at the proxy.
	WebhookAllow []netip.Prefix
	// Now returns the current time. Defaults to time.Now.
	Now func() time.Time
}

// Provider is the YooKassa adapter: it implements payonce.Provider against
// YooKassa's API v3 (payments with a saved payment method, two-stage
// capture and cancel, refunds). It is safe for concurrent use and holds no
// mutable state.
type Provider struct {
	shopID       adapterkit.Secret
	secretKey    adapterkit.Secret
	baseURL      string // without a trailing slash
	keyTTL       time.Duration
	listLag      time.Duration
	lookupMargin time.Duration
	// auditInterval paces an audit's list requests; wait is how the
	// adapter waits (a timer; tests replace it).
	auditInterval time.Duration
	wait          func(ctx context.Context, d time.Duration) error
	now           func() time.Time

	webhookAllow  []netip.Prefix // never empty
	customAllowed bool           // Config.WebhookAllow was set
}

var _ payonce.Provider = (*Provider)(nil)

// New checks cfg, applies its defaults and returns a Provider. An error is a
// *payonce.ValidationError (errors.Is(err, payonce.ErrInvalid)) naming the
// Config field and how to fix it; it never contains a credential.
func New(cfg Config) (*Provider, error) {
	p := &Provider{shopID: adapterkit.Secret(cfg.ShopID), secretKey: adapterkit.Secret(cfg.SecretKey)}
	const prefix = "yookassa.Config."
	switch {
	case cfg.ShopID == "":
		return nil, adapterkit.Invalid(prefix, "ShopID", "is empty; set it to your shop id (Integration > API keys in the YooKassa Merchant Profile)")
	case strings.ContainsFunc(cfg.ShopID, adapterkit.NotToken) || strings.Contains(cfg.ShopID, ":"):
		// The shop id is the user name of HTTP Basic auth, which cannot
		// carry a ':'.
		return nil, adapterkit.Invalid(prefix, "ShopID", "contains spaces, a colon or control characters; copy the shop id exactly as the Merchant Profile shows it")
	case cfg.SecretKey == "":
		return nil, adapterkit.Invalid(prefix, "SecretKey", "is empty; set it to your shop's secret key (live_... or test_...)")
	case strings.ContainsFunc(cfg.SecretKey, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "SecretKey", "contains spaces or control characters; copy the key exactly as the Merchant Profile shows it")
	}
	var err error
	if p.baseURL, err = adapterkit.CheckBaseURL(cfg.BaseURL, DefaultBaseURL, "the credentials go in Config.ShopID and Config.SecretKey"); err != nil {
		return nil, adapterkit.Invalid(prefix, "BaseURL", "%v", err)
	}
	if p.keyTTL, err = adapterkit.DurationOrDefault(prefix, "KeyTTL", cfg.KeyTTL, DefaultKeyTTL, ""); err != nil {
		return nil, err
	}
	if p.listLag, err = adapterkit.DurationOrDefault(prefix, "ListLag", cfg.ListLag, DefaultListLag, ""); err != nil {
		return nil, err
	}
	if p.lookupMargin, err = adapterkit.DurationOrDefault(prefix, "LookupMargin", cfg.LookupMargin, DefaultLookupMargin, ""); err != nil {
		return nil, err
	}
	if p.auditInterval, err = adapterkit.DurationOrDefault(prefix, "AuditInterval", cfg.AuditInterval, DefaultAuditInterval, ""); err != nil {
		return nil, err
	}
	p.wait = adapterkit.Sleep
	if p.now = cfg.Now; p.now == nil {
		p.now = time.Now
	}
	// WebhookAllow, optional, is checked last, so that a Config with
	// several problems keeps reporting the same first one.
	p.webhookAllow = DefaultWebhookAllow()
	if len(cfg.WebhookAllow) > 0 {
		p.webhookAllow, p.customAllowed = make([]netip.Prefix, 0, len(cfg.WebhookAllow)), true
		for i, pf := range cfg.WebhookAllow {
			if !pf.IsValid() {
				return nil, adapterkit.Invalid("yookassa.Config.", fmt.Sprintf("WebhookAllow[%d]", i),
					"is not a valid network; use netip.MustParsePrefix(\"185.71.76.0/27\") or leave WebhookAllow empty for YooKassa's published ranges")
			}
			// Copied (and masked): the Config's slice stays the caller's.
			p.webhookAllow = append(p.webhookAllow, pf.Masked())
		}
	}
	return p, nil
}

// Name returns "yookassa".
func (p *Provider) Name() string { return "yookassa" }

// Info returns the configured key TTL and YooKassa's key length limit (64).
func (p *Provider) Info() payonce.ProviderInfo {
	return payonce.ProviderInfo{KeyTTL: p.keyTTL, MaxKeyLength: MaxKeyLength,
		// YooKassa does not publish its redelivery window; its notices are
		// never trusted (each one only makes the operation due for a lookup),
		// so a late redelivery changes nothing. Its lists by creation time,
		// believed after ListLag, prove absence (lookup.go).
		LookupProvesAbsence: true, WebhookRedelivery: 24 * time.Hour}
}

// ListLag returns how far behind YooKassa's lists are assumed to be.
func (p *Provider) ListLag() time.Duration { return p.listLag }

// String describes the Provider without its credentials. String, GoString,
// Format and LogValue have value receivers so that a copied Provider value
// is redacted too (adapterkit's Redaction: the other three print String).
//
// WebhookAllow is shown only when the Config set it.
func (p Provider) String() string {
	allow := ""
	if p.customAllowed {
		allow = fmt.Sprintf(" WebhookAllow:%v", p.webhookAllow)
	}
	return fmt.Sprintf("yookassa.Provider{ShopID:%s SecretKey:%s BaseURL:%s KeyTTL:%s ListLag:%s LookupMargin:%s%s}",
		p.shopID, p.secretKey, p.baseURL, p.keyTTL, p.listLag, p.lookupMargin, allow)
}

// GoString is String: %#v never shows a credential either.
func (p Provider) GoString() string { return p.String() }

// Format writes String for every verb, so that no fmt verb can print a
// credential.
func (p Provider) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, p) }

// LogValue makes slog log the Provider without its credentials.
func (p Provider) LogValue() slog.Value { return adapterkit.LogValue(p) }

// String describes the Config with its credentials redacted. The BaseURL's
// user name could be the shop id: user info is dropped whole (keepUser
// false).
func (c Config) String() string {
	return fmt.Sprintf("yookassa.Config{ShopID:%s SecretKey:%s BaseURL:%q KeyTTL:%s ListLag:%s LookupMargin:%s AuditInterval:%s WebhookAllow:%v Now:%s}",
		adapterkit.Secret(c.ShopID), adapterkit.Secret(c.SecretKey), adapterkit.DisplayURL(c.BaseURL, false),
		c.KeyTTL, c.ListLag, c.LookupMargin, c.AuditInterval, c.WebhookAllow, adapterkit.NowSet(c.Now))
}

// GoString is String: %#v never shows a credential either.
func (c Config) GoString() string { return c.String() }

// Format writes String for every verb.
func (c Config) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, c) }

// LogValue makes slog log the Config with its credentials redacted.
func (c Config) LogValue() slog.Value { return adapterkit.LogValue(c) }

// keyLike matches YooKassa secret keys (live_... / test_...), whole or
// masked, should YooKassa ever echo one.
var keyLike = regexp.MustCompile(`\b(?:live|test)_[0-9A-Za-z_*\-]{16,}`)

// minShopIDScrub is the shortest shop id scrubbed from messages: a shorter
// one would also erase unrelated digits (amounts, codes).
const minShopIDScrub = 5

// scrub removes the credentials and anything that looks like a secret key
// from a provider message and bounds its length.
func (p *Provider) scrub(s string) string {
	shopID := string(p.shopID)
	if len(shopID) < minShopIDScrub {
		shopID = ""
	}
	return adapterkit.Scrub(s, keyLike, string(p.secretKey), shopID)
}
