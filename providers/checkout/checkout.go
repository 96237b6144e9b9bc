package checkout

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Endpoints and defaults applied by New to the zero fields of a Config.
const (
	// DefaultBaseURL is Checkout.com's production API.
	DefaultBaseURL = "https://api.checkout.com"
	// SandboxBaseURL is Checkout.com's sandbox API.
	SandboxBaseURL = "https://api.sandbox.checkout.com"
	// DefaultKeyTTL is how long Checkout.com keeps a Cko-Idempotency-Key by
	// default: 24 hours (the window can be changed per account).
	DefaultKeyTTL = 24 * time.Hour
	// DefaultSettleLag is how long after an attempt started a lookup's "not
	// found" is trusted. See Config.SettleLag.
	DefaultSettleLag = 2 * time.Minute
)

// MaxKeyLength is the longest key the adapter sends. Checkout.com documents
// no limit; it recommends V4 UUIDs, whose 36 characters are what payonce's
// keys have, so the adapter claims nothing longer.
const MaxKeyLength = 36

// Config configures a Provider. Zero fields take the documented defaults.
//
// Config formats itself (fmt verbs, String, GoString, slog) with the secret
// key and the webhook credentials redacted.
type Config struct {
	// SecretKey is the secret API key (sk_... / sk_sbox_...), sent as
	// "Authorization: Bearer <key>". Required. It never appears in an
	// error, a log value, an Outcome or a LookupResult.
	SecretKey string
	// BaseURL is the API endpoint: an absolute http or https URL without
	// user info, query or fragment. Defaults to DefaultBaseURL; use
	// SandboxBaseURL for the sandbox.
	BaseURL string
	// ProcessingChannelID, when set, is sent as processing_channel_id
	// (pc_...) on every payment; accounts with several channels need it.
	ProcessingChannelID string
	// KeyTTL is how long Checkout.com keeps an idempotency key. Defaults to
	// DefaultKeyTTL (24 h); set it if your account's window differs.
	KeyTTL time.Duration
	// SettleLag is how long after the last attempt started a lookup that
	// found nothing is believed. Checkout.com caches an answer under the key
	// only when it was 2xx: if an attempt still being processed during the
	// lookup then ends in a 5xx after the payment was made, the key is free
	// again and a resend creates a second payment. Waiting SettleLag lets
	// that attempt finish and its payment become visible first (Checkout.com
	// also asks to wait at least 30 s before reattempting). Defaults to
	// DefaultSettleLag (2 minutes).
	SettleLag time.Duration
	// WebhookSecret is the signature key of the webhook (the key given in
	// the workflow's webhook action): ParseWebhook checks each delivery's
	// Cko-Signature with it. Optional: without it ParseWebhook refuses
	// every delivery. It never appears in an error or a log value.
	WebhookSecret string
	// WebhookAuthorization, when set, is the Authorization header value
	// configured on the webhook: a delivery must carry exactly it, or it
	// is refused as unauthenticated (401). Redacted like the keys.
	WebhookAuthorization string
	// Now returns the current time; it turns a Retry-After date into a
	// wait. Defaults to time.Now.
	Now func() time.Time
}

// Provider is the Checkout.com adapter: it implements payonce.Provider
// against Checkout.com's payments API (POST /payments, captures, voids,
// refunds). It is safe for concurrent use and holds no mutable state.
type Provider struct {
	secretKey adapterkit.Secret
	baseURL   string // without a trailing slash
	channel   string
	keyTTL    time.Duration
	settleLag time.Duration
	now       func() time.Time

	webhookSecret adapterkit.Secret
	webhookAuth   adapterkit.Secret
}

var _ payonce.Provider = (*Provider)(nil)

// New checks cfg, applies its defaults and returns a Provider. An error is a
// *payonce.ValidationError (errors.Is(err, payonce.ErrInvalid)) naming the
// Config field and how to fix it; it never contains the secret key.
func New(cfg Config) (*Provider, error) {
	p := &Provider{secretKey: adapterkit.Secret(cfg.SecretKey), channel: cfg.ProcessingChannelID}
	const prefix = "checkout.Config."
	switch {
	case cfg.SecretKey == "":
		return nil, adapterkit.Invalid(prefix, "SecretKey", "is empty; set it to your Checkout.com secret key (sk_... or sk_sbox_...)")
	case strings.ContainsFunc(cfg.SecretKey, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "SecretKey", "contains spaces or control characters; copy the key exactly as the Dashboard shows it")
	case strings.ContainsFunc(cfg.ProcessingChannelID, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "ProcessingChannelID", "contains spaces or control characters; use the channel id (pc_...)")
	}
	var err error
	if p.baseURL, err = adapterkit.CheckBaseURL(cfg.BaseURL, DefaultBaseURL, "the key goes in Config.SecretKey"); err != nil {
		return nil, adapterkit.Invalid(prefix, "BaseURL", "%v", err)
	}
	if p.keyTTL, err = adapterkit.DurationOrDefault(prefix, "KeyTTL", cfg.KeyTTL, DefaultKeyTTL, ""); err != nil {
		return nil, err
	}
	if p.settleLag, err = adapterkit.DurationOrDefault(prefix, "SettleLag", cfg.SettleLag, DefaultSettleLag, ""); err != nil {
		return nil, err
	}
	if p.now = cfg.Now; p.now == nil {
		p.now = time.Now
	}
	// The webhook credentials, optional, are checked last, so that a Config
	// with several problems keeps reporting the same first one. They are
	// the merchant's own strings (an Authorization value may hold a
	// space, "Bearer ..."): only control characters are refused.
	for _, f := range []struct{ field, value string }{{"WebhookSecret", cfg.WebhookSecret}, {"WebhookAuthorization", cfg.WebhookAuthorization}} {
		if strings.ContainsFunc(f.value, unicode.IsControl) {
			return nil, adapterkit.Invalid("checkout.Config.", f.field, "contains control characters (a newline?); copy the value exactly as configured on the webhook")
		}
	}
	p.webhookSecret, p.webhookAuth = adapterkit.Secret(cfg.WebhookSecret), adapterkit.Secret(cfg.WebhookAuthorization)
	return p, nil
}

// Name returns "checkout".
func (p *Provider) Name() string { return "checkout" }

// Info returns the configured key TTL and the key length the adapter sends
// (36).
func (p *Provider) Info() payonce.ProviderInfo {
	return payonce.ProviderInfo{KeyTTL: p.keyTTL, MaxKeyLength: MaxKeyLength,
		// Checkout.com resends up to 8 times over about 30 hours (5 m, 10 m,
		// 15 m, 30 m, 1 h, 4 h, 12 h, 12 h: shared/PROVIDERS.md, webhooks);
		// GET /payments?reference=, believed after SettleLag, proves absence.
		LookupProvesAbsence: true, WebhookRedelivery: 30 * time.Hour}
}

// SettleLag returns how long after an attempt a "not found" is believed.
func (p *Provider) SettleLag() time.Duration { return p.settleLag }

// String describes the Provider without its secret key and webhook
// credentials (the webhook fields are shown only when one is set). String,
// GoString, Format and LogValue have value receivers so that a copied
// Provider value is redacted too (adapterkit's Redaction: the other three
// print String).
func (p Provider) String() string {
	webhook := ""
	if p.webhookSecret != "" || p.webhookAuth != "" {
		webhook = fmt.Sprintf(" WebhookSecret:%s WebhookAuthorization:%s", p.webhookSecret, p.webhookAuth)
	}
	return fmt.Sprintf("checkout.Provider{SecretKey:%s BaseURL:%s ProcessingChannelID:%q KeyTTL:%s SettleLag:%s%s}",
		p.secretKey, p.baseURL, p.channel, p.keyTTL, p.settleLag, webhook)
}

// GoString is String: %#v never shows the key either.
func (p Provider) GoString() string { return p.String() }

// Format writes String for every verb.
func (p Provider) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, p) }

// LogValue makes slog log the Provider without its key.
func (p Provider) LogValue() slog.Value { return adapterkit.LogValue(p) }

// String describes the Config with its secret key and webhook credentials
// redacted.
func (c Config) String() string {
	return fmt.Sprintf("checkout.Config{SecretKey:%s BaseURL:%q ProcessingChannelID:%q KeyTTL:%s SettleLag:%s WebhookSecret:%s WebhookAuthorization:%s Now:%s}",
		adapterkit.Secret(c.SecretKey), adapterkit.DisplayURL(c.BaseURL, false), c.ProcessingChannelID, c.KeyTTL, c.SettleLag,
		adapterkit.Secret(c.WebhookSecret), adapterkit.Secret(c.WebhookAuthorization), adapterkit.NowSet(c.Now))
}

// GoString is String: %#v never shows the key either.
func (c Config) GoString() string { return c.String() }

// Format writes String for every verb.
func (c Config) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, c) }

// LogValue makes slog log the Config with its key redacted.
func (c Config) LogValue() slog.Value { return adapterkit.LogValue(c) }

// keyLike matches Checkout.com secret keys (sk_..., sk_sbox_..., sk_test_...),
// whole or masked.
var keyLike = regexp.MustCompile(`\bsk_(?:sbox_|test_)?[0-9A-Za-z*\-]{8,}`)

// scrub removes the secret key and anything that looks like one from a
// provider message and bounds its length.
func (p *Provider) scrub(s string) string {
	return adapterkit.Scrub(s, keyLike, string(p.secretKey), scrubbable(p.webhookSecret), scrubbable(p.webhookAuth))
}

// minScrub is the shortest webhook credential scrubbed from messages: the
// merchant chooses these, and a short one ("1234") would also erase
// unrelated digits (amounts, codes).
const minScrub = 8

func scrubbable(s adapterkit.Secret) string {
	if len(s) < minScrub {
		return ""
	}
	return string(s)
}
