package adyen

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Endpoints and defaults applied by New to the zero fields of a Config.
const (
	// TestBaseURL is Adyen's Checkout API v71 test endpoint, the default
	// (CheckoutService-v71.json, servers: https://checkout-test.adyen.com/v71,
	// github.com/Adyen/adyen-openapi). Live accounts have their own
	// endpoint with the account's live URL prefix,
	// https://{PREFIX}-checkout-live.adyenpayments.com/checkout/v71 (Customer
	// Area > Developers > API URLs): set it in Config.BaseURL.
	TestBaseURL = "https://checkout-test.adyen.com/v71"
	// DefaultKeyTTL is how long Adyen keeps an Idempotency-Key: "Idempotency
	// keys are valid for a minimum period of 31 days after first submission
	// (but may be retained for longer)"
	// (https://docs.adyen.com/development-resources/api-idempotency, "Key
	// scope and validity time").
	DefaultKeyTTL = 31 * 24 * time.Hour
	// DefaultWebhookLag is how long after the last attempt a lookup's "not
	// found" is believed. See Config.WebhookLag.
	DefaultWebhookLag = 10 * time.Minute
	// DefaultReturnURL is the returnUrl sent when Config.ReturnURL is empty.
	// Its host is under .invalid, a name reserved never to resolve (RFC 6761,
	// section 6.4): payonce never redirects a shopper, and should Adyen ever
	// send one to it, they reach no one else's site.
	DefaultReturnURL = "https://payonce.invalid/adyen/return"
	// MaxReturnURL is the longest returnUrl Adyen accepts ("maxLength": 8000,
	// PaymentRequest.returnUrl in CheckoutService-v71.json).
	MaxReturnURL = 8000
)

// MaxKeyLength is the longest Idempotency-Key Adyen accepts: "a unique
// identifier for the message with a maximum of 64 characters"
// (https://docs.adyen.com/development-resources/api-idempotency). payonce's
// keys are 36.
const MaxKeyLength = 64

// Config configures a Provider. Zero fields take the documented defaults.
//
// Config formats itself (fmt verbs, String, GoString, slog) with the API
// key, the HMAC keys and the webhook password redacted.
type Config struct {
	// APIKey is the API key of the web service user, sent as the X-API-Key
	// header (CheckoutService-v71.json, securitySchemes.ApiKeyAuth).
	// Required. It never appears in an error, a log value, an Outcome or a
	// LookupResult.
	APIKey string
	// MerchantAccount is the merchant account every request is made for
	// (merchantAccount, required by Adyen on payments and modifications).
	// Required. Webhook events of other merchant accounts are recorded
	// without targets.
	MerchantAccount string
	// BaseURL is the Checkout API endpoint with its version, without user
	// info, query or fragment. Defaults to TestBaseURL. Live accounts must
	// set their own live endpoint, which carries the account's prefix:
	// https://{PREFIX}-checkout-live.adyenpayments.com/checkout/v71.
	BaseURL string
	// ReturnURL is sent as returnUrl on every payment: Checkout API v71
	// requires it on POST /payments (PaymentRequest.required in
	// CheckoutService-v71.json), and answers a payment without it with 422
	// errorCode 14_030 "Required field 'returnUrl' is not provided.". It is
	// "the URL to return to in case of a redirection"; payonce makes only
	// non-interactive payments (stored payment methods, ContAuth) and never
	// redirects a shopper, so it is never visited. Defaults to
	// DefaultReturnURL. When set, it must be an absolute URL (for the web,
	// http:// or https:// with a host; an app's own scheme such as
	// my-app://), URL-encoded (no spaces or non-ASCII characters), at most
	// MaxReturnURL characters, and without personal data (Adyen's rule).
	ReturnURL string
	// KeyTTL is how long Adyen keeps an idempotency key. Defaults to
	// DefaultKeyTTL (31 days).
	KeyTTL time.Duration
	// WebhookLag is how long after the last attempt a lookup's "not found"
	// is believed. Adyen has no API that reads a payment's status: the
	// adapter's Lookup only says "not found", and the outcome comes by
	// webhook (recorded in the ledger directly). After WebhookLag the client
	// resends with the same key, which Adyen answers from its idempotency
	// store with the first request's stored answer: that resend is the
	// status read. Defaults to DefaultWebhookLag (10 minutes): Adyen
	// delivers webhooks within seconds, and retries failed deliveries.
	WebhookLag time.Duration
	// HMACKey is the webhook endpoint's HMAC key, as the Customer Area
	// shows it (hex). Required for ParseWebhook: without it every delivery
	// is refused. PreviousHMACKey, when set, is accepted too, while a new
	// key propagates ("make sure that you can still accept notifications
	// signed with your previous HMAC key for some time":
	// https://docs.adyen.com/development-resources/notifications/best-practices).
	HMACKey         string
	PreviousHMACKey string
	// WebhookUsername and WebhookPassword are the basic-auth credentials
	// configured on the webhook endpoint. When WebhookUsername is set, every
	// delivery must carry them; set both or neither.
	WebhookUsername string
	WebhookPassword string
	// Now returns the current time; it turns a Retry-After date into a
	// wait. Defaults to time.Now.
	Now func() time.Time
}

// Provider is the Adyen adapter: it implements payonce.Provider against
// Adyen's Checkout API v71 (POST /payments, and captures, cancels and
// refunds by the payment's pspReference) and payonce.WebhookParser for
// Adyen's standard notification webhooks. It is safe for concurrent use
// and holds no mutable state.
type Provider struct {
	apiKey     adapterkit.Secret
	merchant   string
	baseURL    string // without a trailing slash
	returnURL  string
	keyTTL     time.Duration
	webhookLag time.Duration
	hmacKeys   [][]byte // decoded; HMACKey first
	hmacText   []string // the keys as configured, for scrub
	user       adapterkit.Secret
	pass       adapterkit.Secret
	now        func() time.Time
}

var (
	_ payonce.Provider      = (*Provider)(nil)
	_ payonce.WebhookParser = (*Provider)(nil)
)

// New checks cfg, applies its defaults and returns a Provider. An error is a
// *payonce.ValidationError (errors.Is(err, payonce.ErrInvalid)) naming the
// Config field and how to fix it; it never contains a secret.
func New(cfg Config) (*Provider, error) {
	p := &Provider{apiKey: adapterkit.Secret(cfg.APIKey), merchant: cfg.MerchantAccount, returnURL: cmp.Or(cfg.ReturnURL, DefaultReturnURL),
		user: adapterkit.Secret(cfg.WebhookUsername), pass: adapterkit.Secret(cfg.WebhookPassword)}
	const prefix = "adyen.Config."
	switch {
	case cfg.APIKey == "":
		return nil, adapterkit.Invalid(prefix, "APIKey", "is empty; set it to the API key of your Adyen web service user (Customer Area > Developers > API credentials)")
	case strings.ContainsFunc(cfg.APIKey, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "APIKey", "contains spaces or control characters; copy the key exactly as the Customer Area shows it")
	case cfg.MerchantAccount == "":
		return nil, adapterkit.Invalid(prefix, "MerchantAccount", "is empty; set it to your Adyen merchant account name")
	case strings.ContainsFunc(cfg.MerchantAccount, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "MerchantAccount", "contains spaces or control characters; use the merchant account name exactly as the Customer Area shows it")
	case strings.ContainsFunc(cfg.WebhookUsername, adapterkit.NotToken) || strings.Contains(cfg.WebhookUsername, ":"):
		// HTTP Basic auth cannot carry a ':' in the user name.
		return nil, adapterkit.Invalid(prefix, "WebhookUsername", "contains spaces, control characters or ':'; use the user name configured on the webhook")
	case strings.ContainsFunc(cfg.WebhookPassword, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "WebhookPassword", "contains spaces or control characters; use the password configured on the webhook")
	}
	var err error
	if p.baseURL, err = adapterkit.CheckBaseURL(cfg.BaseURL, TestBaseURL, "the API key goes in Config.APIKey (live accounts use https://{PREFIX}-checkout-live.adyenpayments.com/checkout/v71)"); err != nil {
		return nil, adapterkit.Invalid(prefix, "BaseURL", "%v", err)
	}
	if p.keyTTL, err = adapterkit.DurationOrDefault(prefix, "KeyTTL", cfg.KeyTTL, DefaultKeyTTL, ""); err != nil {
		return nil, err
	}
	if p.webhookLag, err = adapterkit.DurationOrDefault(prefix, "WebhookLag", cfg.WebhookLag, DefaultWebhookLag, ""); err != nil {
		return nil, err
	}
	if p.now = cfg.Now; p.now == nil {
		p.now = time.Now
	}
	if (cfg.WebhookUsername == "") != (cfg.WebhookPassword == "") {
		return nil, adapterkit.Invalid("adyen.Config.", "WebhookPassword", "and WebhookUsername must be set together (both, for basic auth on the webhook endpoint, or neither)")
	}
	if err := checkReturnURL(cfg.ReturnURL); err != nil {
		return nil, err
	}
	for _, k := range []struct{ field, value string }{{"HMACKey", cfg.HMACKey}, {"PreviousHMACKey", cfg.PreviousHMACKey}} {
		if k.value == "" {
			continue
		}
		raw, err := hex.DecodeString(k.value)
		if err != nil || len(raw) == 0 {
			return nil, adapterkit.Invalid("adyen.Config.", k.field, "is not a hex string; copy the HMAC key exactly as the Customer Area shows it (64 hex digits)")
		}
		p.hmacKeys = append(p.hmacKeys, raw)
		p.hmacText = append(p.hmacText, k.value)
	}
	if cfg.PreviousHMACKey != "" && cfg.HMACKey == "" {
		return nil, adapterkit.Invalid("adyen.Config.", "HMACKey", "is empty but PreviousHMACKey is set; set HMACKey to the current key")
	}
	return p, nil
}

// checkReturnURL refuses a Config.ReturnURL Adyen would refuse, before any
// payment is recorded: an empty one takes DefaultReturnURL.
func checkReturnURL(raw string) error {
	if raw == "" {
		return nil
	}
	invalid := func(format string, args ...any) error {
		return adapterkit.Invalid("adyen.Config.", "ReturnURL", format, args...)
	}
	if strings.ContainsFunc(raw, adapterkit.NotToken) {
		return invalid("contains spaces, control or non-ASCII characters; URL-encode them (Adyen: \"If the URL to return to includes non-ASCII characters, like spaces or special letters, URL encode the value\")")
	}
	if len(raw) > MaxReturnURL { // ASCII only by now: bytes are characters
		return invalid("is %d characters; Adyen accepts at most %d: use a shorter page of your site (or leave it empty for %s)", len(raw), MaxReturnURL, DefaultReturnURL)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Scheme == "":
		return invalid("is not an absolute URL; set it to a page of your site such as https://shop.example/checkout/return, or leave it empty for %s", DefaultReturnURL)
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host == "":
		return invalid("has no host; set it to a page of your site such as https://shop.example/checkout/return")
	case u.User != nil:
		return invalid("carries user info; a returnUrl is shown to shoppers' browsers, so it must hold no credentials")
	}
	return nil
}

// Name returns "adyen".
func (p *Provider) Name() string { return "adyen" }

// Info returns the configured key TTL (31 days by default) and the longest
// key Adyen accepts (64).
func (p *Provider) Info() payonce.ProviderInfo {
	return payonce.ProviderInfo{KeyTTL: p.keyTTL, MaxKeyLength: MaxKeyLength,
		// Adyen has no status API: a "not found" proves nothing
		// (shared/PROVIDERS.md, status lookup). It retries a failed delivery
		// for up to 30 days (https://docs.adyen.com/development-resources/webhooks/troubleshoot/).
		LookupProvesAbsence: false, WebhookRedelivery: 30 * 24 * time.Hour}
}

// WebhookLag returns how long after an attempt a "not found" is believed.
func (p *Provider) WebhookLag() time.Duration { return p.webhookLag }

// String describes the Provider without its secrets. String, GoString,
// Format and LogValue have value receivers so that a copied Provider value
// is redacted too.
func (p Provider) String() string {
	hmacKey := adapterkit.Secret("")
	if len(p.hmacKeys) > 0 {
		hmacKey = adapterkit.Secret("set")
	}
	return fmt.Sprintf("adyen.Provider{APIKey:%s MerchantAccount:%q BaseURL:%s KeyTTL:%s WebhookLag:%s HMACKeys:%d(%s) WebhookUsername:%s WebhookPassword:%s}",
		p.apiKey, p.merchant, p.baseURL, p.keyTTL, p.webhookLag, len(p.hmacKeys), hmacKey, p.user, p.pass)
}

// GoString is String: %#v never shows a secret either.
func (p Provider) GoString() string { return p.String() }

// Format writes String for every verb.
func (p Provider) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, p) }

// LogValue makes slog log the Provider without its secrets.
func (p Provider) LogValue() slog.Value { return adapterkit.LogValue(p) }

// String describes the Config with its secrets redacted.
func (c Config) String() string {
	return fmt.Sprintf("adyen.Config{APIKey:%s MerchantAccount:%q BaseURL:%q ReturnURL:%q KeyTTL:%s WebhookLag:%s HMACKey:%s PreviousHMACKey:%s WebhookUsername:%s WebhookPassword:%s Now:%s}",
		adapterkit.Secret(c.APIKey), c.MerchantAccount, adapterkit.DisplayURL(c.BaseURL, false), adapterkit.DisplayURL(c.ReturnURL, false),
		c.KeyTTL, c.WebhookLag, adapterkit.Secret(c.HMACKey), adapterkit.Secret(c.PreviousHMACKey),
		adapterkit.Secret(c.WebhookUsername), adapterkit.Secret(c.WebhookPassword), adapterkit.NowSet(c.Now))
}

// GoString is String: %#v never shows a secret either.
func (c Config) GoString() string { return c.String() }

// Format writes String for every verb.
func (c Config) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, c) }

// LogValue makes slog log the Config with its secrets redacted.
func (c Config) LogValue() slog.Value { return adapterkit.LogValue(c) }

// keyLike matches Adyen API keys (they start with "AQE" and run to over a
// hundred characters of base64 and punctuation), whole or masked, and
// 64-digit hex strings (HMAC keys).
var keyLike = regexp.MustCompile(`\bAQE[0-9A-Za-z+/=_\-.~*]{16,}|\b[0-9A-Fa-f]{64}\b`)

// scrub removes the secrets and anything that looks like one from a
// provider message and bounds its length.
func (p *Provider) scrub(s string) string {
	secrets := append([]string{string(p.apiKey), string(p.pass)}, p.hmacText...)
	return adapterkit.Scrub(s, keyLike, secrets...)
}
