package mocks

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// YooKassa facts the fake follows (API v3, https://yookassa.ru/developers).
const (
	// yooKassaKeyTTL is how long YooKassa treats a repeat with the same
	// Idempotence-Key as the same request: 24 hours from the first; after it
	// a repeat is a new request.
	yooKassaKeyTTL = 24 * time.Hour
	// yooKassaMaxKeyLength is the longest Idempotence-Key the fake accepts.
	yooKassaMaxKeyLength = 64
)

// Test payment methods of the YooKassa fake, passed as payment_method_id
// (saved payment methods, the only kind a server-side charge can use).
const (
	// YooKassaMethodSucceeds pays (or authorizes, with capture false).
	YooKassaMethodSucceeds = "yk-test-card-succeeds"
	// YooKassaMethodInsufficientFunds is canceled by the payment network
	// with reason insufficient_funds.
	YooKassaMethodInsufficientFunds = "yk-test-card-insufficient-funds"
	// YooKassaMethodGeneralDecline is canceled with reason general_decline.
	YooKassaMethodGeneralDecline = "yk-test-card-general-decline"
	// YooKassaMethodExpired is canceled with reason card_expired.
	YooKassaMethodExpired = "yk-test-card-expired"
	// YooKassaMethodFraud is canceled by YooMoney with reason
	// fraud_suspected.
	YooKassaMethodFraud = "yk-test-card-fraud-suspected"
	// YooKassaMethodNeedsConfirmation stays pending: it waits for a 3-D
	// Secure confirmation that a server-side charge cannot give.
	YooKassaMethodNeedsConfirmation = "yk-test-card-3ds"
	// YooKassaMethodRefundFails pays, but its refunds are canceled
	// (general_decline).
	YooKassaMethodRefundFails = "yk-test-card-refund-fails"
	// YooKassaMethodRefundPending pays, but its refunds stay pending until
	// the test ends them (YooKassaHandler.SucceedRefund, CancelRefund).
	YooKassaMethodRefundPending = "yk-test-card-refund-pending"
)

// YooKassaOptions configures a fake YooKassa: the Options every fake
// takes, and YooKassa's credentials. The zero value is ready to use; every
// field documents its default.
//
// Options.Webhooks delivers YooKassa notifications (payment.succeeded,
// payment.waiting_for_capture, payment.canceled, refund.succeeded)
// whenever a payment or refund changes. YooKassa signs nothing and sends
// no credentials (a receiver checks the source address, and the fake
// posts from loopback), so Webhooks.Secret, Username and Authorization
// must stay empty.
type YooKassaOptions struct {
	Options
	// ShopID and SecretKey are the accepted HTTP Basic credentials (shop id
	// as user name, secret key as password). SecretKey must be a test key
	// (test_...). Idempotence keys are scoped per shop. Default to values
	// derived from Seed, returned by ShopID and SecretKey.
	ShopID    string
	SecretKey string
}

// Validate reports the first option that cannot work, saying how to fix it.
func (o YooKassaOptions) Validate() error {
	if err := o.coreConfig().check(o.Webhooks); err != nil {
		return err
	}
	if o.Webhooks.Secret != "" || o.Webhooks.Username != "" || o.Webhooks.Authorization != "" {
		return fmt.Errorf("mocks: YooKassaOptions.Webhooks sets Secret, Username or Authorization, but YooKassa neither signs notifications nor sends credentials; leave them empty (receivers check the source address)")
	}
	if o.SecretKey != "" && !strings.HasPrefix(o.SecretKey, "test_") {
		return fmt.Errorf("mocks: YooKassaOptions.SecretKey is not a test key; use a value starting with test_")
	}
	if strings.ContainsAny(o.ShopID, ": \t\r\n") {
		return fmt.Errorf("mocks: YooKassaOptions.ShopID contains a colon or space; use the numeric shop id")
	}
	return nil
}

// coreConfig is the provider-neutral half of the options.
func (o YooKassaOptions) coreConfig() coreConfig {
	return o.Options.coreConfig("yookassa", "YooKassaOptions")
}

// YooKassaHandler is the fake YooKassa as an http.Handler: it serves
// YooKassa's API v3 routes for payments and refunds. It is safe for
// concurrent use. Its Truth has currencies in upper case, as YooKassa
// renders them, and amounts in minor units.
type YooKassaHandler struct {
	fakeHandler
	shopID    string
	secretKey string

	objectStore
	payments    map[string]*ykPayment
	paymentList []*ykPayment
	refunds     map[string]*ykRefund
	refundList  []*ykRefund
}

type ykPayment struct {
	stored
	method    string // test method name
	requested int64  // minor units asked for
	amount    int64  // minor units authorized / captured
	scale     int
	refunded  int64
	// refundPending is held by pending refunds: not yet given back, no
	// longer refundable.
	refundPending int64
	authorized    bool
	p             yooKassaPayment
}

type ykRefund struct {
	stored
	amount int64
	r      yooKassaRefund
}

// NewYooKassaHandler returns a fake YooKassa handler. It panics if opts do
// not validate: a wrong option is a bug in the test. Call Release before
// shutting its server down.
func NewYooKassaHandler(opts YooKassaOptions) *YooKassaHandler {
	y := &YooKassaHandler{
		payments: make(map[string]*ykPayment),
		refunds:  make(map[string]*ykRefund),
	}
	// A repeat inside the window is the same request, whatever its
	// first answer was, except a 500: YooKassa says a 500 means the
	// outcome is unknown and a repeat with the same key tells it. So
	// 5xx answers are not replayed, and after a processed 500 the key
	// keeps the real outcome.
	idem := idemPolicy{keep: func(status int) bool { return status < 500 }, keepRealAfter500: true}
	y.setUp(opts, yooKassaKeyTTL, idem, y, y.truthRecords)
	y.shopID, y.secretKey = opts.ShopID, opts.SecretKey
	if y.shopID == "" {
		y.shopID = "5" + strings.Map(digitOf, y.core.ids.next("", 5))
	}
	if y.secretKey == "" {
		y.secretKey = y.core.ids.next("test_", 43)
	}
	y.startWebhooks(opts.Webhooks, nil)
	y.serve([]route{
		{"POST /v3/payments", y.createPayment},
		{"GET /v3/payments", y.listPayments},
		{"GET /v3/payments/{id}", y.getPayment},
		{"POST /v3/payments/{id}/capture", y.capturePayment},
		{"POST /v3/payments/{id}/cancel", y.cancelPayment},
		{"POST /v3/refunds", y.createRefund},
		{"GET /v3/refunds", y.listRefunds},
		{"GET /v3/refunds/{id}", y.getRefund},
	}, y.unknownRoute)
	return y
}

func digitOf(r rune) rune { return '0' + r%10 }

// ShopID returns the accepted shop id (the Basic auth user name).
func (y *YooKassaHandler) ShopID() string { return y.shopID }

// SecretKey returns the accepted secret key (the Basic auth password).
func (y *YooKassaHandler) SecretKey() string { return y.secretKey }

// truthRecords writes the payments and refunds into a Truth.
func (y *YooKassaHandler) truthRecords(t *Truth) {
	y.mu.Lock()
	defer y.mu.Unlock()
	for _, p := range y.paymentList {
		captured := int64(0)
		if p.p.Status == "succeeded" {
			captured = p.amount
		}
		t.Payments = append(t.Payments, TruthPayment{
			ID: p.p.ID, Status: p.p.Status, Amount: p.requested, Currency: p.p.Amount.Currency,
			Authorized: p.authorized, AmountCaptured: captured, AmountRefunded: p.refunded,
			Metadata: cloneMap(p.p.Metadata), IdempotencyKey: p.key, Created: p.createdAt,
		})
	}
	for _, r := range y.refundList {
		t.Refunds = append(t.Refunds, TruthRefund{
			ID: r.r.ID, PaymentID: r.r.PaymentID, Status: r.r.Status, Amount: r.amount,
			Currency: r.r.Amount.Currency, Metadata: map[string]string{}, Description: r.r.Description,
			IdempotencyKey: r.key, Created: r.createdAt,
		})
	}
}

// YooKassa is a fake YooKassa API served by an httptest.Server on
// 127.0.0.1. Point a client at URL() (paths start with /v3) and
// authenticate with ShopID() and SecretKey().
type YooKassa struct {
	*YooKassaHandler
	fakeServer
}

// NewYooKassa starts a fake YooKassa server. It panics if opts do not
// validate. Close it when done.
func NewYooKassa(opts YooKassaOptions) *YooKassa {
	y := &YooKassa{YooKassaHandler: NewYooKassaHandler(opts)}
	y.listen(y.YooKassaHandler)
	return y
}

// ---- dialect: YooKassa's words for the pipeline's own answers ----

func (y *YooKassaHandler) jsonBodies() {}

func (y *YooKassaHandler) keyHeader() string { return "Idempotence-Key" }

// requestID names the request in error bodies ("id"); YooKassa sends no
// request id header.
func (y *YooKassaHandler) requestID() string { return ykUUID(y.core.ids, "0000", "8000") }

func (y *YooKassaHandler) authenticate(c *call) (string, *response) {
	h := c.r.Header.Get("Authorization")
	if len(h) <= 6 || !strings.EqualFold(h[:6], "Basic ") {
		return "", y.errorResponse(c, http.StatusUnauthorized, "invalid_credentials", "",
			"Authentication is required: use HTTP Basic auth with your shop id as the user name and your secret key as the password")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[6:]))
	if err != nil {
		return "", y.errorResponse(c, http.StatusUnauthorized, "invalid_credentials", "", "The Basic credentials are not valid base64")
	}
	user, pass, _ := strings.Cut(string(raw), ":")
	if user != y.shopID || pass != y.secretKey {
		// Neither the shop id nor the key is echoed.
		return "", y.errorResponse(c, http.StatusUnauthorized, "invalid_credentials", "",
			"Authentication by given credentials failed")
	}
	return "shop:" + user, nil
}

func (y *YooKassaHandler) malformed(c *call, err error) *response {
	return y.errorResponse(c, http.StatusBadRequest, "invalid_request", "", "Request body is invalid: "+err.Error())
}

func (y *YooKassaHandler) rateLimited(c *call, retryAfter time.Duration) *response {
	r := y.errorResponse(c, http.StatusTooManyRequests, "too_many_requests", "", "Too many requests. Try reducing the request rate")
	var e yooKassaError
	_ = json.Unmarshal(r.body, &e)
	e.RetryAfter = retryAfter.Milliseconds()
	return y.jsonResponse(http.StatusTooManyRequests, e)
}

func (y *YooKassaHandler) serverError(c *call) *response {
	return y.errorResponse(c, http.StatusInternalServerError, "internal_server_error", "",
		"Internal server error. The result of the request is unknown: repeat it with the same Idempotence-Key")
}

func (y *YooKassaHandler) keyMismatch(c *call) *response {
	return y.errorResponse(c, http.StatusBadRequest, "invalid_request", "Idempotence-Key", "Idempotence key duplicated")
}

func (y *YooKassaHandler) keyInUse(c *call) *response {
	return y.jsonResponse(http.StatusAccepted, yooKassaProcessing{
		Type: "processing", Description: "Request accepted", RetryAfter: y.core.cfg.retryAfter.Milliseconds()})
}

func (y *YooKassaHandler) deliver(h http.Header, c *call, replayed bool) {}

// ---- answers ----

func (y *YooKassaHandler) jsonResponse(status int, v any) *response {
	return renderJSON(status, http.Header{"Content-Type": {"application/json;charset=UTF-8"}}, v)
}

func (y *YooKassaHandler) errorResponse(c *call, status int, code, param, desc string) *response {
	return y.jsonResponse(status, yooKassaError{Type: "error", ID: c.requestID, Code: code, Parameter: param, Description: desc})
}

func (y *YooKassaHandler) invalid(c *call, param, desc string) *response {
	return y.errorResponse(c, http.StatusBadRequest, "invalid_request", param, desc)
}

func (y *YooKassaHandler) notFound(c *call, what, id string) *response {
	return y.errorResponse(c, http.StatusNotFound, "not_found", "", fmt.Sprintf("%s %s not found", what, id))
}

func (y *YooKassaHandler) unknownRoute(c *call) (*response, bool) {
	return y.errorResponse(c, http.StatusNotFound, "not_found", "", fmt.Sprintf("Unknown method %s %s", c.method, c.path)), false
}

// requireKey refuses a POST without a usable Idempotence-Key: YooKassa
// requires one on every POST.
func (y *YooKassaHandler) requireKey(c *call) *response {
	switch {
	case c.key == "":
		return y.invalid(c, "Idempotence-Key", "Idempotence-Key header is required")
	case len(c.key) > yooKassaMaxKeyLength:
		return y.invalid(c, "Idempotence-Key", fmt.Sprintf("Idempotence key is longer than %d characters", yooKassaMaxKeyLength))
	}
	return nil
}

// keyedBody refuses a POST without a usable Idempotence-Key (requireKey),
// then decodes its body into v (decodeBody).
func (y *YooKassaHandler) keyedBody(c *call, v any) *response {
	if r := y.requireKey(c); r != nil {
		return r
	}
	return y.decodeBody(c, v)
}

// decodeBody decodes the JSON body strictly into v; an empty body leaves v
// as it is.
func (y *YooKassaHandler) decodeBody(c *call, v any) *response {
	if err := decodeStrict(c.body, v); err != nil {
		return y.invalid(c, "", "Request body does not match the method's parameters: "+err.Error())
	}
	return nil
}

// ykUUID makes a YooKassa-looking identifier, e.g.
// "2419a771-000f-5000-9000-1edaf29243f2".
func ykUUID(ids *idSource, mid1, mid2 string) string {
	s := ids.next("", 20)
	hex := make([]byte, len(s))
	for i := range len(s) {
		hex[i] = "0123456789abcdef"[s[i]%16]
	}
	return string(hex[:8]) + "-000f-" + mid1[:4] + "-" + mid2[:4] + "-" + string(hex[8:20])
}

// ykTime renders t as YooKassa does: UTC, milliseconds, Z.
func ykTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
