package mocks

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/currency"
)

// YooKassa's limits the fake enforces.
const (
	ykMaxMetadataKeys        = 16
	ykMaxMetadataKeyLen      = 32
	ykMaxMetadataValueLen    = 512
	ykMaxPaymentDescription  = 128
	ykMaxRefundDescription   = 250
	ykAuthorizationLifetime  = 7 * 24 * time.Hour
	ykDefaultListLimit       = 10
	ykMaxListLimit           = 100
	ykConfirmationURLPattern = "https://yoomoney.ru/checkout/payments/v2/contract?orderId="
)

type ykCreatePaymentRequest struct {
	Amount             *yooKassaAmount   `json:"amount"`
	Capture            *bool             `json:"capture"`
	PaymentMethodID    string            `json:"payment_method_id"`
	Description        string            `json:"description"`
	Metadata           map[string]string `json:"metadata"`
	MerchantCustomerID string            `json:"merchant_customer_id"`
}

type ykCaptureRequest struct {
	Amount *yooKassaAmount `json:"amount"`
}

// ykTestMethod is the behaviour of one of the fake's test payment methods.
type ykTestMethod struct {
	title        string
	party        string // cancellation party of a decline, "" if it pays
	reason       string
	confirmation bool // stays pending, waiting for a confirmation
	refundFails  bool
	refundWaits  bool
}

func lookupYKMethod(id string) (ykTestMethod, bool) {
	decline := func(party, reason string) ykTestMethod {
		return ykTestMethod{title: "Bank card *0000", party: party, reason: reason}
	}
	switch id {
	case YooKassaMethodSucceeds:
		return ykTestMethod{title: "Bank card *4444"}, true
	case YooKassaMethodInsufficientFunds:
		return decline("payment_network", "insufficient_funds"), true
	case YooKassaMethodGeneralDecline:
		return decline("payment_network", "general_decline"), true
	case YooKassaMethodExpired:
		return decline("payment_network", "card_expired"), true
	case YooKassaMethodFraud:
		return decline("yoo_money", "fraud_suspected"), true
	case YooKassaMethodNeedsConfirmation:
		return ykTestMethod{title: "Bank card *3333", confirmation: true}, true
	case YooKassaMethodRefundFails:
		return ykTestMethod{title: "Bank card *5555", refundFails: true}, true
	case YooKassaMethodRefundPending:
		return ykTestMethod{title: "Bank card *6666", refundWaits: true}, true
	}
	return ykTestMethod{}, false
}

// ykCurrencyScale returns the minor-unit digits of an upper-case ISO 4217
// code (from golang.org/x/text/currency), or ok false.
func ykCurrencyScale(code string) (int, bool) {
	u, err := currency.ParseISO(code)
	if err != nil || u.String() != code || code == "XXX" {
		return 0, false
	}
	scale, _ := currency.Standard.Rounding(u)
	return scale, true
}

// ykParseAmount reads a YooKassa amount into minor units. desc is the
// refusal when it is not valid.
func ykParseAmount(a *yooKassaAmount) (minor int64, scale int, desc, param string) {
	if a == nil {
		return 0, 0, "Amount is required", "amount"
	}
	scale, ok := ykCurrencyScale(a.Currency)
	if !ok {
		return 0, 0, fmt.Sprintf("Currency %q is not an ISO 4217 code in upper case", a.Currency), "amount.currency"
	}
	v := a.Value
	intPart, frac, hasDot := strings.Cut(v, ".")
	if intPart == "" || strings.Trim(intPart, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" ||
		(hasDot && frac == "") || len(intPart) > 12 {
		return 0, 0, fmt.Sprintf("Amount value %q is not a decimal number", v), "amount.value"
	}
	if len(frac) > scale {
		return 0, 0, fmt.Sprintf("Amount value %q has more than %d decimal places for %s", v, scale, a.Currency), "amount.value"
	}
	frac += strings.Repeat("0", scale-len(frac))
	n, err := strconv.ParseInt(intPart+frac, 10, 64)
	if err != nil || n <= 0 {
		return 0, 0, fmt.Sprintf("Amount value %q must be positive", v), "amount.value"
	}
	return n, scale, "", ""
}

// ykFormatAmount renders minor units with scale decimal places.
func ykFormatAmount(minor int64, scale int, cur string) yooKassaAmount {
	s := strconv.FormatInt(minor, 10)
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	return yooKassaAmount{Value: s, Currency: cur}
}

func (y *YooKassaHandler) checkMetadata(c *call, md map[string]string) *response {
	if len(md) > ykMaxMetadataKeys {
		return y.invalid(c, "metadata", fmt.Sprintf("Metadata can have at most %d keys", ykMaxMetadataKeys))
	}
	for k, v := range md {
		if utf8.RuneCountInString(k) > ykMaxMetadataKeyLen {
			return y.invalid(c, "metadata", fmt.Sprintf("Metadata key %q is longer than %d characters", k, ykMaxMetadataKeyLen))
		}
		if utf8.RuneCountInString(v) > ykMaxMetadataValueLen {
			return y.invalid(c, "metadata", fmt.Sprintf("Metadata value of %q is longer than %d characters", k, ykMaxMetadataValueLen))
		}
	}
	return nil
}

// createPayment is POST /v3/payments with a saved payment method.
func (y *YooKassaHandler) createPayment(c *call) (*response, bool) {
	var req ykCreatePaymentRequest
	if r := y.keyedBody(c, &req); r != nil {
		return r, false
	}
	amount, scale, desc, param := ykParseAmount(req.Amount)
	if desc != "" {
		return y.invalid(c, param, desc), false
	}
	if utf8.RuneCountInString(req.Description) > ykMaxPaymentDescription {
		return y.invalid(c, "description", fmt.Sprintf("Description is longer than %d characters", ykMaxPaymentDescription)), false
	}
	if r := y.checkMetadata(c, req.Metadata); r != nil {
		return r, false
	}
	if req.PaymentMethodID == "" {
		return y.invalid(c, "payment_method_id",
			"The fake accepts server-side payments with a saved payment method only: set payment_method_id"), false
	}
	m, ok := lookupYKMethod(req.PaymentMethodID)
	if !ok {
		return y.invalid(c, "payment_method_id", fmt.Sprintf("Saved payment method %s not found", req.PaymentMethodID)), false
	}
	capture := req.Capture != nil && *req.Capture

	y.mu.Lock()
	defer y.mu.Unlock()
	p := &ykPayment{stored: y.stamp(c), method: req.PaymentMethodID,
		requested: amount, amount: amount, scale: scale}
	p.p = yooKassaPayment{
		ID:            ykUUID(y.core.ids, "5000", "9000"),
		Amount:        ykFormatAmount(amount, scale, req.Amount.Currency),
		Description:   req.Description,
		PaymentMethod: &yooKassaPaymentMethod{Type: "bank_card", ID: req.PaymentMethodID, Saved: true, Title: m.title},
		CreatedAt:     ykTime(c.now),
		Test:          true,
		Metadata:      cloneMap(req.Metadata),
	}
	if len(req.Metadata) == 0 {
		p.p.Metadata = nil
	}
	switch {
	case m.confirmation:
		p.p.Status = "pending"
		p.p.Confirmation = &yooKassaConfirmation{Type: "redirect", ConfirmationURL: ykConfirmationURLPattern + p.p.ID}
	case m.party != "":
		p.p.Status = "canceled"
		p.p.CancellationDetails = &yooKassaCancellationDetails{Party: m.party, Reason: m.reason}
	default:
		p.authorized = true
		p.p.Paid = true
		if capture {
			p.p.Status = "succeeded"
			p.p.CapturedAt = ykTime(c.now)
			p.p.Refundable = true
			p.p.RefundedAmount = ptr(ykFormatAmount(0, scale, req.Amount.Currency))
		} else {
			p.p.Status = "waiting_for_capture"
			p.p.ExpiresAt = ykTime(c.now.Add(ykAuthorizationLifetime))
		}
	}
	y.payments[p.p.ID] = p
	y.paymentList = append(y.paymentList, p)
	y.emitPaymentLocked(p)
	return y.jsonResponse(http.StatusOK, p.p), true
}

func ptr[T any](v T) *T { return &v }

// getPayment is GET /v3/payments/{id}.
func (y *YooKassaHandler) getPayment(c *call) (*response, bool) {
	return y.withPayment(c, func(p *ykPayment) (*response, bool) {
		return y.jsonResponse(http.StatusOK, p.p), true
	})
}

// withPayment runs fn on the payment of a {id} route under the lock, or
// answers 404.
func (y *YooKassaHandler) withPayment(c *call, fn func(p *ykPayment) (*response, bool)) (*response, bool) {
	missing := func(id string) *response { return y.notFound(c, "Payment", id) }
	return withObject(&y.mu, y.payments, c, missing, fn)
}

func (p *ykPayment) order() (created, seq int64) { return p.createdAt.UnixNano(), p.seq }

// capturePayment is POST /v3/payments/{id}/capture: all of the authorized
// amount, or less.
func (y *YooKassaHandler) capturePayment(c *call) (*response, bool) {
	var req ykCaptureRequest
	if r := y.keyedBody(c, &req); r != nil {
		return r, false
	}
	var amount int64
	if req.Amount != nil {
		a, _, desc, param := ykParseAmount(req.Amount)
		if desc != "" {
			return y.invalid(c, param, desc), false
		}
		amount = a
	}
	return y.withPayment(c, func(p *ykPayment) (*response, bool) {
		if p.p.Status != "waiting_for_capture" {
			return y.invalid(c, "", fmt.Sprintf("Payment has status %s; only a payment with status waiting_for_capture can be captured", p.p.Status)), true
		}
		if req.Amount != nil {
			if req.Amount.Currency != p.p.Amount.Currency {
				return y.invalid(c, "amount.currency", "Capture currency differs from the payment's"), true
			}
			if amount > p.amount {
				return y.invalid(c, "amount.value", "Capture amount is greater than the authorized amount"), true
			}
			p.amount = amount
		}
		p.p.Amount = ykFormatAmount(p.amount, p.scale, p.p.Amount.Currency)
		p.p.Status = "succeeded"
		p.p.CapturedAt = ykTime(c.now)
		p.p.ExpiresAt = ""
		p.p.Refundable = true
		p.p.RefundedAmount = ptr(ykFormatAmount(0, p.scale, p.p.Amount.Currency))
		y.emitPaymentLocked(p)
		return y.jsonResponse(http.StatusOK, p.p), true
	})
}

// cancelPayment is POST /v3/payments/{id}/cancel.
func (y *YooKassaHandler) cancelPayment(c *call) (*response, bool) {
	var req struct{}
	if r := y.keyedBody(c, &req); r != nil {
		return r, false
	}
	return y.withPayment(c, func(p *ykPayment) (*response, bool) {
		if p.p.Status != "waiting_for_capture" {
			return y.invalid(c, "", fmt.Sprintf("Payment has status %s; only a payment with status waiting_for_capture can be canceled", p.p.Status)), true
		}
		p.p.Status = "canceled"
		p.p.Paid = false
		p.p.ExpiresAt = ""
		p.p.CancellationDetails = &yooKassaCancellationDetails{Party: "merchant", Reason: "canceled_by_merchant"}
		y.emitPaymentLocked(p)
		return y.jsonResponse(http.StatusOK, p.p), true
	})
}

// ykListQuery is a list request: created_at filters, status, limit, cursor.
type ykListQuery struct {
	gte, gt, lte, lt time.Time
	status           string
	paymentID        string
	limit            int
	cursor           int64 // seq after which the page starts, 0 for the first
}

func (q ykListQuery) matches(created time.Time, status string) bool {
	return (q.gte.IsZero() || !created.Before(q.gte)) && (q.gt.IsZero() || created.After(q.gt)) &&
		(q.lte.IsZero() || !created.After(q.lte)) && (q.lt.IsZero() || created.Before(q.lt)) &&
		(q.status == "" || status == q.status)
}

func (y *YooKassaHandler) listQuery(c *call, extra ...string) (ykListQuery, *response) {
	q := ykListQuery{limit: ykDefaultListLimit}
	allowed := append([]string{"created_at.gte", "created_at.gt", "created_at.lte", "created_at.lt", "status", "limit", "cursor"}, extra...)
	for name := range c.query {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			return q, y.invalid(c, name, fmt.Sprintf("Unknown parameter %s", name))
		}
	}
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{"created_at.gte", &q.gte}, {"created_at.gt", &q.gt}, {"created_at.lte", &q.lte}, {"created_at.lt", &q.lt}} {
		if v := c.query.Get(f.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return q, y.invalid(c, f.name, fmt.Sprintf("%s must be a date and time in ISO 8601 format, e.g. 2018-07-18T10:51:18.139Z", f.name))
			}
			*f.t = t
		}
	}
	q.status = c.query.Get("status")
	q.paymentID = c.query.Get("payment_id")
	if v := c.query.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ykMaxListLimit {
			return q, y.invalid(c, "limit", fmt.Sprintf("limit must be between 1 and %d", ykMaxListLimit))
		}
		q.limit = n
	}
	if v := c.query.Get("cursor"); v != "" {
		raw, err := base64.RawURLEncoding.DecodeString(v)
		n, err2 := strconv.ParseInt(strings.TrimPrefix(string(raw), "c"), 10, 64)
		if err != nil || err2 != nil || !strings.HasPrefix(string(raw), "c") || n <= 0 {
			return q, y.invalid(c, "cursor", "Invalid cursor")
		}
		q.cursor = n
	}
	return q, nil
}

func ykCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("c" + strconv.FormatInt(seq, 10)))
}

// ykPage cuts one page out of items sorted newest first; seq identifies an
// item for the cursor.
func ykPage[T any](items []T, seq func(T) int64, q ykListQuery) (page []T, next string) {
	start := 0
	if q.cursor != 0 {
		start = len(items)
		for i, it := range items {
			if seq(it) == q.cursor {
				start = i + 1
				break
			}
		}
	}
	end := min(start+q.limit, len(items))
	page = items[start:end]
	if end < len(items) && len(page) > 0 {
		next = ykCursor(seq(page[len(page)-1]))
	}
	return page, next
}

// listPayments is GET /v3/payments, newest first.
func (y *YooKassaHandler) listPayments(c *call) (*response, bool) {
	q, r := y.listQuery(c, "payment_method")
	if r != nil {
		return r, false
	}
	method := c.query.Get("payment_method")
	y.mu.Lock()
	defer y.mu.Unlock()
	all := newestFirst(y.paymentList, func(p *ykPayment) bool {
		return q.matches(p.createdAt, p.p.Status) && (method == "" || method == p.p.PaymentMethod.Type)
	})
	return y.jsonResponse(http.StatusOK, ykList(all, q, func(p *ykPayment) yooKassaPayment { return p.p })), true
}

// ykList is the page q asks for of all (newest first), rendered by object.
func ykList[R ordered, T any](all []R, q ykListQuery, object func(R) T) yooKassaList[T] {
	page, next := ykPage(all, func(r R) int64 {
		_, seq := r.order()
		return seq
	}, q)
	out := yooKassaList[T]{Type: "list", Items: make([]T, 0, len(page)), NextCursor: next}
	for _, r := range page {
		out.Items = append(out.Items, object(r))
	}
	return out
}
