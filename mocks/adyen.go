package mocks

import (
	"cmp"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Adyen facts the fake follows.
const (
	// adyenKeyTTL is how long Adyen keeps an Idempotency-Key: "valid for a
	// minimum period of 31 days after first submission"
	// (https://docs.adyen.com/development-resources/api-idempotency).
	adyenKeyTTL = 31 * 24 * time.Hour
	// adyenMerchantAccount is the fake's default merchant account.
	adyenMerchantAccount = "PayonceTestMerchant"
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

// AdyenOptions configures a fake Adyen Checkout API (v71): the Options
// every fake takes, and Adyen's own. The zero value is ready to use; every
// field documents its default.
//
// Options.Webhooks delivers Adyen's standard notifications (AUTHORISATION,
// CAPTURE, CANCELLATION, REFUND, and CAPTURE_FAILED / REFUND_FAILED
// through FailCapture and FailRefund) whenever a payment or one of its
// modifications changes, one notification item per delivery. Each item is
// signed in additionalData.hmacSignature with Webhooks.Secret, the
// endpoint's HMAC key in hex as the Customer Area shows it (required when
// URL is set), and every delivery carries HTTP Basic auth when
// Webhooks.Username and Password are set.
type AdyenOptions struct {
	Options
	// APIKey is the accepted X-API-Key. Defaults to a test key derived from
	// Seed, returned by APIKey.
	APIKey string
	// MerchantAccount is the merchant account requests name. Defaults to
	// "PayonceTestMerchant".
	MerchantAccount string
	// MerchantAccounts are further merchant accounts of the same company
	// that requests may name, with the same API key. As at Adyen, every
	// merchant account of the company shares one idempotency store: "Keys
	// are stored at a company account level"
	// (https://docs.adyen.com/development-resources/api-idempotency), so a
	// key one account used is answered, for every other account, with the
	// first account's stored answer. A payment belongs to the account that
	// made it: a modification naming another account is refused (403
	// errorCode 901), and its notifications carry its account's
	// merchantAccountCode. Defaults to none.
	MerchantAccounts []string
	// KeyInUseStatus is the status of errorCode 704 ("request already
	// processed or in progress"), answered to a key whose first request
	// still runs: http.StatusConflict (409, the default) or
	// http.StatusUnprocessableEntity (422); Adyen has been seen answering
	// both. Either carries Transient-Error: true: the same key may be sent
	// again.
	KeyInUseStatus int
	// TransientErrors makes the fake's 500 before anything was processed
	// (FaultStored500) Adyen's transient error: marked Transient-Error:
	// true and not kept under the key, so that a request with the same key
	// "will be processed as if it was the first request" (Adyen's
	// NO_CONNECTION_AVAILABLE, CheckoutService-v71.json,
	// AdditionalDataCommon.requestedTestErrorResponseCode). By default that
	// 500 is non-transient: no header, and "stored as the final result for
	// the idempotency key" (IOEXCEPTION_RECEIVED), replayed to every
	// request with the key. The 500 after processing (FaultProcessed500) is
	// always non-transient: the request may have been acted upon.
	TransientErrors bool
}

// Validate reports the first option that cannot work, saying how to fix it.
func (o AdyenOptions) Validate() error {
	if err := o.coreConfig().check(o.Webhooks); err != nil {
		return err
	}
	switch o.KeyInUseStatus {
	case 0, http.StatusConflict, http.StatusUnprocessableEntity:
	default:
		return fmt.Errorf("mocks: AdyenOptions.KeyInUseStatus is %d; Adyen answers errorCode 704 with 409 or 422: use http.StatusConflict, http.StatusUnprocessableEntity or 0 (409)", o.KeyInUseStatus)
	}
	for i, m := range o.MerchantAccounts {
		if m == "" || strings.ContainsFunc(m, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			return fmt.Errorf("mocks: AdyenOptions.MerchantAccounts[%d] is %q; a merchant account name is printable ASCII without spaces", i, m)
		}
	}
	return checkAdyenWebhooks(o.Webhooks)
}

func (o AdyenOptions) coreConfig() coreConfig {
	return o.Options.coreConfig("adyen", "AdyenOptions")
}

// AdyenHandler is the fake Adyen Checkout API as an http.Handler: POST
// /payments and the captures, cancels and refunds of a payment by its
// pspReference, with Adyen's idempotency (every executed answer stored
// under its key for KeyTTL and replayed, one store for every merchant
// account of the company; errorCode 704 while the first request runs). Outcomes of modifications come only by webhook, as at
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
	merchants        map[string]bool // every merchant account of the company, merchant included
	keyInUseStatus   int
	transient        bool   // TransientErrors
	hmacKey          []byte // Webhooks.Secret, hex-decoded; nil without webhooks

	objectStore
	payments    map[string]*adyPayment
	paymentList []*adyPayment
	mods        map[string]*adyModification
	modList     []*adyModification // every modification, in the order made
	refunds     []*adyModification
	bookings    []*adyBooking // chargebacks and refunds reversed, injected (adyen_report.go)
}

type adyPayment struct {
	stored
	psp, reference, currency, method, result string
	amount, captured, refunded               int64
	authorised, manual, cancelled            bool
	metadata                                 map[string]string

	merchant string // the merchant account that made it
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
	// executed answer is kept, errors included, but for one marked
	// Transient-Error: true, which a request with the same key may run
	// again (TransientErrors).
	h.setUp(opts, adyenKeyTTL, idemPolicy{forget: adyTransient}, h, h.truthRecords)
	h.apiKey, h.merchant = opts.APIKey, cmp.Or(opts.MerchantAccount, adyenMerchantAccount)
	if h.apiKey == "" {
		h.apiKey = "AQE" + h.core.ids.next("", 40) + "==-test"
	}
	h.merchants = map[string]bool{h.merchant: true}
	for _, m := range opts.MerchantAccounts {
		h.merchants[m] = true
	}
	h.keyInUseStatus = cmp.Or(opts.KeyInUseStatus, http.StatusConflict)
	h.transient = opts.TransientErrors
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

// MerchantAccount returns the merchant account requests name
// (AdyenOptions.MerchantAccount); AdyenOptions.MerchantAccounts may be named
// too.
func (h *AdyenHandler) MerchantAccount() string { return h.merchant }

// merchantOfLocked is the merchant account of payment psp, or of the
// payment orig a modification acts on; the default account otherwise.
// h.mu must be held.
func (h *AdyenHandler) merchantOfLocked(psp, orig string) string {
	for _, id := range []string{psp, orig} {
		if p, ok := h.payments[id]; ok {
			return p.merchant
		}
	}
	return h.merchant
}

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

// authenticate checks the API key. The idempotency scope is the company,
// whichever merchant account the request names: "Keys are stored at a
// company account level. The system checks that the idempotency keys are
// unique to the company account"
// (https://docs.adyen.com/development-resources/api-idempotency, "Key
// scope and validity time").
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

// unprocessedError is the 500 of FaultStored500, before anything was
// processed: non-transient (stored as the key's final answer) unless
// TransientErrors, then marked Transient-Error: true and forgotten by the
// idempotency store (adyTransient).
func (h *AdyenHandler) unprocessedError(c *call) *response {
	r := h.serverError(c)
	if h.transient {
		r.header.Set(adyTransientHeader, "true")
	}
	return r
}

// adyTransientHeader marks an error that "can be retried at a later time
// using the same idempotency key"
// (https://docs.adyen.com/development-resources/api-idempotency#transient-errors).
const adyTransientHeader = "Transient-Error"

// adyTransient reports an answer the idempotency store does not keep: one
// marked Transient-Error: true.
func adyTransient(r *response) bool { return r.header.Get(adyTransientHeader) == "true" }

// keyMismatch answers a key reused with another request. Adyen documents
// no error for that case, only that a processed request's key returns "the
// response to the first attempt"; the fake does that (the stored answer,
// whatever the new body), and 704 while the first request still runs. The
// adapter catches such a replay by its reference, payment and amount.
func (h *AdyenHandler) keyMismatch(c *call) *response { return h.core.replayFirst(c, h.keyInUse) }

// keyInUse is errorCode 704, "request already processed or in progress",
// with KeyInUseStatus (409 or 422) and Transient-Error: true, Adyen's own
// example of a transient error (Adyen/adyen-java-api-library#288: "an
// HTTP 409 – Conflict status with the error code 704").
func (h *AdyenHandler) keyInUse(c *call) *response {
	r := h.errorResponse(c, h.keyInUseStatus, "704", "validation", "request already processed or in progress")
	r.header.Set(adyTransientHeader, "true")
	return r
}

// deliver echoes the Idempotency-Key ("To verify that a request was
// processed idempotently, check the Idempotency-Key HTTP header returned in
// the response").
func (h *AdyenHandler) deliver(hd http.Header, c *call, replayed bool) {
	if c.key != "" {
		hd.Set("Idempotency-Key", c.key)
	}
}

// adyenError is Adyen's ServiceError body.
type adyenError struct {
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
	return h.jsonResponse(status, adyenError{Status: status, ErrorCode: code, Message: msg, ErrorType: typ, PspReference: c.requestID})
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
