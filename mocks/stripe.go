package mocks

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/payonce/payonce/mocks/internal/stripewire"
)

// StripeAPIVersion is the Stripe API version the fake Stripe speaks: the
// Stripe-Version header of its answers, and the version its webhook
// events render as unless StripeOptions.WebhookAPIVersion says otherwise.
const StripeAPIVersion = "2025-03-31.basil"

// stripeKeyTTL is how long Stripe is documented to keep idempotency keys
// at least: they may be pruned once 24 hours old.
const stripeKeyTTL = 24 * time.Hour

// StripeOptions configures a fake Stripe: the Options every fake takes,
// and Stripe's own. The zero value is ready to use; every field documents
// its default.
//
// Options.Webhooks delivers Stripe Events (payment_intent.*, refund.*,
// charge.refunded, charge.refund.updated) whenever an object changes,
// signed in Stripe-Signature with Webhooks.Secret, the endpoint's signing
// secret (whsec_..., required when URL is set). The signature's timestamp
// is read from Clock at each attempt, so a receiver that checks its age
// must read the same clock.
type StripeOptions struct {
	Options
	// SearchLag is how long after its creation a PaymentIntent becomes
	// visible to the search endpoint (lists and retrieval are immediate).
	// Defaults to 0: searchable at once.
	SearchLag time.Duration
	// APIKeys are the secret keys accepted as "Authorization: Bearer <key>"
	// (or HTTP Basic with the key as user name). Each must be a test-mode key
	// (sk_test_... or rk_test_...); idempotency keys are scoped per API key.
	// Defaults to one key derived from Seed, returned by APIKey.
	APIKeys []string
	// WebhookAPIVersion is the API version of the webhook endpoint
	// ("2024-06-20", "2024-10-28.acacia"): its events render as that
	// version does where versions differ about refunds (see
	// StripeHandler.SetWebhookAPIVersion). Defaults to StripeAPIVersion.
	WebhookAPIVersion string
}

// Validate reports the first option that cannot work, saying how to fix it.
func (o StripeOptions) Validate() error {
	if err := o.coreConfig().check(o.Webhooks, namedDuration{"SearchLag", o.SearchLag}); err != nil {
		return err
	}
	if o.WebhookAPIVersion != "" {
		if err := checkStripeAPIVersion("StripeOptions.WebhookAPIVersion", o.WebhookAPIVersion); err != nil {
			return err
		}
	}
	if o.Webhooks.enabled() && !strings.HasPrefix(o.Webhooks.Secret, "whsec_") {
		return fmt.Errorf("mocks: StripeOptions.Webhooks.Secret is not an endpoint signing secret; set the value the receiver verifies with, starting with whsec_")
	}
	for i, k := range o.APIKeys {
		if !strings.HasPrefix(k, "sk_test_") && !strings.HasPrefix(k, "rk_test_") {
			return fmt.Errorf("mocks: StripeOptions.APIKeys[%d] is not a test-mode key; use a value starting with sk_test_ or rk_test_", i)
		}
	}
	return nil
}

// coreConfig is the provider-neutral half of the options.
func (o StripeOptions) coreConfig() coreConfig {
	return o.Options.coreConfig("stripe", "StripeOptions")
}

// StripeHandler is the fake Stripe as an http.Handler, for callers who mount
// it on their own server: it serves Stripe's API v1 routes for
// PaymentIntents, Refunds, the retrieval of Charges (every confirmation
// creates one) and the list of Disputes (made out of band: InjectDispute).
// It is safe for concurrent use.
type StripeHandler struct {
	fakeHandler
	apiKeys   []string
	searchLag time.Duration
	// webhookVersion is the webhook endpoint's API version (guarded by mu,
	// which every emit holds).
	webhookVersion string

	objectStore
	intents     map[string]*stripeIntent
	intentOrder []*stripeIntent
	charges     map[string]*stripeIntent      // successful charge id -> intent
	chargeObjs  map[string]*stripewire.Charge // every charge (declined too), by id
	methods     map[string]string             // issued pm_ id -> test method name
	refunds     map[string]*stripeRefund
	refundOrder []*stripeRefund
	// disputes are made out of band only (stripe_disputes.go).
	disputes     map[string]*stripeDispute
	disputeOrder []*stripeDispute
	// injected holds the ids of the PaymentIntents and Refunds made out
	// of band (stripe_inject.go).
	injected map[string]bool
}

// stripeIntent is the fake's record of one PaymentIntent.
type stripeIntent struct {
	stored
	pi         stripewire.PaymentIntent
	authorized bool
	chargeID   string   // the successful charge, "" if none
	chargeIDs  []string // every charge of the intent, oldest first
	refunded   int64
}

type stripeRefund struct {
	stored
	re stripewire.Refund
}

// NewStripeHandler returns a fake Stripe handler. It panics if opts do not
// validate (see StripeOptions.Validate): a wrong option is a bug in the test.
// Call Release before shutting its server down, so that requests held by
// hang or slow faults end.
func NewStripeHandler(opts StripeOptions) *StripeHandler {
	s := &StripeHandler{
		searchLag:  opts.SearchLag,
		intents:    make(map[string]*stripeIntent),
		charges:    make(map[string]*stripeIntent),
		chargeObjs: make(map[string]*stripewire.Charge),
		methods:    make(map[string]string),
		refunds:    make(map[string]*stripeRefund),
		disputes:   make(map[string]*stripeDispute),
		injected:   make(map[string]bool),
	}
	s.webhookVersion = orDefault(opts.WebhookAPIVersion, StripeAPIVersion)
	// Stripe stores every executed answer, 500s included.
	s.setUp(opts, stripeKeyTTL, idemPolicy{}, s, s.truthRecords)
	s.apiKeys = append([]string(nil), opts.APIKeys...)
	if len(s.apiKeys) == 0 {
		s.apiKeys = []string{s.core.ids.next("sk_test_", 24)}
	}
	s.startWebhooks(opts.Webhooks, s.signWebhook(opts.Webhooks.Secret))
	s.serve([]route{
		{"POST /v1/payment_intents", s.createIntent},
		{"GET /v1/payment_intents", s.listIntents},
		{"GET /v1/payment_intents/search", s.searchIntents},
		{"GET /v1/payment_intents/{id}", s.getIntent},
		{"POST /v1/payment_intents/{id}/confirm", s.confirmIntent},
		{"POST /v1/payment_intents/{id}/capture", s.captureIntent},
		{"POST /v1/payment_intents/{id}/cancel", s.cancelIntent},
		{"POST /v1/refunds", s.createRefund},
		{"GET /v1/refunds", s.listRefunds},
		{"GET /v1/refunds/{id}", s.getRefund},
		{"GET /v1/charges/{id}", s.getCharge},
		{"GET /v1/disputes", s.listDisputes},
	}, s.unknownRoute)
	return s
}

// APIKey returns the first accepted secret key.
func (s *StripeHandler) APIKey() string { return s.apiKeys[0] }

// truthRecords writes the PaymentIntents and Refunds into a Truth.
func (s *StripeHandler) truthRecords(t *Truth) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.intentOrder {
		t.Payments = append(t.Payments, TruthPayment{
			ID: in.pi.ID, Status: in.pi.Status, Amount: in.pi.Amount, Currency: in.pi.Currency,
			Authorized: in.authorized, AmountCaptured: in.pi.AmountReceived, AmountRefunded: in.refunded,
			Metadata: cloneMap(in.pi.Metadata), IdempotencyKey: in.key, Created: in.createdAt, Injected: s.injected[in.pi.ID],
		})
	}
	for _, r := range s.refundOrder {
		t.Refunds = append(t.Refunds, TruthRefund{
			ID: r.re.ID, PaymentID: r.re.PaymentIntent, Status: r.re.Status, Amount: r.re.Amount, Currency: r.re.Currency,
			Metadata: cloneMap(r.re.Metadata), IdempotencyKey: r.key, Created: r.createdAt, Injected: s.injected[r.re.ID],
		})
	}
}

// Stripe is a fake Stripe API served by an httptest.Server on 127.0.0.1.
// Point a Stripe client's base URL at URL() (API paths start with /v1) and
// authenticate with APIKey().
type Stripe struct {
	*StripeHandler
	fakeServer
}

// NewStripe starts a fake Stripe server. It panics if opts do not validate.
// Close it when done.
func NewStripe(opts StripeOptions) *Stripe {
	s := &Stripe{StripeHandler: NewStripeHandler(opts)}
	s.listen(s.StripeHandler)
	return s
}

// ---- dialect: Stripe's words for the pipeline's own answers ----

func (s *StripeHandler) keyHeader() string { return "Idempotency-Key" }

func (s *StripeHandler) requestID() string { return s.core.ids.next("req_", 14) }

func (s *StripeHandler) authenticate(c *call) (string, *response) {
	h := c.r.Header.Get("Authorization")
	var key string
	switch {
	case h == "":
		return "", s.unauthorized(c, "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.")
	case len(h) > 7 && strings.EqualFold(h[:7], "Bearer "):
		key = strings.TrimSpace(h[7:])
	case len(h) > 6 && strings.EqualFold(h[:6], "Basic "):
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[6:]))
		if err != nil {
			return "", s.unauthorized(c, "Invalid API Key provided: the Basic credentials are not valid base64.")
		}
		key, _, _ = strings.Cut(string(raw), ":")
	default:
		return "", s.unauthorized(c, "Invalid Authorization header: use Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').")
	}
	for i, k := range s.apiKeys {
		if k == key {
			return fmt.Sprintf("key%d", i), nil
		}
	}
	return "", s.unauthorized(c, "Invalid API Key provided: "+redactKey(key))
}

func (s *StripeHandler) unauthorized(c *call, msg string) *response {
	r := s.errorResponse(c, http.StatusUnauthorized, stripewire.Error{Type: "invalid_request_error", Message: msg})
	r.header.Set("Www-Authenticate", `Basic realm="Stripe"`)
	return r
}

// redactKey shows a key the way Stripe's 401 does: prefix and last four.
func redactKey(k string) string {
	if len(k) <= 12 {
		return strings.Repeat("*", len(k))
	}
	prefix := k[:8]
	if i := strings.LastIndexByte(k[:12], '_'); i > 0 {
		prefix = k[:i+1]
	}
	return prefix + strings.Repeat("*", len(k)-len(prefix)-4) + k[len(k)-4:]
}

func (s *StripeHandler) malformed(c *call, err error) *response {
	return s.errorResponse(c, http.StatusBadRequest, stripewire.Error{
		Type: "invalid_request_error", Message: "Invalid request body: " + err.Error() + "."})
}

func (s *StripeHandler) rateLimited(c *call, retryAfter time.Duration) *response {
	r := s.errorResponse(c, http.StatusTooManyRequests, stripewire.Error{
		Type:    "invalid_request_error",
		Code:    "rate_limit",
		Message: "Request rate limit exceeded. You can learn more about rate limits here https://stripe.com/docs/rate-limits.",
	})
	r.header.Set("Retry-After", retryAfterSeconds(retryAfter))
	return r
}

func (s *StripeHandler) serverError(c *call) *response {
	r := s.errorResponse(c, http.StatusInternalServerError, stripewire.Error{
		Type:    "api_error",
		Message: "An unknown error occurred while processing this request (" + c.requestID + "). Contact Stripe support if the problem persists.",
	})
	// Retrying with the same key only replays this answer.
	r.header.Set("Stripe-Should-Retry", "false")
	return r
}

func (s *StripeHandler) keyMismatch(c *call) *response {
	return s.errorResponse(c, http.StatusBadRequest, stripewire.Error{
		Type: "idempotency_error",
		Message: "Keys for idempotent requests can only be used with the same parameters they were first used with. " +
			"Try using a key other than '" + c.key + "' if you meant to execute a different request.",
	})
}

func (s *StripeHandler) keyInUse(c *call) *response {
	r := s.errorResponse(c, http.StatusConflict, stripewire.Error{
		Type: "invalid_request_error",
		Code: "idempotency_key_in_use",
		Message: "There is currently another in-progress request using this Idempotent Key (probably because of a timeout). " +
			"Please try again later.",
	})
	r.header.Set("Stripe-Should-Retry", "true")
	return r
}

func (s *StripeHandler) deliver(h http.Header, c *call, replayed bool) {
	h.Set("Request-Id", c.requestID)
	h.Set("Stripe-Version", StripeAPIVersion)
	if replayed {
		h.Set("Idempotent-Replayed", "true")
	}
}

// ---- answers ----

// jsonResponse renders v as Stripe does (indented JSON). Keyed POST answers
// carry Idempotency-Key and Original-Request, which a replay keeps.
func (s *StripeHandler) jsonResponse(c *call, status int, v any) *response {
	h := http.Header{"Content-Type": {"application/json"}}
	if c.key != "" && c.method == http.MethodPost {
		h.Set("Idempotency-Key", c.key)
		h.Set("Original-Request", c.requestID)
	}
	return renderJSON(status, h, v)
}

func (s *StripeHandler) errorResponse(c *call, status int, e stripewire.Error) *response {
	if e.Code != "" && e.DocURL == "" {
		e.DocURL = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(e.Code, "_", "-")
	}
	e.RequestLogURL = "https://dashboard.stripe.com/test/logs/" + c.requestID
	return s.jsonResponse(c, status, stripewire.ErrorBody{Error: e})
}

// invalid is a 400 invalid_request_error for a parameter.
func (s *StripeHandler) invalid(c *call, code, param, msg string) *response {
	return s.errorResponse(c, http.StatusBadRequest, stripewire.Error{
		Type: "invalid_request_error", Code: code, Param: param, Message: msg})
}

func (s *StripeHandler) notFound(c *call, object, id, param string) *response {
	return s.errorResponse(c, http.StatusNotFound, stripewire.Error{
		Type: "invalid_request_error", Code: "resource_missing", Param: param,
		Message: fmt.Sprintf("No such %s: '%s'", object, id)})
}

func (s *StripeHandler) unknownRoute(c *call) (*response, bool) {
	return s.errorResponse(c, http.StatusNotFound, stripewire.Error{
		Type: "invalid_request_error",
		Message: fmt.Sprintf("Unrecognized request URL (%s: %s). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.",
			c.method, c.path),
	}), false
}
