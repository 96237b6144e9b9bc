package mocks

import (
	"cmp"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// PayPal facts the fake follows. Sources: PayPal's OpenAPI specifications
// (https://github.com/paypal/paypal-rest-api-specifications, openapi/
// checkout_orders_v2.json, payments_payment_v2.json,
// reporting_transactions_v1.json, notifications_webhooks_v1.json) and the
// official TypeScript server SDK's generated docs
// (https://github.com/paypal/PayPal-TypeScript-Server-SDK, doc/controllers).
const (
	// paypalOrdersKeyTTL: "The server stores keys for 6 hours. The API
	// callers can request the times to up to 72 hours by speaking to their
	// Account Manager." (PayPal-Request-Id of every Orders v2 call,
	// doc/controllers/orders.md).
	paypalOrdersKeyTTL = 6 * time.Hour
	// paypalMaxOrdersKeyTTL is the longest Orders window an account can
	// ask for.
	paypalMaxOrdersKeyTTL = 72 * time.Hour
	// paypalPaymentsKeyTTL: "The server stores keys for 45 days."
	// (PayPal-Request-Id of the Payments v2 calls, doc/controllers/payments.md).
	paypalPaymentsKeyTTL = 45 * 24 * time.Hour
	// paypalMaxKeyLength: PayPal-Request-Id "Maximum Length: 108".
	paypalMaxKeyLength = 108
	// paypalTokenTTL is the default lifetime of an access token: PayPal
	// answers expires_in 32400 (9 hours) in its examples
	// (https://developer.paypal.com/api/rest/authentication/).
	paypalTokenTTL = 9 * time.Hour
	// paypalSearchLag: "It takes a maximum of three hours for executed
	// transactions to appear in the list transactions call"
	// (https://developer.paypal.com/docs/api/transaction-search/v1/).
	paypalSearchLag = 3 * time.Hour
)

// Test payment methods of the PayPal fake: the PaymentMethod forms of the
// adapter, "card:<vault_id>" and "paypal:<vault_id>", whose vault id the
// fake reads from payment_source.card.vault_id or
// payment_source.paypal.vault_id of POST /v2/checkout/orders.
const (
	// PayPalVaultApproved is a saved card that pays: the order completes
	// with a COMPLETED capture (intent CAPTURE) or a CREATED authorization
	// (intent AUTHORIZE).
	PayPalVaultApproved = "card:vault_approved"
	// PayPalVaultDeclined is a saved card the issuer declines: the order
	// completes (201) with a DECLINED capture or a DENIED authorization
	// whose processor_response says 5120 (insufficient funds).
	PayPalVaultDeclined = "card:vault_declined"
	// PayPalVaultPayerAction is a saved card that asks for 3-D Secure: the
	// order stays PAYER_ACTION_REQUIRED, holding no payment.
	PayPalVaultPayerAction = "card:vault_3ds"
	// PayPalVaultPending is a saved card whose payment waits for review:
	// a PENDING capture or authorization (status_details PENDING_REVIEW).
	// CompletePending settles it.
	PayPalVaultPending = "card:vault_pending"
	// PayPalVaultRefundDeclined pays, but its refunds fail (a FAILED
	// refund).
	PayPalVaultRefundDeclined = "card:vault_refund_declined"
	// PayPalWalletApproved is a saved PayPal wallet that pays.
	PayPalWalletApproved = "paypal:vault_wallet"
)

// PayPalOptions configures a fake PayPal: the Options every fake takes,
// and PayPal's own. The zero value is ready to use; every field documents
// its default.
//
// Options.KeyTTL, when set, is both windows (OrdersKeyTTL and
// PaymentsKeyTTL must then be 0). Options.Webhooks delivers PayPal's events
// (PAYMENT.CAPTURE.*, PAYMENT.AUTHORIZATION.*, CHECKOUT.ORDER.COMPLETED)
// signed as PayPal signs them, with a certificate that chains to
// WebhookRoots; Webhooks.Secret, Username and Authorization must stay empty.
type PayPalOptions struct {
	Options
	// ClientID and ClientSecret are the REST app's credentials, exchanged
	// at POST /v1/oauth2/token for access tokens. Default to values derived
	// from Seed (ClientID, ClientSecret).
	ClientID, ClientSecret string
	// WebhookID is the id PayPal gave the webhook, over which every
	// delivery is signed. Defaults to a value derived from Seed
	// (WebhookID).
	WebhookID string
	// OrdersKeyTTL is how long the Orders v2 endpoints keep a
	// PayPal-Request-Id. Defaults to 6 hours; at most 72 hours.
	OrdersKeyTTL time.Duration
	// PaymentsKeyTTL is how long the Payments v2 endpoints keep a
	// PayPal-Request-Id. Defaults to 45 days.
	PaymentsKeyTTL time.Duration
	// TokenTTL is how long an access token lives on the fake's clock
	// (expires_in). Defaults to 9 hours.
	TokenTTL time.Duration
	// SearchLag is how long after it happens a transaction appears in
	// GET /v1/reporting/transactions. Defaults to 3 hours; set a tiny
	// positive duration (time.Nanosecond) for no lag.
	SearchLag time.Duration
	// AllowDuplicateInvoice turns off the account setting "block
	// duplicate invoice ID". By default (off) a second order or capture
	// with an invoice_id already used is refused, 422 DUPLICATE_INVOICE_ID.
	AllowDuplicateInvoice bool
}

// Validate reports the first option that cannot work, saying how to fix it.
func (o PayPalOptions) Validate() error {
	if err := o.coreConfig().check(o.Webhooks, namedDuration{"OrdersKeyTTL", o.OrdersKeyTTL},
		namedDuration{"PaymentsKeyTTL", o.PaymentsKeyTTL}, namedDuration{"TokenTTL", o.TokenTTL},
		namedDuration{"SearchLag", o.SearchLag}); err != nil {
		return err
	}
	if o.KeyTTL != 0 && (o.OrdersKeyTTL != 0 || o.PaymentsKeyTTL != 0) {
		return fmt.Errorf("mocks: PayPalOptions.KeyTTL sets both windows; leave it 0 to set OrdersKeyTTL and PaymentsKeyTTL apart")
	}
	if o.OrdersKeyTTL > paypalMaxOrdersKeyTTL {
		return fmt.Errorf("mocks: PayPalOptions.OrdersKeyTTL is %v; PayPal keeps Orders request ids at most 72h (6h by default)", o.OrdersKeyTTL)
	}
	if o.Webhooks.Secret != "" || o.Webhooks.Username != "" || o.Webhooks.Authorization != "" {
		return fmt.Errorf("mocks: PayPalOptions.Webhooks: PayPal signs with a certificate, not a secret, and sends no credentials; leave Secret, Username and Authorization empty")
	}
	for _, f := range []struct{ name, v string }{{"ClientID", o.ClientID}, {"ClientSecret", o.ClientSecret}, {"WebhookID", o.WebhookID}} {
		if strings.ContainsAny(f.v, ": \t\r\n") {
			return fmt.Errorf("mocks: PayPalOptions.%s contains a colon or white space; use letters, digits, '-' and '_'", f.name)
		}
	}
	return nil
}

// coreConfig is the provider-neutral half of the options.
func (o PayPalOptions) coreConfig() coreConfig {
	return o.Options.coreConfig("paypal", "PayPalOptions")
}

// PayPalHandler is the fake PayPal as an http.Handler: OAuth2 tokens,
// Orders v2, Payments v2, the webhook certificates and signature check,
// and transaction search. It is safe for concurrent use.
//
// In its Truth each payment object an order holds (an authorization, or a
// capture of an intent CAPTURE order) is one TruthPayment whose Reference
// is the purchase unit's custom_id, IdempotencyKey the PayPal-Request-Id
// that made it, and Metadata {"custom_id", "invoice_id", "order_id"}; an
// order that holds none (PAYER_ACTION_REQUIRED, APPROVED) is one
// unauthorized TruthPayment under the order id. Captures of an
// authorization count in its AmountCaptured. Refunds are TruthRefunds
// (Status "succeeded", "pending" or "failed") with Reference = custom_id.
// Truth's amounts are ISO 4217 minor units, as payonce's ledger counts
// them, also for HUF and TWD, which PayPal writes without decimals: a
// capture of "1500" HUF is 150000 in Truth.
type PayPalHandler struct {
	fakeHandler
	clientID, clientSecret, webhookID string
	ordersTTL, paymentsTTL            time.Duration
	tokenTTL, searchLag               time.Duration
	dupInvoice                        bool // the duplicate-invoice guard is on

	tokensMu sync.Mutex
	tokens   map[string]time.Time // access token → expiry

	certs *ppCerts

	objectStore
	orders     map[string]*ppOrder
	orderList  []*ppOrder
	auths      map[string]*ppAuth
	captures   map[string]*ppCapture
	refunds    map[string]*ppRefund
	refundList []*ppRefund       // in the order they were made
	invoices   map[string]string // invoice_id → the order or payment that used it
	txns       []*ppTxn          // transaction-search rows, oldest first
}

// NewPayPalHandler returns a fake PayPal handler. It panics if opts do not
// validate. Call Release before shutting its server down.
func NewPayPalHandler(opts PayPalOptions) *PayPalHandler {
	h := &PayPalHandler{
		tokens: make(map[string]time.Time), orders: make(map[string]*ppOrder), auths: make(map[string]*ppAuth),
		captures: make(map[string]*ppCapture), refunds: make(map[string]*ppRefund), invoices: make(map[string]string),
	}
	h.ordersTTL = cmp.Or(opts.KeyTTL, opts.OrdersKeyTTL, paypalOrdersKeyTTL)
	h.paymentsTTL = cmp.Or(opts.KeyTTL, opts.PaymentsKeyTTL, paypalPaymentsKeyTTL)
	h.tokenTTL = cmp.Or(opts.TokenTTL, paypalTokenTTL)
	h.searchLag = cmp.Or(opts.SearchLag, paypalSearchLag)
	h.dupInvoice = !opts.AllowDuplicateInvoice
	// "[A repeat] returns the latest status of the previous request":
	// every executed answer but a 5xx is kept, and replayed re-rendered
	// (response.latest); after a request processed and then answered 500
	// the key keeps the real outcome, so that a retry with the same
	// PayPal-Request-Id learns it instead of paying again.
	idem := idemPolicy{
		keep:             func(status int) bool { return status < 500 },
		keepRealAfter500: true,
		ttlFor:           h.keyTTL,
	}
	h.setUp(opts, min(h.ordersTTL, h.paymentsTTL), idem, h, h.truthRecords)
	h.clientID = orDefault(opts.ClientID, "A"+h.core.ids.next("", 79))
	h.clientSecret = orDefault(opts.ClientSecret, "E"+h.core.ids.next("", 79))
	h.webhookID = orDefault(opts.WebhookID, ppUpperID(h.core.ids, 17))
	h.certs = newPPCerts(h.core.cfg.seed, h.core.now())
	h.startWebhooks(opts.Webhooks, h.signWebhook)
	h.serve([]route{
		{"POST /v1/oauth2/token", h.token},
		{"POST /v2/checkout/orders", h.createOrder},
		{"GET /v2/checkout/orders/{id}", h.getOrder},
		{"POST /v2/checkout/orders/{id}/authorize", h.authorizeOrder},
		{"POST /v2/checkout/orders/{id}/capture", h.captureOrder},
		{"GET /v2/payments/authorizations/{id}", h.getAuthorization},
		{"POST /v2/payments/authorizations/{id}/capture", h.captureAuthorization},
		{"POST /v2/payments/authorizations/{id}/void", h.voidAuthorization},
		{"GET /v2/payments/captures/{id}", h.getCapture},
		{"POST /v2/payments/captures/{id}/refund", h.refundCapture},
		{"GET /v2/payments/refunds/{id}", h.getRefund},
		{"GET /v1/notifications/certs/{name}", h.getCert},
		{"POST /v1/notifications/verify-webhook-signature", h.verifySignature},
		{"GET /v1/reporting/transactions", h.searchTransactions},
	}, h.unknownRoute)
	return h
}

// ClientID returns the accepted client id.
func (h *PayPalHandler) ClientID() string { return h.clientID }

// ClientSecret returns the accepted client secret.
func (h *PayPalHandler) ClientSecret() string { return h.clientSecret }

// WebhookID returns the webhook id every delivery is signed over.
func (h *PayPalHandler) WebhookID() string { return h.webhookID }

// WebhookRoots returns a pool holding the fake's test root CA, to which
// the certificate signing its webhooks chains.
func (h *PayPalHandler) WebhookRoots() *x509.CertPool { return h.certs.roots() }

// PayPal is a fake PayPal API served by an httptest.Server on 127.0.0.1.
// Point a client at URL(), get tokens with ClientID() and ClientSecret().
type PayPal struct {
	*PayPalHandler
	fakeServer
}

// NewPayPal starts a fake PayPal server. It panics if opts do not
// validate. Close it when done.
func NewPayPal(opts PayPalOptions) *PayPal {
	p := &PayPal{PayPalHandler: NewPayPalHandler(opts)}
	p.listen(p.PayPalHandler)
	p.certs.setBase(p.URL())
	return p
}

// CertHost returns the host:port the webhook certificates are served
// from, to list in the adapter's WebhookCertHosts.
func (p *PayPal) CertHost() string { return strings.TrimPrefix(p.URL(), "http://") }

// keyTTL is the window of a request's PayPal-Request-Id: the Orders API's
// or the Payments API's.
func (h *PayPalHandler) keyTTL(c *call) time.Duration {
	if strings.HasPrefix(c.path, "/v2/checkout/") {
		return h.ordersTTL
	}
	return h.paymentsTTL
}

// ---- dialect: PayPal's words for the pipeline's own answers ----

func (h *PayPalHandler) jsonBodies() {}

// formBody: the token endpoint takes a form (grant_type=client_credentials).
func (h *PayPalHandler) formBody(c *call) bool { return c.route == "POST /v1/oauth2/token" }

func (h *PayPalHandler) keyHeader() string { return "PayPal-Request-Id" }

// requestID is PayPal's debug_id: 13 hex digits.
func (h *PayPalHandler) requestID() string {
	s := []byte(h.core.ids.next("", 13))
	for i := range s {
		s[i] = "0123456789abcdef"[s[i]%16]
	}
	return string(s)
}

// authenticate checks the Bearer token of the API routes and the Basic
// credentials of the token endpoint. Keys are scoped per app and per API
// (Orders or Payments), whose windows differ.
func (h *PayPalHandler) authenticate(c *call) (string, *response) {
	switch c.route {
	case "GET /v1/notifications/certs/{name}", "unknown":
		return "public", nil // certificates are public; unknown routes 404
	case "POST /v1/oauth2/token":
		id, secret, ok := c.r.BasicAuth()
		if !ok || id != h.clientID || secret != h.clientSecret {
			// https://developer.paypal.com/api/rest/authentication/
			return "", h.oauthError(http.StatusUnauthorized, "invalid_client", "Client Authentication failed")
		}
		return "token", nil
	}
	v := strings.TrimSpace(c.r.Header.Get("Authorization"))
	if len(v) < 7 || !strings.EqualFold(v[:7], "Bearer ") {
		return "", h.errorResponse(c, http.StatusUnauthorized, "AUTHENTICATION_FAILURE",
			"Authentication failed due to missing authorization header, or invalid authentication credentials.")
	}
	tok := strings.TrimSpace(v[7:])
	h.tokensMu.Lock()
	exp, ok := h.tokens[tok]
	h.tokensMu.Unlock()
	if !ok || !c.now.Before(exp) {
		// An unknown or expired token: 401 invalid_token, before anything
		// is processed (the adapter fetches a new token and resends).
		return "", h.oauthError(http.StatusUnauthorized, "invalid_token", "Token signature verification failed")
	}
	if strings.HasPrefix(c.path, "/v2/checkout/") {
		return "orders", nil
	}
	return "payments", nil
}

func (h *PayPalHandler) malformed(c *call, err error) *response {
	return h.errorResponse(c, http.StatusBadRequest, "INVALID_REQUEST",
		"Request is not well-formed, syntactically incorrect, or violates schema.",
		ppDetail{Issue: "MALFORMED_REQUEST_JSON", Description: "The request JSON is not well formed."})
}

// rateLimited is 429 RATE_LIMIT_REACHED
// (https://developer.paypal.com/api/rest/reference/rate-limiting/), before
// anything is processed.
func (h *PayPalHandler) rateLimited(c *call, retryAfter time.Duration) *response {
	r := h.errorResponse(c, http.StatusTooManyRequests, "RATE_LIMIT_REACHED",
		"Too many requests. Blocked due to rate limiting.")
	r.header.Set("Retry-After", retryAfterSeconds(retryAfter))
	return r
}

func (h *PayPalHandler) serverError(c *call) *response {
	return h.errorResponse(c, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR", "An internal server error occurred.")
}

// keyMismatch: PayPal documents no error for a request id reused with
// another body; a repeat "returns the latest status of the previous
// request", whatever its body. The fake does that, or answers 409 while the
// first request still runs.
func (h *PayPalHandler) keyMismatch(c *call) *response { return h.core.replayFirst(c, h.keyInUse) }

// keyInUse is 409 RESOURCE_CONFLICT, issue PREVIOUS_REQUEST_IN_PROGRESS
// (payments_payment_v2.json, error_409).
func (h *PayPalHandler) keyInUse(c *call) *response {
	return h.errorResponse(c, http.StatusConflict, "RESOURCE_CONFLICT",
		"The server has detected a conflict while processing this request.",
		ppDetail{Issue: "PREVIOUS_REQUEST_IN_PROGRESS", Description: "A previous request on this resource is currently in progress. " +
			"Please wait for sometime and try again. It is best to space out the initial and the subsequent request(s) to avoid receiving this error."})
}

func (h *PayPalHandler) deliver(hd http.Header, c *call, replayed bool) {
	hd.Set("Paypal-Debug-Id", c.requestID)
}

// ---- answers ----

// ppDetail is one entry of an error's details.
type ppDetail struct {
	Field       string `json:"field,omitempty"`
	Value       string `json:"value,omitempty"`
	Location    string `json:"location,omitempty"`
	Issue       string `json:"issue"`
	Description string `json:"description,omitempty"`
}

// paypalError is PayPal's error body: {name, message, debug_id, details,
// links} (doc/models/custom-error.md of the TypeScript SDK).
type paypalError struct {
	Name    string     `json:"name"`
	Message string     `json:"message"`
	DebugID string     `json:"debug_id"`
	Details []ppDetail `json:"details,omitempty"`
	Links   []ppLink   `json:"links,omitempty"`
}

// paypalOAuthError is the OAuth2 error body: {error, error_description}.
type paypalOAuthError struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

func (h *PayPalHandler) jsonResponse(status int, v any) *response {
	return renderJSON(status, http.Header{"Content-Type": {"application/json"}}, v)
}

func (h *PayPalHandler) errorResponse(c *call, status int, name, message string, details ...ppDetail) *response {
	e := paypalError{Name: name, Message: message, DebugID: c.requestID, Details: details}
	if len(details) > 0 {
		api := "payments/v2"
		if strings.HasPrefix(c.path, "/v2/checkout/") {
			api = "orders/v2"
		}
		e.Links = []ppLink{{Href: "https://developer.paypal.com/docs/api/" + api + "/#error-" + details[0].Issue,
			Rel: "information_link", Method: "GET"}}
	}
	return h.jsonResponse(status, e)
}

func (h *PayPalHandler) oauthError(status int, code, description string) *response {
	return h.jsonResponse(status, paypalOAuthError{Error: code, ErrorDescription: description})
}

// invalid is 400 INVALID_REQUEST for a request that fails validation.
func (h *PayPalHandler) invalid(c *call, field, issue, description string) *response {
	return h.errorResponse(c, http.StatusBadRequest, "INVALID_REQUEST",
		"Request is not well-formed, syntactically incorrect, or violates schema.",
		ppDetail{Field: field, Location: "body", Issue: issue, Description: description})
}

// unprocessable is 422 UNPROCESSABLE_ENTITY with one issue.
func (h *PayPalHandler) unprocessable(c *call, issue, description string) *response {
	return h.errorResponse(c, http.StatusUnprocessableEntity, "UNPROCESSABLE_ENTITY",
		"The requested action could not be performed, semantically incorrect, or failed business validation.",
		ppDetail{Issue: issue, Description: description})
}

func (h *PayPalHandler) notFound(c *call) *response {
	return h.errorResponse(c, http.StatusNotFound, "RESOURCE_NOT_FOUND", "The specified resource does not exist.",
		ppDetail{Field: "id", Value: c.r.PathValue("id"), Location: "path", Issue: "INVALID_RESOURCE_ID",
			Description: "Specified resource ID does not exist. Please check the resource ID and try again."})
}

func (h *PayPalHandler) unknownRoute(c *call) (*response, bool) {
	return h.errorResponse(c, http.StatusNotFound, "RESOURCE_NOT_FOUND", "The specified resource does not exist."), false
}

// decodeBody decodes the JSON body into v, refusing unknown fields.
func (h *PayPalHandler) decodeBody(c *call, v any) *response {
	if err := decodeStrict(c.body, v); err != nil {
		return h.errorResponse(c, http.StatusBadRequest, "INVALID_REQUEST",
			"Request is not well-formed, syntactically incorrect, or violates schema.",
			ppDetail{Location: "body", Issue: "INVALID_PARAMETER_SYNTAX", Description: "The value of a field does not conform to the expected format: " + err.Error()})
	}
	return nil
}

// ---- OAuth2 ----

// paypalToken is the answer of POST /v1/oauth2/token
// (https://developer.paypal.com/api/rest/authentication/).
type paypalToken struct {
	Scope       string `json:"scope"`
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	AppID       string `json:"app_id"`
	ExpiresIn   int64  `json:"expires_in"`
	Nonce       string `json:"nonce"`
}

// token is POST /v1/oauth2/token: Basic client_id:client_secret and
// grant_type=client_credentials give a Bearer token living TokenTTL on
// the fake's clock.
func (h *PayPalHandler) token(c *call) (*response, bool) {
	if gt := c.form.Get("grant_type"); gt != "client_credentials" {
		return h.oauthError(http.StatusBadRequest, "unsupported_grant_type", "Grant Type is NULL or not client_credentials"), false
	}
	tok := "A21AA" + h.core.ids.next("", 92)
	h.tokensMu.Lock()
	h.tokens[tok] = c.now.Add(h.tokenTTL)
	// Drop tokens long expired so that a long run does not grow the map.
	for t, exp := range h.tokens {
		if c.now.Sub(exp) > h.tokenTTL {
			delete(h.tokens, t)
		}
	}
	h.tokensMu.Unlock()
	return h.jsonResponse(http.StatusOK, paypalToken{
		Scope:       "https://uri.paypal.com/services/payments/payment https://uri.paypal.com/services/payments/refund",
		AccessToken: tok, TokenType: "Bearer", AppID: "APP-80W284485P519543T",
		ExpiresIn: int64(h.tokenTTL / time.Second), Nonce: ppTime(c.now) + h.core.ids.next("", 43),
	}), true
}

// ExpireTokens makes every access token issued so far expired, as if
// TokenTTL had passed: the next API call with one is answered 401
// invalid_token.
func (h *PayPalHandler) ExpireTokens() {
	h.tokensMu.Lock()
	defer h.tokensMu.Unlock()
	for t := range h.tokens {
		delete(h.tokens, t)
	}
}

// ---- ids and times ----

// ppUpperID makes a PayPal-looking id: n characters of [0-9A-Z].
func ppUpperID(ids *idSource, n int) string {
	b := []byte(ids.next("", n))
	for i := range b {
		b[i] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[int(b[i])%36]
	}
	return string(b)
}

// ppTime renders t as PayPal does: RFC 3339 in UTC, whole seconds.
func ppTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }
