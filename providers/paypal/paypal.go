package paypal

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"time"

	"github.com/payonce/payonce"
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
	// WebhookID is the id PayPal gave the webhook (WH-...): both
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
	// HTTPClient sends the webhook verification's own requests (the
	// certificate, the verify-webhook-signature call and its token).
	// Money-moving calls and lookups never use it: they go through the
	// payonce client. Defaults to a client with a 10 s timeout.
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

// Provider is the PayPal adapter. It is safe for concurrent use; its only
// mutable state is the cached access token.
type Provider struct {
	cfg Config
	// wh is the webhook verification's state (webhook_cert.go).
	wh webhookState
}

var (
	_ payonce.Provider          = (*Provider)(nil)
	_ payonce.RequestAuthorizer = (*Provider)(nil)
)

// New checks cfg, applies its defaults and returns a Provider.
func New(cfg Config) (*Provider, error) {
	return &Provider{cfg: cfg}, nil
}

// Name returns "paypal".
func (p *Provider) Name() string { return "paypal" }

// Info returns the Orders and Payments windows per kind.
func (p *Provider) Info() payonce.ProviderInfo {
	return payonce.ProviderInfo{KeyTTL: DefaultPaymentsKeyTTL, MaxKeyLength: MaxKeyLength,
		KindKeyTTL: map[payonce.Kind]time.Duration{payonce.KindCharge: DefaultOrdersKeyTTL}}
}

var errTODO = errors.New("paypal: not built yet")

// NewRequest builds one attempt's request.
func (p *Provider) NewRequest(ctx context.Context, r payonce.SendRequest) (*http.Request, error) {
	return nil, errTODO
}

// AuthorizeRequest adds the access token.
func (p *Provider) AuthorizeRequest(ctx context.Context, hc payonce.HTTPDoer, req *http.Request) error {
	return errTODO
}

// Classify reads PayPal's answer to one attempt.
func (p *Provider) Classify(r payonce.SendRequest, status int, header http.Header, body []byte) payonce.Outcome {
	return payonce.Outcome{Class: "maybe_sent"}
}

// Lookup asks PayPal what became of an operation.
func (p *Provider) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	return payonce.LookupResult{}, errTODO
}
