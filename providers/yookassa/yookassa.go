package yookassa

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payonce/payonce"
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
	// Now returns the current time. Defaults to time.Now.
	Now func() time.Time
}

// Provider is the YooKassa adapter: it implements payonce.Provider against
// YooKassa's API v3 (payments with a saved payment method, two-stage
// capture and cancel, refunds). It is safe for concurrent use and holds no
// mutable state.
type Provider struct {
	shopID       string
	secretKey    string
	baseURL      string // without a trailing slash
	keyTTL       time.Duration
	listLag      time.Duration
	lookupMargin time.Duration
	now          func() time.Time
}

var _ payonce.Provider = (*Provider)(nil)

// New checks cfg, applies its defaults and returns a Provider. An error is a
// *payonce.ValidationError (errors.Is(err, payonce.ErrInvalid)) naming the
// Config field and how to fix it; it never contains a credential.
func New(cfg Config) (*Provider, error) {
	p := &Provider{shopID: cfg.ShopID, secretKey: cfg.SecretKey, keyTTL: cfg.KeyTTL,
		listLag: cfg.ListLag, lookupMargin: cfg.LookupMargin, now: cfg.Now}
	switch {
	case cfg.ShopID == "":
		return nil, invalidConfig("ShopID", "is empty; set it to your shop id (Integration > API keys in the YooKassa Merchant Profile)")
	case strings.ContainsFunc(cfg.ShopID, notToken) || strings.Contains(cfg.ShopID, ":"):
		return nil, invalidConfig("ShopID", "contains spaces, a colon or control characters; copy the shop id exactly as the Merchant Profile shows it")
	case cfg.SecretKey == "":
		return nil, invalidConfig("SecretKey", "is empty; set it to your shop's secret key (live_... or test_...)")
	case strings.ContainsFunc(cfg.SecretKey, notToken):
		return nil, invalidConfig("SecretKey", "contains spaces or control characters; copy the key exactly as the Merchant Profile shows it")
	}

	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, invalidConfig("BaseURL", "is not a valid URL; use an absolute http(s) URL such as %q", DefaultBaseURL)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, invalidConfig("BaseURL", "must start with https:// (or http:// for a local fake), such as %q", DefaultBaseURL)
	case u.Host == "":
		return nil, invalidConfig("BaseURL", "has no host; use an absolute URL such as %q", DefaultBaseURL)
	case u.User != nil:
		return nil, invalidConfig("BaseURL", "must not contain user info; the credentials go in Config.ShopID and Config.SecretKey")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, invalidConfig("BaseURL", "must not have a query or fragment; use scheme, host and an optional path prefix only")
	}
	p.baseURL = strings.TrimRight(u.String(), "/")

	for _, d := range []struct {
		field string
		v     time.Duration
		dst   *time.Duration
		def   time.Duration
	}{
		{"KeyTTL", cfg.KeyTTL, &p.keyTTL, DefaultKeyTTL},
		{"ListLag", cfg.ListLag, &p.listLag, DefaultListLag},
		{"LookupMargin", cfg.LookupMargin, &p.lookupMargin, DefaultLookupMargin},
	} {
		switch {
		case d.v < 0:
			return nil, invalidConfig(d.field, "is negative (%s); leave it 0 for the default %s", d.v, d.def)
		case d.v == 0:
			*d.dst = d.def
		}
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

func invalidConfig(field, format string, args ...any) error {
	return &payonce.ValidationError{Field: "yookassa.Config." + field, Problem: fmt.Sprintf(format, args...)}
}

// notToken reports a rune that may not appear in a credential or header
// value: anything but printable, non-space ASCII.
func notToken(r rune) bool { return r <= ' ' || r >= 0x7f }

// Name returns "yookassa".
func (p *Provider) Name() string { return "yookassa" }

// Info returns the configured key TTL and YooKassa's key length limit (64).
func (p *Provider) Info() payonce.ProviderInfo {
	return payonce.ProviderInfo{KeyTTL: p.keyTTL, MaxKeyLength: MaxKeyLength}
}

// ListLag returns how far behind YooKassa's lists are assumed to be.
func (p *Provider) ListLag() time.Duration { return p.listLag }

// String describes the Provider without its credentials. String, GoString,
// Format and LogValue have value receivers so that a copied Provider value
// is redacted too.
func (p Provider) String() string {
	return fmt.Sprintf("yookassa.Provider{ShopID:%s SecretKey:%s BaseURL:%s KeyTTL:%s ListLag:%s LookupMargin:%s}",
		redacted(p.shopID), redacted(p.secretKey), p.baseURL, p.keyTTL, p.listLag, p.lookupMargin)
}

// GoString is String: %#v never shows a credential either.
func (p Provider) GoString() string { return p.String() }

// Format writes String for every verb, so that no fmt verb can print a
// credential.
func (p Provider) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, p.String()) }

// LogValue makes slog log the Provider without its credentials.
func (p Provider) LogValue() slog.Value { return slog.StringValue(p.String()) }

// String describes the Config with its credentials redacted.
func (c Config) String() string {
	base := c.BaseURL
	if base != "" {
		if u, err := url.Parse(base); err == nil {
			if u.User != nil {
				// The user name could be the shop id: drop user info whole.
				u.User = nil
				base = u.String() + " (user info redacted)"
			} else {
				base = u.String()
			}
		} else {
			base = "(invalid URL)"
		}
	}
	now := "nil"
	if c.Now != nil {
		now = "set"
	}
	return fmt.Sprintf("yookassa.Config{ShopID:%s SecretKey:%s BaseURL:%q KeyTTL:%s ListLag:%s LookupMargin:%s Now:%s}",
		redacted(c.ShopID), redacted(c.SecretKey), base, c.KeyTTL, c.ListLag, c.LookupMargin, now)
}

// GoString is String: %#v never shows a credential either.
func (c Config) GoString() string { return c.String() }

// Format writes String for every verb.
func (c Config) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// LogValue makes slog log the Config with its credentials redacted.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

func redacted(s string) string {
	if s == "" {
		return `""`
	}
	return "[REDACTED]"
}

// keyLike matches YooKassa secret keys (live_... / test_...), whole or
// masked, should YooKassa ever echo one.
var keyLike = regexp.MustCompile(`\b(?:live|test)_[0-9A-Za-z_*\-]{16,}`)

// maxMessageBytes bounds a provider message kept in an Outcome or error.
const maxMessageBytes = 1000

// minShopIDScrub is the shortest shop id scrubbed from messages: a shorter
// one would also erase unrelated digits (amounts, codes).
const minShopIDScrub = 5

// scrub removes the credentials and anything that looks like a secret key
// from a provider message and bounds its length.
func (p *Provider) scrub(s string) string {
	if s == "" {
		return ""
	}
	if p.secretKey != "" {
		s = strings.ReplaceAll(s, p.secretKey, "[REDACTED]")
	}
	if len(p.shopID) >= minShopIDScrub {
		s = strings.ReplaceAll(s, p.shopID, "[REDACTED]")
	}
	s = keyLike.ReplaceAllString(s, "[REDACTED]")
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
