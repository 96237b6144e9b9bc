package mocks

import (
	"net/http"
	"time"
)

// Payments v2: authorizations (GET, capture, void), captures (GET,
// refund), refunds (GET) (payments_payment_v2.json).

type ppCaptureRequest struct {
	Amount             *ppMoney       `json:"amount"`
	InvoiceID          string         `json:"invoice_id"`
	FinalCapture       *bool          `json:"final_capture"`
	NoteToPayer        string         `json:"note_to_payer"`
	SoftDescriptor     string         `json:"soft_descriptor"`
	PaymentInstruction map[string]any `json:"payment_instruction"`
}

type ppRefundRequest struct {
	Amount             *ppMoney       `json:"amount"`
	CustomID           string         `json:"custom_id"`
	InvoiceID          string         `json:"invoice_id"`
	NoteToPayer        string         `json:"note_to_payer"`
	PaymentInstruction map[string]any `json:"payment_instruction"`
}

// paymentAnswerLocked renders a payment object for c with status and sets
// what a repeat of c's PayPal-Request-Id answers: the object's latest
// status with the same status code (the Payments API documents no 200 for
// a repeat, unlike Orders). view renders the object under h.mu. minimal is
// PayPal's default answer, {id, status, links}.
func (h *PayPalHandler) paymentAnswerLocked(c *call, status int, view func() (id, st string, full any, links []ppLink)) *response {
	minimal := ppMinimal(c)
	render := func() *response {
		id, st, full, links := view()
		if minimal {
			return h.jsonResponse(status, paypalMinimal{ID: id, Status: st, Links: links})
		}
		return h.jsonResponse(status, full)
	}
	r := render()
	r.latest = func() *response {
		h.mu.Lock()
		defer h.mu.Unlock()
		return render()
	}
	return r
}

func (h *PayPalHandler) authView(a *ppAuth) func() (string, string, any, []ppLink) {
	return func() (string, string, any, []ppLink) { v := a.view(); return v.ID, v.Status, v, v.Links }
}

func (h *PayPalHandler) captureView(p *ppCapture) func() (string, string, any, []ppLink) {
	return func() (string, string, any, []ppLink) { v := p.view(); return v.ID, v.Status, v, v.Links }
}

func (h *PayPalHandler) refundView(r *ppRefund) func() (string, string, any, []ppLink) {
	return func() (string, string, any, []ppLink) { v := r.view(); return v.ID, v.Status, v, v.Links }
}

// getAuthorization is GET /v2/payments/authorizations/{id}.
func (h *PayPalHandler) getAuthorization(c *call) (*response, bool) {
	return withObject(&h.mu, h.auths, c, func(string) *response { return h.notFound(c) }, func(a *ppAuth) (*response, bool) {
		return h.jsonResponse(http.StatusOK, a.view()), true
	})
}

// getCapture is GET /v2/payments/captures/{id}.
func (h *PayPalHandler) getCapture(c *call) (*response, bool) {
	return withObject(&h.mu, h.captures, c, func(string) *response { return h.notFound(c) }, func(p *ppCapture) (*response, bool) {
		return h.jsonResponse(http.StatusOK, p.view()), true
	})
}

// getRefund is GET /v2/payments/refunds/{id}.
func (h *PayPalHandler) getRefund(c *call) (*response, bool) {
	return withObject(&h.mu, h.refunds, c, func(string) *response { return h.notFound(c) }, func(r *ppRefund) (*response, bool) {
		return h.jsonResponse(http.StatusOK, r.view()), true
	})
}

// captureAuthorization is POST /v2/payments/authorizations/{id}/capture:
// all that remains of the authorization (no amount) or part of it; with
// final_capture (the default here, as the adapter sends it) the rest is
// released.
func (h *PayPalHandler) captureAuthorization(c *call) (*response, bool) {
	var req ppCaptureRequest
	if r := h.decodeBody(c, &req); r != nil {
		return r, false
	}
	var amount int64
	if req.Amount != nil {
		n, issue := ppParseMoney(*req.Amount)
		if issue != "" {
			return h.invalid(c, "/amount/value", issue, "The amount is not valid: "+issue), false
		}
		amount = n
	}
	if len(c.key) > paypalMaxKeyLength || len(req.InvoiceID) > 127 {
		return h.invalid(c, "", "INVALID_STRING_MAX_LENGTH", "PayPal-Request-Id is at most 108 characters, invoice_id 127."), false
	}
	return withObject(&h.mu, h.auths, c, func(string) *response { return h.notFound(c) }, func(a *ppAuth) (*response, bool) {
		switch a.status {
		case "VOIDED":
			return h.unprocessable(c, "AUTHORIZATION_VOIDED", "A voided authorization cannot be captured or reauthorized."), true
		case "CAPTURED":
			return h.unprocessable(c, "AUTHORIZATION_ALREADY_CAPTURED", "Authorization has previously been captured."), true
		case "DENIED":
			return h.unprocessable(c, "AUTHORIZATION_DENIED", "An denied authorization cannot be captured."), true
		case "PENDING":
			return h.unprocessable(c, "PENDING_CAPTURE", "Authorization is pending and cannot be captured yet."), true
		}
		if req.Amount != nil && req.Amount.CurrencyCode != a.currency {
			return h.unprocessable(c, "AUTH_CAPTURE_CURRENCY_MISMATCH", "Currency of capture must be the same as currency of authorization."), true
		}
		remaining := a.amount - a.captured
		if req.Amount == nil {
			amount = remaining
		}
		if amount > remaining {
			// PayPal may allow up to 115% on accounts approved for it; the
			// fake allows none.
			return h.unprocessable(c, "MAX_CAPTURE_AMOUNT_EXCEEDED", "Capture amount exceeds allowable limit."), true
		}
		if r := h.duplicateInvoiceLocked(c, req.InvoiceID, a.order.id); r != nil {
			return r, true
		}
		final := req.FinalCapture == nil || *req.FinalCapture
		p := &ppCapture{stored: h.stamp(c), id: ppUpperID(h.core.ids, 17), status: "COMPLETED", amount: amount, currency: a.currency,
			customID: a.customID, invoiceID: req.InvoiceID, final: final, order: a.order, auth: a, updated: c.now, authorized: true}
		a.captures = append(a.captures, p)
		a.captured += amount
		a.status, a.updated = "PARTIALLY_CAPTURED", c.now
		if final || a.captured == a.amount {
			a.status = "CAPTURED"
		}
		h.captures[p.id] = p
		if req.InvoiceID != "" {
			h.invoices[req.InvoiceID] = a.order.id
		}
		h.txnLocked(ppTxn{id: p.id, refID: a.id, eventCode: ppEventCheckout, amount: p.amount, currency: p.currency, status: "S",
			customField: p.customID, invoice: p.invoiceID, at: c.now})
		h.emitLocked(c.now, "PAYMENT.CAPTURE.COMPLETED", "capture", p.view())
		return h.paymentAnswerLocked(c, http.StatusCreated, h.captureView(p)), true
	})
}

// voidAuthorization is POST /v2/payments/authorizations/{id}/void: 204 No
// Content, or 200 with the authorization under Prefer:
// return=representation (payments_payment_v2.json). Its order becomes
// VOIDED.
func (h *PayPalHandler) voidAuthorization(c *call) (*response, bool) {
	var req struct{}
	if r := h.decodeBody(c, &req); r != nil {
		return r, false
	}
	return withObject(&h.mu, h.auths, c, func(string) *response { return h.notFound(c) }, func(a *ppAuth) (*response, bool) {
		switch a.status {
		case "VOIDED":
			return h.unprocessable(c, "PREVIOUSLY_VOIDED", "Authorization has been previously voided and hence cannot be voided again."), true
		case "CAPTURED", "PARTIALLY_CAPTURED":
			return h.unprocessable(c, "PREVIOUSLY_CAPTURED", "Authorization has been previously captured and hence cannot be voided."), true
		case "DENIED", "PENDING":
			return h.unprocessable(c, "CANNOT_BE_VOIDED", "A reauthorization cannot be voided. Please void the original parent authorization."), true
		}
		a.status, a.updated = "VOIDED", c.now
		if a.order.status == "COMPLETED" {
			a.order.status, a.order.updated = "VOIDED", c.now
		}
		h.txnLocked(ppTxn{id: ppUpperID(h.core.ids, 17), refID: a.id, eventCode: ppEventVoid, amount: -a.amount, currency: a.currency,
			status: "S", customField: a.customID, invoice: a.invoiceID, at: c.now})
		h.emitLocked(c.now, "PAYMENT.AUTHORIZATION.VOIDED", "authorization", a.view())
		if ppMinimal(c) {
			r := &response{status: http.StatusNoContent, header: http.Header{}}
			r.latest = func() *response { return &response{status: http.StatusNoContent, header: http.Header{}} }
			return r, true
		}
		return h.paymentAnswerLocked(c, http.StatusOK, h.authView(a)), true
	})
}

// refundCapture is POST /v2/payments/captures/{id}/refund: all that was
// not yet refunded (no amount) or part of it.
func (h *PayPalHandler) refundCapture(c *call) (*response, bool) {
	var req ppRefundRequest
	if r := h.decodeBody(c, &req); r != nil {
		return r, false
	}
	var amount int64
	if req.Amount != nil {
		n, issue := ppParseMoney(*req.Amount)
		if issue != "" {
			return h.invalid(c, "/amount/value", issue, "The amount is not valid: "+issue), false
		}
		amount = n
	}
	if len(c.key) > paypalMaxKeyLength || len(req.InvoiceID) > 127 || len(req.CustomID) > 127 {
		return h.invalid(c, "", "INVALID_STRING_MAX_LENGTH", "PayPal-Request-Id is at most 108 characters, invoice_id and custom_id 127."), false
	}
	return withObject(&h.mu, h.captures, c, func(string) *response { return h.notFound(c) }, func(p *ppCapture) (*response, bool) {
		switch p.status {
		case "REFUNDED":
			return h.unprocessable(c, "CAPTURE_FULLY_REFUNDED", "The capture has already been fully refunded"), true
		case "COMPLETED", "PARTIALLY_REFUNDED":
		default:
			return h.unprocessable(c, "REFUND_NOT_ALLOWED", "Capture cannot be refunded."), true
		}
		if req.Amount != nil && req.Amount.CurrencyCode != p.currency {
			return h.unprocessable(c, "REFUND_CAPTURE_CURRENCY_MISMATCH", "Refund must be in the same currency as the capture"), true
		}
		remaining := p.amount - p.refunded()
		if req.Amount == nil {
			amount = remaining
		}
		if amount > remaining {
			return h.unprocessable(c, "REFUND_AMOUNT_EXCEEDED",
				"The refund amount must be less than or equal to the capture amount that has not yet been refunded."), true
		}
		rf := &ppRefund{stored: h.stamp(c), id: ppUpperID(h.core.ids, 17), status: "COMPLETED", amount: amount, currency: p.currency,
			customID: req.CustomID, invoiceID: req.InvoiceID, note: req.NoteToPayer, capture: p, updated: c.now}
		if h.vaultOf(p).refundDecline {
			rf.status = "FAILED"
		}
		h.addRefundLocked(rf)
		if rf.status == "COMPLETED" {
			h.settleRefundLocked(rf, c.now)
		}
		return h.paymentAnswerLocked(c, http.StatusCreated, h.refundView(rf)), true
	})
}

func (h *PayPalHandler) vaultOf(p *ppCapture) ppVault { return p.order.vault }

func (h *PayPalHandler) addRefundLocked(rf *ppRefund) {
	p := rf.capture
	p.refunds = append(p.refunds, rf)
	h.refunds[rf.id] = rf
	h.refundList = append(h.refundList, rf)
}

// settleRefundLocked counts a COMPLETED refund in its capture's status and
// reports it. h.mu must be held.
func (h *PayPalHandler) settleRefundLocked(rf *ppRefund, now time.Time) {
	p := rf.capture
	p.status, p.updated = "PARTIALLY_REFUNDED", now
	if p.settledRefunds() >= p.amount {
		p.status = "REFUNDED"
	}
	h.txnLocked(ppTxn{id: rf.id, refID: p.id, eventCode: ppEventRefund, amount: -rf.amount, currency: rf.currency, status: "S",
		customField: rf.customID, invoice: rf.invoiceID, at: now})
	h.emitLocked(now, "PAYMENT.CAPTURE.REFUNDED", "refund", rf.view())
}
