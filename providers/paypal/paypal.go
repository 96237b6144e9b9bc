package paypal

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Endpoints and defaults applied by New to the zero fields of a Config.
const (
	// DefaultBaseURL is PayPal's live REST API.
	DefaultBaseURL = "https://api-m.paypal.com"
	// SandboxBaseURL is PayPal's sandbox REST API.
	SandboxBaseURL = "https://api-m.sandbox.paypal.com"
	// DefaultOrdersKeyTTL is how long the Orders v2 endpoints keep a
	// PayPal-Request-Id: 6 hours ("The server stores keys for 6 hours. The
	// API callers can request the times to up to 72 hours by speaking to
	// their Account Manager.", https://developer.paypal.com/api/orders/v2/).
	DefaultOrdersKeyTTL = 6 * time.Hour
	// MaxOrdersKeyTTL is the longest Orders window an account can ask for.
	MaxOrdersKeyTTL = 72 * time.Hour
	// DefaultPaymentsKeyTTL is how long the Payments v2 endpoints keep a
	// PayPal-Request-Id: 45 days (https://developer.paypal.com/api/payments/v2/).
	DefaultPaymentsKeyTTL = 45 * 24 * time.Hour
)

// MaxKeyLength is the longest PayPal-Request-Id PayPal accepts (108).
const MaxKeyLength = 108

// Environment variables the credentials are read from (FromEnv): secrets
// never come from flags or files.
const (
	EnvClientID     = "PAYPAL_CLIENT_ID"
	EnvClientSecret = "PAYPAL_CLIENT_SECRET"
)

// WebhookVerification says how ParseWebhook checks a delivery's signature.
type WebhookVerification string

const (
	// VerifyOffline checks the SHA256withRSA signature over
	// transmissionId|transmissionTime|webhookId|crc32(body) with the
	// certificate named by PAYPAL-CERT-URL (the default).
	VerifyOffline WebhookVerification = "offline"
	// VerifyAPI asks PayPal: POST /v1/notifications/verify-webhook-signature.
	VerifyAPI WebhookVerification = "api"
)

// Config configures a Provider. Zero fields take the documented defaults.
//
// Config formats itself (fmt verbs, String, GoString, slog) with the client
// credentials redacted.
type Config struct {
	// ClientID and ClientSecret are the REST app's credentials, exchanged
	// for access tokens (OAuth2 client credentials). Required. Read them
	// from the environment (FromEnv); they never appear in an error, a log
	// value, an Outcome or a LookupResult.
	ClientID     string
	ClientSecret string
	// BaseURL is the API endpoint. Defaults to DefaultBaseURL; use
	// SandboxBaseURL for the sandbox.
	BaseURL string
	// OrdersKeyTTL is how long the account's Orders endpoints keep a
	// PayPal-Request-Id: DefaultOrdersKeyTTL (6 h) unless the account
	// asked for more, at most MaxOrdersKeyTTL (72 h).
	OrdersKeyTTL time.Duration
	// PaymentsKeyTTL is the Payments v2 window. Defaults to
	// DefaultPaymentsKeyTTL (45 days); tests shorten it.
	PaymentsKeyTTL time.Duration
	// WebhookID is the id PayPal gave the webhook (such as
	// 9XL90610J3647323C; not an event's WH-... id): both
	// verifications sign over it. Without it ParseWebhook refuses every
	// delivery.
	WebhookID string
	// WebhookVerification is VerifyOffline (the default) or VerifyAPI.
	WebhookVerification WebhookVerification
	// WebhookRoots are the roots a webhook certificate must chain to.
	// Defaults to the system's roots.
	WebhookRoots *x509.CertPool
	// WebhookCertHosts are the hosts a PAYPAL-CERT-URL may name; a
	// certificate is fetched from nowhere else. Defaults to PayPal's API
	// hosts (https only). A loopback host listed here may be http (tests).
	WebhookCertHosts []string
	// HTTPClient sends the webhook path's own requests (the certificate,
	// the verify-webhook-signature call, the re-read of the event's
	// object, and their token), and the token call of an audit, whose requests payonce lets be GETs
	// only. Money-moving calls, lookups and the audit's GETs never use it:
	// they go through the payonce client. Defaults to a client with a
	// 10 s timeout.
	HTTPClient *http.Client
	// AuditInterval is the least time between two transaction-search
	// pages of an audit.
	AuditInterval time.Duration
	// Now returns the current time (token expiry, Retry-After dates).
	// Defaults to time.Now.
	Now func() time.Time
}

// FromEnv returns cfg with ClientID and ClientSecret read from
// PAYPAL_CLIENT_ID and PAYPAL_CLIENT_SECRET through getenv (os.Getenv).
func FromEnv(cfg Config, getenv func(string) string) Config {
	cfg.ClientID, cfg.ClientSecret = getenv(EnvClientID), getenv(EnvClientSecret)
	return cfg
}

// DefaultWebhookCertHosts returns the hosts a PAYPAL-CERT-URL may name
// when Config.WebhookCertHosts is empty: PayPal's live and sandbox API
// hosts. It is a function, so that no caller can change the default for
// every other.
func DefaultWebhookCertHosts() []string {
	return []string{"api.paypal.com", "api-m.paypal.com", "api.sandbox.paypal.com", "api-m.sandbox.paypal.com"}
}

// WebhookRedelivery is how long PayPal retries a webhook it could not
// deliver: "up to 25 times over the course of 3 days"
// (https://developer.paypal.com/api/rest/webhooks/, shared/PROVIDERS.md).
const WebhookRedelivery = 3 * 24 * time.Hour

// defaultWebhookTimeout bounds the webhook verification's own requests.
const defaultWebhookTimeout = 10 * time.Second

// Provider is the PayPal adapter. It is safe for concurrent use; its
// mutable state is the cached access token and the cached webhook
// certificates.
type Provider struct {
	// cfg is the Config with its defaults applied (the webhook and audit
	// code read their fields from it); its secrets are also held, as
	// Secrets, below.
	cfg          Config
	clientID     adapterkit.Secret
	clientSecret adapterkit.Secret
	baseURL      string // without a trailing slash
	ordersTTL    time.Duration
	paymentsTTL  time.Duration
	now          func() time.Time
	tokens       *tokenSource
	// wh is the webhook verification's state (webhook_cert.go): the
	// certificate cache.
	wh *webhookState
}

var (
	_ payonce.Provider          = (*Provider)(nil)
	_ payonce.RequestAuthorizer = (*Provider)(nil)
)

// New checks cfg, applies its defaults and returns a Provider. An error is
// a *payonce.ValidationError (errors.Is(err, payonce.ErrInvalid)) naming
// the Config field and how to fix it; it never contains a credential.
func New(cfg Config) (*Provider, error) {
	const prefix = "paypal.Config."
	switch {
	case cfg.ClientID == "":
		return nil, adapterkit.Invalid(prefix, "ClientID", "is empty; set it to your REST app's client id (FromEnv reads %s)", EnvClientID)
	case strings.ContainsFunc(cfg.ClientID, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "ClientID", "contains spaces or control characters; copy the client id exactly as the Developer Dashboard shows it")
	case cfg.ClientSecret == "":
		return nil, adapterkit.Invalid(prefix, "ClientSecret", "is empty; set it to your REST app's secret (FromEnv reads %s)", EnvClientSecret)
	case strings.ContainsFunc(cfg.ClientSecret, adapterkit.NotToken):
		return nil, adapterkit.Invalid(prefix, "ClientSecret", "contains spaces or control characters; copy the secret exactly as the Developer Dashboard shows it")
	}
	p := &Provider{clientID: adapterkit.Secret(cfg.ClientID), clientSecret: adapterkit.Secret(cfg.ClientSecret)}
	var err error
	if p.baseURL, err = adapterkit.CheckBaseURL(cfg.BaseURL, DefaultBaseURL, "the credentials go in Config.ClientID and Config.ClientSecret"); err != nil {
		return nil, adapterkit.Invalid(prefix, "BaseURL", "%v", err)
	}
	if p.ordersTTL, err = adapterkit.DurationOrDefault(prefix, "OrdersKeyTTL", cfg.OrdersKeyTTL, DefaultOrdersKeyTTL, ""); err != nil {
		return nil, err
	}
	if p.ordersTTL > MaxOrdersKeyTTL {
		// A window longer than PayPal keeps the key would let a resend
		// go out as "the same request" after PayPal forgot it: a second
		// charge.
		return nil, adapterkit.Invalid(prefix, "OrdersKeyTTL", "is %s; PayPal keeps an Orders PayPal-Request-Id 6 h by default and at most %s for accounts that asked their account manager: set the window your account has, at most %s",
			p.ordersTTL, MaxOrdersKeyTTL, MaxOrdersKeyTTL)
	}
	if p.paymentsTTL, err = adapterkit.DurationOrDefault(prefix, "PaymentsKeyTTL", cfg.PaymentsKeyTTL, DefaultPaymentsKeyTTL, ""); err != nil {
		return nil, err
	}
	if p.paymentsTTL > DefaultPaymentsKeyTTL {
		return nil, adapterkit.Invalid(prefix, "PaymentsKeyTTL", "is %s; PayPal keeps a Payments v2 PayPal-Request-Id %s: set at most that", p.paymentsTTL, DefaultPaymentsKeyTTL)
	}
	if cfg.AuditInterval < 0 {
		return nil, adapterkit.Invalid(prefix, "AuditInterval", "is negative (%s); leave it 0 for the default", cfg.AuditInterval)
	}
	switch cfg.WebhookVerification {
	case "":
		cfg.WebhookVerification = VerifyOffline
	case VerifyOffline, VerifyAPI:
	default:
		return nil, adapterkit.Invalid(prefix, "WebhookVerification", "is %q; use paypal.VerifyOffline or paypal.VerifyAPI", string(cfg.WebhookVerification))
	}
	if strings.ContainsFunc(cfg.WebhookID, unicode.IsControl) || strings.ContainsFunc(cfg.WebhookID, unicode.IsSpace) {
		return nil, adapterkit.Invalid(prefix, "WebhookID", "contains spaces or control characters; copy the webhook id exactly as the Developer Dashboard shows it")
	}
	hosts := make([]string, 0, len(cfg.WebhookCertHosts))
	for _, h := range cfg.WebhookCertHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" || strings.ContainsAny(h, "/?#@ ") {
			return nil, adapterkit.Invalid(prefix, "WebhookCertHosts", "holds %q; list host names or host:port only, such as %q", h, DefaultWebhookCertHosts()[0])
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		hosts = DefaultWebhookCertHosts()
	}
	cfg.WebhookCertHosts = hosts
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: defaultWebhookTimeout}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.BaseURL, cfg.OrdersKeyTTL, cfg.PaymentsKeyTTL = p.baseURL, p.ordersTTL, p.paymentsTTL
	p.cfg, p.now = cfg, cfg.Now
	p.tokens = &tokenSource{now: cfg.Now}
	p.wh = &webhookState{}
	return p, nil
}

// Name returns "paypal".
func (p *Provider) Name() string { return "paypal" }

// Info returns the key windows per kind: a charge goes to the Orders
// endpoints (OrdersKeyTTL, 6 h by default), captures, cancels and refunds
// to the Payments endpoints (PaymentsKeyTTL, 45 days). PayPal offers no
// search by the adapter's own ids in Orders, so a lookup's "not found"
// proves nothing (LookupProvesAbsence false): inside the window a resend
// with the same PayPal-Request-Id is the lookup, outside it the operation
// goes to review.
func (p *Provider) Info() payonce.ProviderInfo {
	return payonce.ProviderInfo{KeyTTL: p.paymentsTTL, MaxKeyLength: MaxKeyLength,
		KindKeyTTL:          map[payonce.Kind]time.Duration{payonce.KindCharge: p.ordersTTL},
		LookupProvesAbsence: false, WebhookRedelivery: WebhookRedelivery,
		// PayPal refunds captures (POST /v2/payments/captures/{id}/refund,
		// https://developer.paypal.com/docs/api/payments/v2/#captures_refund),
		// and a manual-capture charge's reference is its authorization's.
		RefundsCapture: true}
}

// String describes the Provider without its credentials or token.
// String, GoString, Format and LogValue have value receivers so that a
// copied Provider value is redacted too (adapterkit's Redaction).
func (p Provider) String() string {
	return fmt.Sprintf("paypal.Provider{ClientID:%s ClientSecret:%s BaseURL:%s OrdersKeyTTL:%s PaymentsKeyTTL:%s WebhookID:%q WebhookVerification:%s}",
		p.clientID, p.clientSecret, p.baseURL, p.ordersTTL, p.paymentsTTL, p.cfg.WebhookID, p.cfg.WebhookVerification)
}

// GoString is String: %#v never shows a credential either.
func (p Provider) GoString() string { return p.String() }

// Format writes String for every verb.
func (p Provider) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, p) }

// LogValue makes slog log the Provider without its credentials.
func (p Provider) LogValue() slog.Value { return adapterkit.LogValue(p) }

// String describes the Config with its credentials redacted.
func (c Config) String() string {
	roots := "nil"
	if c.WebhookRoots != nil {
		roots = "set"
	}
	hc := "nil"
	if c.HTTPClient != nil {
		hc = "set"
	}
	return fmt.Sprintf("paypal.Config{ClientID:%s ClientSecret:%s BaseURL:%q OrdersKeyTTL:%s PaymentsKeyTTL:%s WebhookID:%q WebhookVerification:%q WebhookRoots:%s WebhookCertHosts:%q HTTPClient:%s AuditInterval:%s Now:%s}",
		adapterkit.Secret(c.ClientID), adapterkit.Secret(c.ClientSecret), adapterkit.DisplayURL(c.BaseURL, false), c.OrdersKeyTTL, c.PaymentsKeyTTL,
		c.WebhookID, string(c.WebhookVerification), roots, c.WebhookCertHosts, hc, c.AuditInterval, adapterkit.NowSet(c.Now))
}

// GoString is String: %#v never shows a credential either.
func (c Config) GoString() string { return c.String() }

// Format writes String for every verb.
func (c Config) Format(f fmt.State, verb rune) { adapterkit.Format(f, verb, c) }

// LogValue makes slog log the Config with its credentials redacted.
func (c Config) LogValue() slog.Value { return adapterkit.LogValue(c) }

// tokenLike matches PayPal access tokens ("A21AA..." followed by
// base64url), whole or cut, so that one PayPal echoes is never kept.
var tokenLike = regexp.MustCompile(`\bA21AA[0-9A-Za-z_\-.*]{8,}`)

// scrub removes the credentials, the access tokens in use and anything
// that looks like a token from a provider message, and bounds its length.
func (p *Provider) scrub(s string) string {
	if s == "" {
		return ""
	}
	secrets := []string{string(p.clientSecret), string(p.clientID)}
	if p.tokens != nil {
		secrets = append(secrets, p.tokens.known()...)
	}
	return adapterkit.Scrub(s, tokenLike, secrets...)
}
