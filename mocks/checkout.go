package mocks

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Checkout.com facts the fake follows.
const (
	// checkoutKeyTTL is how long Checkout.com keeps a Cko-Idempotency-Key
	// by default: 24 hours, after which the request is processed as normal.
	checkoutKeyTTL = 24 * time.Hour
)

// Test sources of the Checkout.com fake, passed as {"type": "id", "id": ...}
// (or as a token, {"type": "token", "token": "tok_test_..."} with the same
// suffix).
const (
	// CheckoutSourceApproved is approved (response_code 10000).
	CheckoutSourceApproved = "src_test_approved"
	// CheckoutSourceDoNotHonour is declined: 20005 "Declined - Do Not Honour".
	CheckoutSourceDoNotHonour = "src_test_do_not_honour"
	// CheckoutSourceInsufficientFunds is declined: 20051 "Insufficient Funds".
	CheckoutSourceInsufficientFunds = "src_test_insufficient_funds"
	// CheckoutSourceExpiredCard is declined: 20054 "Expired Card".
	CheckoutSourceExpiredCard = "src_test_expired_card"
	// CheckoutSource3DS answers 202 Pending: the payment waits for a 3-D
	// Secure redirect that a server-side charge never follows.
	CheckoutSource3DS = "src_test_3ds"
	// CheckoutSourceRefundDeclined is approved, but its refunds are
	// declined (an action with approved false, 20005).
	CheckoutSourceRefundDeclined = "src_test_refund_declined"
)

// CheckoutOptions configures a fake Checkout.com: the Options every fake
// takes, and Checkout.com's own. The zero value is ready to use; every
// field documents its default.
//
// Options.Webhooks delivers Checkout.com payment events (payment_approved,
// payment_captured, payment_refunded, ...) whenever a payment or one of
// its actions changes, with Cko-Signature keyed by Webhooks.Secret (the
// webhook's signature key, required when URL is set) and, when
// Webhooks.Authorization is set, that Authorization header. Checkout.com
// sends no Basic credentials: Webhooks.Username must stay empty.
type CheckoutOptions struct {
	Options
	// SecretKey is the accepted secret key ("Authorization: Bearer
	// sk_sbox_..." or the bare key). It must be a sandbox or test key
	// (sk_sbox_... or sk_test_...). Defaults to a key derived from Seed,
	// returned by SecretKey.
	SecretKey string
	// KeyInUseStatus is how the fake answers a request whose
	// Cko-Idempotency-Key belongs to a request still being processed.
	// Checkout.com has documented both answers: http.StatusConflict, 409
	// error_type "request_in_progress" (the default: support.checkout.com,
	// "Why did I receive a 409 HTTP response to my idempotent API request
	// instead of 429?", says 409 replaced 429 in that case), and
	// http.StatusTooManyRequests, 429 error_type "request_invalid" with
	// error_codes ["duplicate_request"] (the public idempotency pages,
	// https://www.checkout.com/docs/developer-resources/api/idempotency,
	// 2022-2024: "the other requests will return a 429 Too many requests
	// response"; the body is the API reference's, POST /payments 429 "Too
	// many requests or duplicate request detected",
	// checkout/checkout-api-reference nas_spec/paths/payments.yaml). A
	// rate-limited request (FaultRateLimit429) stays 429 too_many_requests
	// either way. Defaults to 409.
	KeyInUseStatus int
}

// Validate reports the first option that cannot work, saying how to fix it.
func (o CheckoutOptions) Validate() error {
	if err := o.coreConfig().check(o.Webhooks); err != nil {
		return err
	}
	if o.Webhooks.enabled() && o.Webhooks.Secret == "" {
		return fmt.Errorf("mocks: CheckoutOptions.Webhooks.Secret is empty; set the webhook's signature key, which the receiver verifies Cko-Signature with")
	}
	if o.Webhooks.Username != "" {
		return fmt.Errorf("mocks: CheckoutOptions.Webhooks.Username is set, but Checkout.com sends no Basic credentials; put the header value in Webhooks.Authorization")
	}
	switch o.KeyInUseStatus {
	case 0, http.StatusConflict, http.StatusTooManyRequests:
	default:
		return fmt.Errorf("mocks: CheckoutOptions.KeyInUseStatus is %d; use http.StatusConflict (409, the default) or http.StatusTooManyRequests (429)", o.KeyInUseStatus)
	}
	if o.SecretKey != "" && !strings.HasPrefix(o.SecretKey, "sk_sbox_") && !strings.HasPrefix(o.SecretKey, "sk_test_") {
		return fmt.Errorf("mocks: CheckoutOptions.SecretKey is not a sandbox key; use a value starting with sk_sbox_ or sk_test_")
	}
	return nil
}

// coreConfig is the provider-neutral half of the options.
func (o CheckoutOptions) coreConfig() coreConfig {
	return o.Options.coreConfig("checkout", "CheckoutOptions")
}

// CheckoutHandler is the fake Checkout.com as an http.Handler: it serves
// Checkout.com's payment routes. It is safe for concurrent use. In its
// Truth, payments carry their reference in Reference (ChargesByReference)
// and their metadata; refunds are the approved and declined Refund actions
// (Status "succeeded" or "declined").
type CheckoutHandler struct {
	fakeHandler
	secretKey string
	inUse     int // KeyInUseStatus, defaulted

	objectStore
	payments    map[string]*ckoPayment
	paymentList []*ckoPayment
	refunds     []*ckoRefund
}

type ckoPayment struct {
	stored
	source  string // test source name (src_test_...)
	p       checkoutPayment
	actions []checkoutAction // oldest first
}

// ckoRefund is a Refund action. Refunds are not numbered (their seq stays
// 0): the fake lists them only through their payment's actions, and a
// payment's auth code follows the payment count.
type ckoRefund struct {
	stored
	paymentID string
	currency  string
	action    checkoutAction
}

// NewCheckoutHandler returns a fake Checkout.com handler. It panics if opts
// do not validate. Call Release before shutting its server down.
func NewCheckoutHandler(opts CheckoutOptions) *CheckoutHandler {
	h := &CheckoutHandler{payments: make(map[string]*ckoPayment)}
	// Checkout.com caches an answer under the key only when it was
	// 2xx. After a 4xx or a 5xx (even one produced after the payment
	// was made) the same key is processed anew: a blind resend after a
	// 5xx can charge twice.
	idem := idemPolicy{keep: func(status int) bool { return status >= 200 && status < 300 }}
	h.setUp(opts, checkoutKeyTTL, idem, h, h.truthRecords)
	h.secretKey, h.inUse = opts.SecretKey, opts.KeyInUseStatus
	if h.inUse == 0 {
		h.inUse = http.StatusConflict
	}
	if h.secretKey == "" {
		h.secretKey = "sk_sbox_" + ckoID(h.core.ids, "")
	}
	h.startWebhooks(opts.Webhooks, ckoSignWebhook(opts.Webhooks.Secret))
	h.serve([]route{
		{"POST /payments", h.createPayment},
		{"GET /payments", h.listPayments},
		{"GET /payments/{id}", h.getPayment},
		{"GET /payments/{id}/actions", h.getActions},
		{"POST /payments/{id}/captures", h.capture},
		{"POST /payments/{id}/voids", h.void},
		{"POST /payments/{id}/refunds", h.refund},
	}, h.unknownRoute)
	return h
}

// SecretKey returns the accepted secret key.
func (h *CheckoutHandler) SecretKey() string { return h.secretKey }

// truthRecords writes the payments and the Refund actions into a Truth.
func (h *CheckoutHandler) truthRecords(t *Truth) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.paymentList {
		var captured, refunded int64
		if b := p.p.Balances; b != nil {
			captured, refunded = b.TotalCaptured, b.TotalRefunded
		}
		t.Payments = append(t.Payments, TruthPayment{
			ID: p.p.ID, Status: p.p.Status, Amount: p.p.Amount, Currency: p.p.Currency,
			Authorized: p.p.Approved, AmountCaptured: captured, AmountRefunded: refunded,
			Metadata: cloneMap(p.p.Metadata), Reference: p.p.Reference, IdempotencyKey: p.key, Created: p.createdAt,
		})
	}
	for _, r := range h.refunds {
		status := "succeeded"
		if !r.action.Approved {
			status = "declined"
		}
		t.Refunds = append(t.Refunds, TruthRefund{
			ID: r.action.ID, PaymentID: r.paymentID, Status: status, Amount: r.action.Amount, Currency: r.currency,
			Metadata: cloneMap(r.action.Metadata), Reference: r.action.Reference, IdempotencyKey: r.key, Created: r.createdAt,
		})
	}
}

// Checkout is a fake Checkout.com API served by an httptest.Server on
// 127.0.0.1. Point a client at URL() and authenticate with SecretKey().
type Checkout struct {
	*CheckoutHandler
	fakeServer
}

// NewCheckout starts a fake Checkout.com server. It panics if opts do not
// validate. Close it when done.
func NewCheckout(opts CheckoutOptions) *Checkout {
	c := &Checkout{CheckoutHandler: NewCheckoutHandler(opts)}
	c.listen(c.CheckoutHandler)
	return c
}

// ---- dialect: Checkout.com's words for the pipeline's own answers ----

func (h *CheckoutHandler) jsonBodies() {}

func (h *CheckoutHandler) keyHeader() string { return "Cko-Idempotency-Key" }

func (h *CheckoutHandler) requestID() string {
	s := ckoID(h.core.ids, "")
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:26] + "000000"
}

func (h *CheckoutHandler) authenticate(c *call) (string, *response) {
	v := strings.TrimSpace(c.r.Header.Get("Authorization"))
	if len(v) > 7 && strings.EqualFold(v[:7], "Bearer ") {
		v = strings.TrimSpace(v[7:])
	}
	if v == "" || v != h.secretKey {
		// Checkout.com answers 401 with an empty body.
		return "", &response{status: http.StatusUnauthorized, header: http.Header{}}
	}
	return "key", nil
}

func (h *CheckoutHandler) malformed(c *call, err error) *response {
	return h.errorResponse(c, http.StatusUnprocessableEntity, "request_invalid", "request_body_invalid")
}

func (h *CheckoutHandler) rateLimited(c *call, retryAfter time.Duration) *response {
	r := h.errorResponse(c, http.StatusTooManyRequests, "too_many_requests")
	r.header.Set("Retry-After", retryAfterSeconds(retryAfter))
	return r
}

func (h *CheckoutHandler) serverError(c *call) *response {
	return h.errorResponse(c, http.StatusInternalServerError, "internal_server_error")
}

// keyMismatch answers a key reused with another request (another body,
// path or method). Checkout.com documents no answer for that case: its
// idempotency page says only that "subsequent requests with the same key
// will return the same HTTP status code and response body as the original
// request, providing that it was processed successfully", and that
// concurrent requests with the same key get 409 "Conflict with another
// request being processed", or 429 on the older pages
// (https://www.checkout.com/docs/developer-resources/api/idempotency;
// support.checkout.com, "Why did I receive a 409 HTTP response to my
// idempotent API request instead of 429?"). The fake does what those words
// say, which is also the hardest case for a client: it replays the first
// request's stored 2xx answer, whatever the new request's body, and
// answers keyInUse while the first request is still running. It invents no
// error code. (Only 2xx answers are stored at all: after a 4xx or 5xx the
// key is free and a request with it is processed as new.)
func (h *CheckoutHandler) keyMismatch(c *call) *response { return h.core.replayFirst(c, h.keyInUse) }

// keyInUse answers a request whose key's first request still runs: 409
// "conflict with another request being processed", or, with
// KeyInUseStatus 429, the API reference's 429 "duplicate request
// detected" (error_codes duplicate_request).
func (h *CheckoutHandler) keyInUse(c *call) *response {
	if h.inUse == http.StatusTooManyRequests {
		return h.errorResponse(c, http.StatusTooManyRequests, "request_invalid", "duplicate_request")
	}
	return h.errorResponse(c, http.StatusConflict, "request_in_progress")
}

func (h *CheckoutHandler) deliver(hd http.Header, c *call, replayed bool) {
	hd.Set("Cko-Request-Id", c.requestID)
}

// ---- answers ----

func (h *CheckoutHandler) jsonResponse(status int, v any) *response {
	return renderJSON(status, http.Header{"Content-Type": {"application/json; charset=utf-8"}}, v)
}

func (h *CheckoutHandler) errorResponse(c *call, status int, errType string, codes ...string) *response {
	return h.jsonResponse(status, checkoutError{RequestID: c.requestID, ErrorType: errType, ErrorCodes: codes})
}

func (h *CheckoutHandler) invalid(c *call, codes ...string) *response {
	return h.errorResponse(c, http.StatusUnprocessableEntity, "request_invalid", codes...)
}

// notFound is Checkout.com's 404: an empty body.
func (h *CheckoutHandler) notFound() *response {
	return &response{status: http.StatusNotFound, header: http.Header{}}
}

func (h *CheckoutHandler) unknownRoute(c *call) (*response, bool) { return h.notFound(), false }

// decodeBody decodes the JSON body into v, refusing unknown fields; an
// empty body leaves v as it is.
func (h *CheckoutHandler) decodeBody(c *call, v any) *response {
	if decodeStrict(c.body, v) != nil {
		return h.invalid(c, "request_body_invalid")
	}
	return nil
}

// ckoID makes a Checkout.com-looking id: prefix and 26 characters of
// [a-z2-7].
func ckoID(ids *idSource, prefix string) string {
	s := ids.next("", 26)
	b := []byte(s)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz234567"[b[i]%32]
	}
	return prefix + string(b)
}

func ckoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.0000000Z") }
