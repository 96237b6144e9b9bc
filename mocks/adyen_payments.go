package mocks

import "net/http"

type adyPaymentRequest struct {
	Amount        *adyenAmount `json:"amount"`
	Reference     string       `json:"reference"`
	Merchant      string       `json:"merchantAccount"`
	PaymentMethod *struct {
		Type                  string `json:"type"`
		StoredPaymentMethodID string `json:"storedPaymentMethodId"`
	} `json:"paymentMethod"`
	ShopperReference         string            `json:"shopperReference"`
	ShopperInteraction       string            `json:"shopperInteraction"`
	RecurringProcessingModel string            `json:"recurringProcessingModel"`
	ReturnURL                string            `json:"returnUrl"`
	AdditionalData           map[string]string `json:"additionalData"`
	Metadata                 map[string]string `json:"metadata"`
}

// adyenAmount is Adyen's Amount: a value in minor units and its currency.
type adyenAmount struct {
	Currency string `json:"currency"`
	Value    int64  `json:"value"`
}

type adyModificationRequest struct {
	Merchant  string       `json:"merchantAccount"`
	Amount    *adyenAmount `json:"amount"`
	Reference string       `json:"reference"`
}

// adyPaymentResponse is the answer to POST /payments.
type adyPaymentResponse struct {
	PspReference      string       `json:"pspReference,omitempty"`
	ResultCode        string       `json:"resultCode"`
	MerchantReference string       `json:"merchantReference"`
	Amount            *adyenAmount `json:"amount,omitempty"`
	RefusalReason     string       `json:"refusalReason,omitempty"`
	RefusalReasonCode string       `json:"refusalReasonCode,omitempty"`
	Action            any          `json:"action,omitempty"`
}

// adyModificationResponse is the 201 answer to a modification.
type adyModificationResponse struct {
	MerchantAccount     string       `json:"merchantAccount"`
	Amount              *adyenAmount `json:"amount,omitempty"`
	PaymentPspReference string       `json:"paymentPspReference"`
	PspReference        string       `json:"pspReference"`
	Reference           string       `json:"reference,omitempty"`
	Status              string       `json:"status"`
}

// createPayment is POST /payments with a stored payment method: the
// outcome is in the answer (Authorised, Refused, Received, RedirectShopper)
// and, but for a redirect, in an AUTHORISATION webhook.
func (h *AdyenHandler) createPayment(c *call) (*response, bool) {
	var req adyPaymentRequest
	if decodeStrict(c.body, &req) != nil {
		return h.malformed(c, nil), false
	}
	switch {
	case !h.merchants[req.Merchant]:
		return h.errorResponse(c, http.StatusForbidden, "901", "security", "Invalid Merchant Account"), false
	case req.ReturnURL == "":
		// v71 requires returnUrl (PaymentRequest.required in
		// CheckoutService-v71.json); Adyen's answer without it:
		// {"status":422,"errorCode":"14_030","message":"Required field
		// 'returnUrl' is not provided.","errorType":"validation"}
		// (Adyen/adyen-web#2244).
		return h.errorResponse(c, http.StatusUnprocessableEntity, "14_030", "validation", "Required field 'returnUrl' is not provided."), false
	case req.Amount == nil || req.Amount.Value <= 0 || !validCurrency(req.Amount.Currency):
		return h.errorResponse(c, http.StatusUnprocessableEntity, "137", "validation", "Invalid amount specified"), false
	case req.Reference == "" || len(req.Reference) > 80:
		return h.errorResponse(c, http.StatusUnprocessableEntity, "130", "validation", "Required field 'reference' is not provided."), false
	case req.PaymentMethod == nil || req.PaymentMethod.StoredPaymentMethodID == "":
		return h.errorResponse(c, http.StatusUnprocessableEntity, "14_003", "validation", "Missing payment method details"), false
	case len(req.ShopperReference) < 3:
		return h.errorResponse(c, http.StatusUnprocessableEntity, "800", "validation", "Contract not found"), false
	case len(req.Metadata) > 20:
		return h.errorResponse(c, http.StatusUnprocessableEntity, "177", "validation", "Metadata size exceeds limit"), false
	}
	p := &adyPaymentRequestResult{}
	switch req.PaymentMethod.StoredPaymentMethodID {
	case AdyenMethodAuthorised:
		p.result, p.authorised = "Authorised", true
	case AdyenMethodPending:
		p.result, p.authorised = "Received", true
	case AdyenMethodRefused:
		p.result, p.reason, p.code = "Refused", "Refused", "2"
	case AdyenMethodNotEnoughBalance:
		p.result, p.reason, p.code = "Refused", "Not enough balance", "12"
	case AdyenMethodRedirect:
		p.result = "RedirectShopper"
	default:
		return h.errorResponse(c, http.StatusUnprocessableEntity, "800", "validation", "Contract not found"), false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	pay := &adyPayment{stored: h.stamp(c), psp: adyPSP(h.core.ids), merchant: req.Merchant, reference: req.Reference, currency: req.Amount.Currency,
		method: req.PaymentMethod.StoredPaymentMethodID, result: p.result, amount: req.Amount.Value, authorised: p.authorised,
		manual: req.AdditionalData["manualCapture"] == "true", metadata: cloneMap(req.Metadata)}
	if pay.authorised && !pay.manual {
		pay.captured = pay.amount // immediate automatic capture
	}
	h.payments[pay.psp] = pay
	h.paymentList = append(h.paymentList, pay)
	amt := &adyenAmount{Currency: pay.currency, Value: pay.amount}
	resp := adyPaymentResponse{PspReference: pay.psp, ResultCode: p.result, MerchantReference: pay.reference, Amount: amt,
		RefusalReason: p.reason, RefusalReasonCode: p.code}
	if p.result == "RedirectShopper" {
		// "For payment methods that require a redirect or additional
		// action, you will get this value in the /payments/details
		// response": no pspReference yet.
		resp.PspReference, resp.Amount = "", nil
		resp.Action = map[string]string{"type": "redirect", "method": "GET", "url": "https://checkoutshopper-test.adyen.com/redirect"}
	} else {
		h.emitLocked(c.now, "AUTHORISATION", pay.psp, "", pay.reference, *amt, pay.authorised, p.reason)
	}
	return h.jsonResponse(http.StatusOK, resp), true
}

type adyPaymentRequestResult struct {
	result, reason, code string
	authorised           bool
}

func (h *AdyenHandler) capture(c *call) (*response, bool) { return h.modify(c, "capture") }
func (h *AdyenHandler) cancel(c *call) (*response, bool)  { return h.modify(c, "cancel") }
func (h *AdyenHandler) refund(c *call) (*response, bool)  { return h.modify(c, "refund") }

// modify is a capture, cancel or refund: 201 "received" for any
// well-formed request on a known payment, and the outcome (success true or
// false) in the CAPTURE, CANCELLATION or REFUND webhook, as at Adyen.
func (h *AdyenHandler) modify(c *call, kind string) (*response, bool) {
	var req adyModificationRequest
	if decodeStrict(c.body, &req) != nil {
		return h.malformed(c, nil), false
	}
	if !h.merchants[req.Merchant] {
		return h.errorResponse(c, http.StatusForbidden, "901", "security", "Invalid Merchant Account"), false
	}
	if kind == "cancel" {
		if req.Amount != nil {
			return h.malformed(c, nil), false
		}
	} else if req.Amount == nil || req.Amount.Value <= 0 || !validCurrency(req.Amount.Currency) {
		return h.errorResponse(c, http.StatusUnprocessableEntity, "137", "validation", "Invalid amount specified"), false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	pay, ok := h.payments[c.r.PathValue("id")]
	if !ok {
		return h.errorResponse(c, http.StatusUnprocessableEntity, "167", "validation", "Original pspReference required for this operation"), false
	}
	if req.Merchant != pay.merchant {
		// A payment is modified only by its own merchant account.
		return h.errorResponse(c, http.StatusForbidden, "901", "security", "Invalid Merchant Account"), false
	}
	if req.Amount != nil && req.Amount.Currency != pay.currency {
		return h.errorResponse(c, http.StatusUnprocessableEntity, "128", "validation", "Currency does not match original payment"), false
	}
	m := &adyModification{stored: h.stamp(c), psp: adyPSP(h.core.ids), payment: pay.psp, kind: kind, reference: req.Reference,
		currency: pay.currency, status: "received"}
	if req.Amount != nil {
		m.amount = req.Amount.Value
	}
	h.mods[m.psp] = m
	h.modList = append(h.modList, m)
	event, ok, reason := "", false, ""
	switch kind {
	case "capture":
		event = "CAPTURE"
		switch {
		case !pay.authorised || pay.cancelled:
			reason = "Payment is not authorised"
		case pay.captured+m.amount > pay.amount:
			reason = "Insufficient balance on payment"
		default:
			ok = true
			pay.captured += m.amount
		}
	case "cancel":
		event = "CANCELLATION"
		switch {
		case !pay.authorised || pay.cancelled:
			reason = "Payment is not authorised"
		case pay.captured > 0:
			reason = "Payment already captured"
		default:
			ok, pay.cancelled = true, true
		}
	case "refund":
		event = "REFUND"
		h.refunds = append(h.refunds, m)
		if pay.refunded+m.amount > pay.captured {
			reason = "Transaction hasn't been captured, refund not possible"
			if pay.captured > 0 {
				reason = "Insufficient balance on payment"
			}
		} else {
			ok = true
			pay.refunded += m.amount
		}
	}
	m.status = "failed"
	if ok {
		m.status = "succeeded"
	}
	h.emitLocked(c.now, event, m.psp, pay.psp, m.reference, adyenAmount{Currency: pay.currency, Value: m.amount}, ok, reason)
	resp := adyModificationResponse{MerchantAccount: pay.merchant, PaymentPspReference: pay.psp, PspReference: m.psp,
		Reference: m.reference, Status: "received"}
	if req.Amount != nil {
		resp.Amount = req.Amount
	}
	return h.jsonResponse(http.StatusCreated, resp), true
}
