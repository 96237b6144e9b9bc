package mocks

import (
	"fmt"
	"strings"
	"time"
)

// This file is the PayPal fake's truth, and what tests change out of band:
// what happens at PayPal without a request of a payonce client (a payment
// made by another integration or under an earlier request id, a refund
// that fails later, a capture PayPal reverses, a pending payment that
// settles). Audits must find each.

// truthRecords writes the order payment objects and the refunds into a
// Truth (see PayPalHandler).
func (h *PayPalHandler) truthRecords(t *Truth) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range h.orderList {
		md := map[string]string{"custom_id": o.customID, "invoice_id": o.invoiceID, "order_id": o.id}
		tp := TruthPayment{ID: o.id, Status: o.status, Amount: o.amount, Currency: o.currency, Metadata: md,
			Reference: o.customID, IdempotencyKey: o.key, Created: o.createdAt, Injected: o.injected}
		switch {
		case o.auth != nil:
			a := o.auth
			tp.ID, tp.Status, tp.Authorized, tp.IdempotencyKey, tp.Created = a.id, a.status, a.authorized, a.key, a.createdAt
			for _, p := range a.captures {
				tp.AmountCaptured += p.capturedAmount()
				tp.AmountRefunded += p.settledRefunds()
			}
		case o.capture != nil:
			p := o.capture
			tp.ID, tp.Status, tp.Authorized, tp.IdempotencyKey, tp.Created = p.id, p.status, p.authorized, p.key, p.createdAt
			tp.AmountCaptured, tp.AmountRefunded = p.capturedAmount(), p.settledRefunds()
		}
		t.Payments = append(t.Payments, tp)
	}
	for _, r := range h.refundList {
		status := map[string]string{"COMPLETED": "succeeded", "PENDING": "pending"}[r.status]
		if status == "" {
			status = "failed"
		}
		t.Refunds = append(t.Refunds, TruthRefund{ID: r.id, PaymentID: r.capture.id, Status: status, Amount: r.amount,
			Currency: r.currency, Metadata: map[string]string{"custom_id": r.customID, "invoice_id": r.invoiceID},
			Reference: r.customID, Description: r.note, IdempotencyKey: r.key, Created: r.createdAt, Injected: r.injected})
	}
}

// PayPalPaymentSpec is a completed order InjectPayment makes.
type PayPalPaymentSpec struct {
	// Intent is "CAPTURE" (the default: a COMPLETED capture) or
	// "AUTHORIZE" (a CREATED authorization).
	Intent string
	// Amount (ISO 4217 minor units, whole in PayPal's exponent: a
	// multiple of 100 for HUF and TWD) and Currency (one PayPal takes).
	// Required.
	Amount   int64
	Currency string
	// CustomID and InvoiceID are the purchase unit's (the adapter writes
	// the operation id and the key there).
	CustomID, InvoiceID string
	// RequestID, when set, is the PayPal-Request-Id the order was made
	// under: the payment is what a client's request with that id made
	// (e.g. an earlier key generation that got through after all), and it
	// counts in Truth like any other. Empty makes a payment no client
	// made (another integration, the PayPal dashboard): Truth marks it
	// Injected.
	RequestID string
	// Created is its creation time; zero means the fake's clock.
	Created time.Time
}

// InjectPayment makes a completed order paid with PayPalVaultApproved, as
// spec says, without any request, and returns the order id and its
// payment object's id (the capture or the authorization). It emits the
// events a request would. The duplicate-invoice guard does not apply: the
// point is to make what it would have refused.
func (h *PayPalHandler) InjectPayment(spec PayPalPaymentSpec) (orderID, paymentID string, err error) {
	intent := orDefault(spec.Intent, "CAPTURE")
	if intent != "CAPTURE" && intent != "AUTHORIZE" {
		return "", "", fmt.Errorf("mocks: InjectPayment: Intent %q is not CAPTURE or AUTHORIZE", spec.Intent)
	}
	if why := ppCheckMinor(spec.Amount, spec.Currency); why != "" {
		return "", "", fmt.Errorf("mocks: InjectPayment: %s", why)
	}
	now := spec.Created
	if now.IsZero() {
		now = h.core.now()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := &call{key: spec.RequestID, now: now}
	o := &ppOrder{stored: h.stamp(c), id: ppUpperID(h.core.ids, 17), intent: intent, status: "CREATED", amount: spec.Amount,
		currency: spec.Currency, customID: spec.CustomID, invoiceID: spec.InvoiceID, unitRef: "default", source: "card",
		vaultID: strings.TrimPrefix(PayPalVaultApproved, "card:"), updated: now, injected: spec.RequestID == ""}
	h.addOrderLocked(o)
	h.completeOrderLocked(c, o)
	if o.auth != nil {
		o.auth.injected = o.injected
		return o.id, o.auth.id, nil
	}
	o.capture.injected = o.injected
	return o.id, o.capture.id, nil
}

// FailRefund makes a COMPLETED refund FAILED, as when the payer's account
// cannot take it back days later; its capture counts the amount again
// (COMPLETED or PARTIALLY_REFUNDED). No event is sent: the fake emits none
// for a refund's failure, so a client hears of it only by reading the
// refund or in transaction search.
func (h *PayPalHandler) FailRefund(refundID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rf, ok := h.refunds[refundID]
	switch {
	case !ok:
		return fmt.Errorf("mocks: FailRefund: no refund %s; pass the id a refund answered", refundID)
	case rf.status != "COMPLETED":
		return fmt.Errorf("mocks: FailRefund: refund %s is %s; only a COMPLETED refund fails later", refundID, rf.status)
	}
	now := h.core.now()
	rf.status, rf.updated = "FAILED", now
	p := rf.capture
	p.updated = now
	switch n := p.settledRefunds(); {
	case n == 0:
		p.status = "COMPLETED"
	case n < p.amount:
		p.status = "PARTIALLY_REFUNDED"
	}
	h.txns = append(h.txns, &ppTxn{id: ppUpperID(h.core.ids, 17), refID: rf.id, eventCode: ppEventRefund, amount: rf.amount,
		currency: rf.currency, status: "V", customField: rf.customID, invoice: rf.invoiceID, at: now})
	return nil
}

// ReverseCapture reverses what remains of a COMPLETED or
// PARTIALLY_REFUNDED capture, as PayPal does after a payer's dispute or a
// bank's return: a reversal (a refund PayPal made, note "Payment
// reversed") takes the money back, the capture becomes REFUNDED, and
// PAYMENT.CAPTURE.REVERSED is emitted with the reversal as its resource.
// The reversal is in Truth's Refunds marked Injected. It returns the
// reversal's id.
func (h *PayPalHandler) ReverseCapture(captureID string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.captures[captureID]
	if !ok || (p.status != "COMPLETED" && p.status != "PARTIALLY_REFUNDED") {
		return "", fmt.Errorf("mocks: ReverseCapture: no COMPLETED capture %s; pass the id of a capture that took money", captureID)
	}
	now := h.core.now()
	h.seq++ // numbered like every object, so an order lists it in the order it happened
	rf := &ppRefund{stored: stored{seq: h.seq, createdAt: now}, id: ppUpperID(h.core.ids, 17), status: "COMPLETED",
		amount: p.amount - p.refunded(), currency: p.currency, note: "Payment reversed", capture: p, updated: now, injected: true}
	h.addRefundLocked(rf)
	p.status, p.updated = "REFUNDED", now
	h.txns = append(h.txns, &ppTxn{id: rf.id, refID: p.id, eventCode: ppEventReversal, amount: -rf.amount, currency: rf.currency,
		status: "S", customField: p.customID, invoice: p.invoiceID, at: now})
	h.emitLocked(now, "PAYMENT.CAPTURE.REVERSED", "refund", rf.view())
	return rf.id, nil
}

// CompletePending settles a PENDING capture (COMPLETED,
// PAYMENT.CAPTURE.COMPLETED) or a PENDING authorization (CREATED,
// PAYMENT.AUTHORIZATION.CREATED), as PayPal does once its review passes.
func (h *PayPalHandler) CompletePending(id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.core.now()
	if p, ok := h.captures[id]; ok && p.status == "PENDING" {
		p.status, p.reason, p.updated = "COMPLETED", "", now
		h.txns = append(h.txns, &ppTxn{id: p.id, eventCode: ppEventCheckout, amount: p.amount, currency: p.currency, status: "S",
			customField: p.customID, invoice: p.invoiceID, at: now})
		h.emitLocked(now, "PAYMENT.CAPTURE.COMPLETED", "capture", p.view())
		return nil
	}
	if a, ok := h.auths[id]; ok && a.status == "PENDING" {
		a.status, a.reason, a.updated = "CREATED", "", now
		h.emitLocked(now, "PAYMENT.AUTHORIZATION.CREATED", "authorization", a.view())
		return nil
	}
	return fmt.Errorf("mocks: CompletePending: no PENDING capture or authorization %s (pay with PayPalVaultPending)", id)
}

// DenyPending declines a PENDING capture, as PayPal does when its review
// fails: status DECLINED, no money moved, PAYMENT.CAPTURE.DENIED.
func (h *PayPalHandler) DenyPending(captureID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.captures[captureID]
	if !ok || p.status != "PENDING" {
		return fmt.Errorf("mocks: DenyPending: no PENDING capture %s (pay with PayPalVaultPending)", captureID)
	}
	now := h.core.now()
	p.status, p.reason, p.updated, p.authorized = "DECLINED", "", now, false
	h.emitLocked(now, "PAYMENT.CAPTURE.DENIED", "capture", p.view())
	return nil
}
