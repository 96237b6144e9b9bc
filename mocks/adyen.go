package mocks

import (
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// Adyen facts the fake follows.
const (
	// AdyenKeyTTL is how long Adyen keeps an Idempotency-Key: "valid for a
	// minimum period of 31 days after first submission"
	// (https://docs.adyen.com/development-resources/api-idempotency).
	AdyenKeyTTL = 31 * 24 * time.Hour
	// AdyenMerchantAccount is the fake's default merchant account.
	AdyenMerchantAccount = "PayonceTestMerchant"
)

// Test stored payment methods of the Adyen fake, passed as
// paymentMethod.storedPaymentMethodId.
const (
	// AdyenMethodAuthorised is authorised (resultCode Authorised).
	AdyenMethodAuthorised = "adyen_test_authorised"
	// AdyenMethodRefused is refused: refusalReason "Refused", code "2".
	AdyenMethodRefused = "adyen_test_refused"
	// AdyenMethodNotEnoughBalance is refused: "Not enough balance", code "12".
	AdyenMethodNotEnoughBalance = "adyen_test_not_enough_balance"
	// AdyenMethodPending answers resultCode Received; the payment is
	// authorised, and its AUTHORISATION webhook says so.
	AdyenMethodPending = "adyen_test_pending"
	// AdyenMethodRedirect answers resultCode RedirectShopper (3-D Secure):
	// nothing is authorised and no webhook is queued.
	AdyenMethodRedirect = "adyen_test_redirect"
)

// AdyenOptions configures a fake Adyen Checkout API (v71). The zero value
// is ready to use; every field documents its default.
type AdyenOptions struct {
	// Clock is the fake's notion of now. Defaults to time.Now.
	Clock func() time.Time
	// KeyTTL is how long an answer stays stored under its Idempotency-Key.
	// Defaults to AdyenKeyTTL (31 days).
	KeyTTL time.Duration
	// Seed seeds identifiers, default credentials and random faults.
	Seed int64
	// FaultRates gives each fault kind a probability per request (their sum
	// must not exceed 1); POSTs only unless FaultGETs is set.
	FaultRates map[FaultKind]float64
	// FaultGETs lets FaultRates apply to GET requests too.
	FaultGETs bool
	// HangFor is how long FaultHangAfterProcessing holds an answer.
	// Defaults to 30s.
	HangFor time.Duration
	// SlowFor is the delay of FaultSlow. Defaults to 500ms.
	SlowFor time.Duration
	// RetryAfter is the Retry-After of FaultRateLimit429. Defaults to 1s.
	RetryAfter time.Duration
	// APIKey is the accepted X-API-Key. Defaults to a test key derived from
	// Seed, returned by APIKey.
	APIKey string
	// MerchantAccount is the only merchant account requests may name.
	// Defaults to AdyenMerchantAccount.
	MerchantAccount string
	// Logger receives one record per request; keys and headers are never
	// logged. Defaults to discarding.
	Logger *slog.Logger
	// Webhooks delivers Adyen's standard notifications (AUTHORISATION,
	// CAPTURE, CANCELLATION, REFUND, and CAPTURE_FAILED / REFUND_FAILED
	// through FailCapture and FailRefund) whenever a payment or one of its
	// modifications changes, one notification item per delivery (see
	// AdyenNotification). Each item is signed in
	// additionalData.hmacSignature with Webhooks.Secret, the endpoint's
	// HMAC key in hex as the Customer Area shows it (required when URL is
	// set), and every delivery carries HTTP Basic auth when
	// Webhooks.Username and Password are set. Defaults to none.
	Webhooks WebhookDelivery
}

// Validate reports the first option that cannot work, saying how to fix it.
func (o AdyenOptions) Validate() error {
	if err := o.coreConfig().check(o.Webhooks); err != nil {
		return err
	}
	return checkAdyenWebhooks(o.Webhooks)
}

func (o AdyenOptions) coreConfig() coreConfig {
	return coreConfig{"adyen", "AdyenOptions", o.Clock, o.KeyTTL, o.Seed, o.FaultRates, o.FaultGETs, o.HangFor, o.SlowFor, o.RetryAfter, o.Logger}
}

// AdyenHandler is the fake Adyen Checkout API as an http.Handler: POST
// /payments and the captures, cancels and refunds of a payment by its
// pspReference, with Adyen's idempotency (every executed answer stored
// under its key for KeyTTL and replayed; 409 errorCode 704 while the first
// request runs). Outcomes of modifications come only by webhook, as at
// Adyen: with AdyenOptions.Webhooks set, the handler delivers signed
// notifications (AUTHORISATION, CAPTURE, CANCELLATION, REFUND, and
// CAPTURE_FAILED / REFUND_FAILED through FailCapture and FailRefund) in
// the order the changes happen; FlushWebhooks waits for them.
//
// It is safe for concurrent use. In its Truth, payments carry their
// reference and metadata; refunds are the refund modifications (Status
// "succeeded", "failed" or "received" until processed).
type AdyenHandler struct {
	fakeHandler
	apiKey, merchant string
	hmacKey          []byte // Webhooks.Secret, hex-decoded; nil without webhooks

	objectStore
	payments    map[string]*adyPayment
	paymentList []*adyPayment
	mods        map[string]*adyModification
	refunds     []*adyModification
}

type adyPayment struct {
	stored
	psp, reference, currency, method, result string
	amount, captured, refunded               int64
	authorised, manual, cancelled            bool
	metadata                                 map[string]string
}

type adyModification struct {
	stored
	psp, payment, kind, reference, currency, status string
	amount                                          int64
}

// NewAdyenHandler returns a fake Adyen handler. It panics if opts do not
// validate. Call Release before shutting its server down.
func NewAdyenHandler(opts AdyenOptions) *AdyenHandler {
	h := &AdyenHandler{payments: map[string]*adyPayment{}, mods: map[string]*adyModification{}}
	// Adyen: "If the Adyen payments platform already processed the
	// request, the response to the first attempt will be returned". Every
	// executed answer is kept, errors included (the fake marks none of its
	// errors Transient-Error: true).
	h.setUp(opts, AdyenKeyTTL, idemPolicy{}, h, h.truthRecords)
	h.apiKey, h.merchant = opts.APIKey, opts.MerchantAccount
	if h.apiKey == "" {
		h.apiKey = "AQE" + h.core.ids.next("", 40) + "==-test"
	}
	if h.merchant == "" {
		h.merchant = AdyenMerchantAccount
	}
	if opts.Webhooks.enabled() {
		h.hmacKey, _ = hex.DecodeString(opts.Webhooks.Secret) // checked by Validate
	}
	h.startWebhooks(opts.Webhooks, adySignWebhook)
	h.serve([]route{
		{"POST /payments", h.createPayment},
		{"POST /payments/{id}/captures", h.capture},
		{"POST /payments/{id}/cancels", h.cancel},
		{"POST /payments/{id}/refunds", h.refund},
	}, h.unknownRoute)
	return h
}

// APIKey returns the accepted X-API-Key.
func (h *AdyenHandler) APIKey() string { return h.apiKey }

// MerchantAccount returns the merchant account requests must name.
func (h *AdyenHandler) MerchantAccount() string { return h.merchant }

// Adyen is a fake Adyen Checkout API served by an httptest.Server on
// 127.0.0.1. Point an adapter at URL() (the base URL with its version
// path, like https://checkout-test.adyen.com/v71) with APIKey().
type Adyen struct {
	*AdyenHandler
	fakeServer
}

// NewAdyen starts a fake Adyen server. It panics if opts do not validate.
// Close it when done.
func NewAdyen(opts AdyenOptions) *Adyen {
	a := &Adyen{AdyenHandler: NewAdyenHandler(opts)}
	a.listen(a.AdyenHandler)
	return a
}

func (h *AdyenHandler) truthRecords(t *Truth) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.paymentList {
		t.Payments = append(t.Payments, TruthPayment{ID: p.psp, Status: p.status(), Amount: p.amount, Currency: p.currency,
			Authorized: p.authorised, AmountCaptured: p.captured, AmountRefunded: p.refunded, Metadata: cloneMap(p.metadata),
			Reference: p.reference, IdempotencyKey: p.key, Created: p.createdAt})
	}
	for _, r := range h.refunds {
		t.Refunds = append(t.Refunds, TruthRefund{ID: r.psp, PaymentID: r.payment, Status: r.status, Amount: r.amount,
			Currency: r.currency, Reference: r.reference, IdempotencyKey: r.key, Created: r.createdAt})
	}
}

func (p *adyPayment) status() string {
	switch {
	case !p.authorised:
		return p.result
	case p.cancelled:
		return "Cancelled"
	case p.refunded > 0 && p.refunded >= p.captured:
		return "Refunded"
	case p.captured > 0:
		return "Captured"
	}
	return "Authorised"
}

// ---- dialect ----

func (h *AdyenHandler) jsonBodies() {}

func (h *AdyenHandler) keyHeader() string { return "Idempotency-Key" }

func (h *AdyenHandler) requestID() string { return adyPSP(h.core.ids) }

func (h *AdyenHandler) authenticate(c *call) (string, *response) {
	got := c.r.Header.Get("X-API-Key")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(h.apiKey)) != 1 {
		return "", h.errorResponse(c, http.StatusUnauthorized, "000", "security", "HTTP Status Response - Unauthorized")
	}
	return "company", nil
}

func (h *AdyenHandler) malformed(c *call, err error) *response {
	return h.errorResponse(c, http.StatusBadRequest, "702", "validation", "Unexpected input")
}

func (h *AdyenHandler) rateLimited(c *call, retryAfter time.Duration) *response {
	r := h.errorResponse(c, http.StatusTooManyRequests, "000", "internal", "Too many requests")
	r.header.Set("Retry-After", retryAfterSeconds(retryAfter))
	return r
}

func (h *AdyenHandler) serverError(c *call) *response {
	return h.errorResponse(c, http.StatusInternalServerError, "000", "internal", "An internal error occurred")
}

// keyMismatch answers a key reused with another request. Adyen documents
// no error for that case, only that a processed request's key returns "the
// response to the first attempt"; the fake does that (the stored answer,
// whatever the new body), and 704 while the first request still runs. The
// adapter catches such a replay by its reference, payment and amount.
func (h *AdyenHandler) keyMismatch(c *call) *response { return h.core.replayFirst(c, h.keyInUse) }

// keyInUse is errorCode 704, "request already processed or in progress".
func (h *AdyenHandler) keyInUse(c *call) *response {
	return h.errorResponse(c, http.StatusConflict, "704", "validation", "request already processed or in progress")
}

// deliver echoes the Idempotency-Key ("To verify that a request was
// processed idempotently, check the Idempotency-Key HTTP header returned in
// the response").
func (h *AdyenHandler) deliver(hd http.Header, c *call, replayed bool) {
	if c.key != "" {
		hd.Set("Idempotency-Key", c.key)
	}
}

// AdyenError is Adyen's ServiceError body.
type AdyenError struct {
	Status       int    `json:"status"`
	ErrorCode    string `json:"errorCode"`
	Message      string `json:"message"`
	ErrorType    string `json:"errorType"`
	PspReference string `json:"pspReference"`
}

func (h *AdyenHandler) jsonResponse(status int, v any) *response {
	return renderJSON(status, http.Header{"Content-Type": {"application/json;charset=UTF-8"}}, v)
}

func (h *AdyenHandler) errorResponse(c *call, status int, code, typ, msg string) *response {
	return h.jsonResponse(status, AdyenError{Status: status, ErrorCode: code, Message: msg, ErrorType: typ, PspReference: c.requestID})
}

func (h *AdyenHandler) unknownRoute(c *call) (*response, bool) {
	return h.errorResponse(c, http.StatusNotFound, "000", "internal", "Not found"), false
}

// adyPSP makes a 16-character pspReference of capitals and digits.
func adyPSP(ids *idSource) string {
	b := []byte(ids.next("", 16))
	for i := range b {
		b[i] = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"[b[i]%32]
	}
	return string(b)
}
