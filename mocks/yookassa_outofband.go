package mocks

import (
	"fmt"
	"time"
)

// This file lets tests change the fake YooKassa out of band: what happens
// at YooKassa without any request of a payonce client (a payment made in
// the Merchant Profile or by another integration, a refund the bank turns
// down later, an authorization YooKassa releases when its capture period
// ends). Audits (payonce audit) must find each. Truth counts these objects
// like any other.

// YooKassaPaymentSpec is a payment to create out of band.
type YooKassaPaymentSpec struct {
	// Amount (minor units) and Currency (ISO 4217, upper case). Required.
	Amount   int64
	Currency string
	// Status is succeeded (the default), waiting_for_capture, pending or
	// canceled (a decline: general_decline by payment_network).
	Status string
	// Metadata is the payment's metadata, e.g. payonce_op naming an
	// operation of the ledger; nil for none.
	Metadata map[string]string
	// Created is its creation time; zero means the fake's clock.
	Created time.Time
}

// InjectPayment creates a payment that no client sent and returns its id.
// It emits the notification of its status, as YooKassa would.
func (y *YooKassaHandler) InjectPayment(s YooKassaPaymentSpec) (string, error) {
	scale, ok := ykCurrencyScale(s.Currency)
	if !ok || s.Amount <= 0 {
		return "", fmt.Errorf("mocks: InjectPayment: amount %d %q is not a positive amount in an ISO 4217 currency", s.Amount, s.Currency)
	}
	switch s.Status {
	case "":
		s.Status = "succeeded"
	case "succeeded", "waiting_for_capture", "pending", "canceled":
	default:
		return "", fmt.Errorf("mocks: InjectPayment: status %q is not succeeded, waiting_for_capture, pending or canceled", s.Status)
	}
	now := s.Created
	if now.IsZero() {
		now = y.core.now()
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	y.seq++
	p := &ykPayment{stored: stored{seq: y.seq, createdAt: now}, method: YooKassaMethodSucceeds,
		requested: s.Amount, amount: s.Amount, scale: scale}
	p.p = yooKassaPayment{
		ID:            ykUUID(y.core.ids, "5000", "9000"),
		Status:        s.Status,
		Amount:        ykFormatAmount(s.Amount, scale, s.Currency),
		PaymentMethod: &yooKassaPaymentMethod{Type: "bank_card", ID: YooKassaMethodSucceeds, Saved: true, Title: "Bank card *4444"},
		CreatedAt:     ykTime(now),
		Test:          true,
	}
	if len(s.Metadata) > 0 {
		p.p.Metadata = cloneMap(s.Metadata)
	}
	switch s.Status {
	case "succeeded":
		p.authorized, p.p.Paid, p.p.Refundable = true, true, true
		p.p.CapturedAt = ykTime(now)
		p.p.RefundedAmount = ptr(ykFormatAmount(0, scale, s.Currency))
	case "waiting_for_capture":
		p.authorized, p.p.Paid = true, true
		p.p.ExpiresAt = ykTime(now.Add(ykAuthorizationLifetime))
	case "canceled":
		p.p.CancellationDetails = &yooKassaCancellationDetails{Party: "payment_network", Reason: "general_decline"}
	}
	y.payments[p.p.ID] = p
	y.paymentList = append(y.paymentList, p)
	y.emitPaymentLocked(p)
	return p.p.ID, nil
}

// InjectRefund creates a succeeded refund of a succeeded payment that no
// client sent, with the given description (e.g. "payonce_op:<op>" to name
// an operation of the ledger, with an amount of its own), and returns its
// id. It emits refund.succeeded.
func (y *YooKassaHandler) InjectRefund(paymentID string, amount int64, description string) (string, error) {
	y.mu.Lock()
	defer y.mu.Unlock()
	p, ok := y.payments[paymentID]
	switch {
	case !ok:
		return "", fmt.Errorf("mocks: InjectRefund: no payment %s", paymentID)
	case p.p.Status != "succeeded":
		return "", fmt.Errorf("mocks: InjectRefund: payment %s is %s; only a succeeded payment is refunded", paymentID, p.p.Status)
	case amount <= 0 || amount > p.amount-p.refunded-p.refundPending:
		return "", fmt.Errorf("mocks: InjectRefund: amount %d is not within what remains of payment %s", amount, paymentID)
	}
	y.seq++
	now := y.core.now()
	rf := &ykRefund{stored: stored{seq: y.seq, createdAt: now}, amount: amount, r: yooKassaRefund{
		ID: ykUUID(y.core.ids, "0016", "b000"), PaymentID: paymentID, Status: "succeeded", CreatedAt: ykTime(now),
		Amount: ykFormatAmount(amount, p.scale, p.p.Amount.Currency), Description: description,
	}}
	y.settleRefundLocked(p, rf)
	y.refunds[rf.r.ID] = rf
	y.refundList = append(y.refundList, rf)
	return rf.r.ID, nil
}

// CancelRefund ends a pending refund (one of a payment made with
// YooKassaMethodRefundPending) canceled, as the bank that turns it down
// would (party payment_network, reason general_decline). No notification
// is sent: YooKassa has no event for a canceled refund (see the events in
// yookassa_webhooks.go), so a client hears of it only by reading the
// refund. The amount held for it is released.
func (y *YooKassaHandler) CancelRefund(id string) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	rf, ok := y.refunds[id]
	switch {
	case !ok:
		return fmt.Errorf("mocks: CancelRefund: no refund %s", id)
	case rf.r.Status != "pending":
		return fmt.Errorf("mocks: CancelRefund: refund %s is %s; only a pending refund ends canceled", id, rf.r.Status)
	}
	p := y.payments[rf.r.PaymentID]
	p.refundPending -= rf.amount
	p.p.Refundable = p.refunded+p.refundPending < p.amount
	rf.r.Status = "canceled"
	rf.r.CancellationDetails = &yooKassaCancellationDetails{Party: "payment_network", Reason: "general_decline"}
	return nil
}

// SucceedRefund ends a pending refund succeeded and emits
// refund.succeeded.
func (y *YooKassaHandler) SucceedRefund(id string) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	rf, ok := y.refunds[id]
	if !ok || rf.r.Status != "pending" {
		return fmt.Errorf("mocks: SucceedRefund: no pending refund %s", id)
	}
	p := y.payments[rf.r.PaymentID]
	p.refundPending -= rf.amount
	y.settleRefundLocked(p, rf)
	return nil
}

// settleRefundLocked makes rf succeeded and counts it in p. y.mu must be
// held.
func (y *YooKassaHandler) settleRefundLocked(p *ykPayment, rf *ykRefund) {
	rf.r.Status = "succeeded"
	p.refunded += rf.amount
	p.p.RefundedAmount = ptr(ykFormatAmount(p.refunded, p.scale, p.p.Amount.Currency))
	p.p.Refundable = p.refunded+p.refundPending < p.amount
	y.emitLocked(ykEvtRefundSucceeded, rf.r)
}

// ExpireAuthorization cancels a waiting_for_capture payment as YooKassa
// does when its capture period ends without a capture or cancel (party
// yoo_money, reason expired_on_capture: "the time for capturing a two-stage
// payment expired",
// https://yookassa.ru/en/developers/payment-acceptance/after-the-payment/declined-payments;
// the payment's expires_at says when). It emits payment.canceled.
func (y *YooKassaHandler) ExpireAuthorization(id string) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	p, ok := y.payments[id]
	if !ok || p.p.Status != "waiting_for_capture" {
		return fmt.Errorf("mocks: ExpireAuthorization: no payment %s waiting for capture", id)
	}
	p.p.Status = "canceled"
	p.p.Paid = false
	p.p.ExpiresAt = ""
	p.p.CancellationDetails = &yooKassaCancellationDetails{Party: "yoo_money", Reason: "expired_on_capture"}
	y.emitPaymentLocked(p)
	return nil
}
