package mocks

import (
	"fmt"
	"net/http"
	"unicode/utf8"
)

type ykCreateRefundRequest struct {
	PaymentID   string          `json:"payment_id"`
	Amount      *yooKassaAmount `json:"amount"`
	Description string          `json:"description"`
}

// createRefund is POST /v3/refunds: part or all of what remains of a
// succeeded payment. The amount is required.
func (y *YooKassaHandler) createRefund(c *call) (*response, bool) {
	var req ykCreateRefundRequest
	if r := y.keyedBody(c, &req); r != nil {
		return r, false
	}
	if req.PaymentID == "" {
		return y.invalid(c, "payment_id", "payment_id is required"), false
	}
	amount, _, desc, param := ykParseAmount(req.Amount)
	if desc != "" {
		return y.invalid(c, param, desc), false
	}
	if utf8.RuneCountInString(req.Description) > ykMaxRefundDescription {
		return y.invalid(c, "description", fmt.Sprintf("Description is longer than %d characters", ykMaxRefundDescription)), false
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	p, ok := y.payments[req.PaymentID]
	if !ok {
		return y.notFound(c, "Payment", req.PaymentID), true
	}
	if p.p.Status != "succeeded" {
		return y.invalid(c, "payment_id", fmt.Sprintf("Payment has status %s; only a succeeded payment can be refunded", p.p.Status)), true
	}
	if req.Amount.Currency != p.p.Amount.Currency {
		return y.invalid(c, "amount.currency", "Refund currency differs from the payment's"), true
	}
	if remaining := p.amount - p.refunded - p.refundPending; amount > remaining {
		return y.invalid(c, "amount.value", fmt.Sprintf("Refund amount %s is greater than the amount left to refund %s",
			req.Amount.Value, ykFormatAmount(remaining, p.scale, p.p.Amount.Currency).Value)), true
	}
	rf := &ykRefund{stored: y.stamp(c), amount: amount, r: yooKassaRefund{
		ID:          ykUUID(y.core.ids, "0016", "b000"),
		PaymentID:   p.p.ID,
		CreatedAt:   ykTime(c.now),
		Amount:      *req.Amount,
		Description: req.Description,
	}}
	switch m, _ := lookupYKMethod(p.method); {
	case m.refundFails:
		rf.r.Status = "canceled"
		rf.r.CancellationDetails = &yooKassaCancellationDetails{Party: "payment_network", Reason: "general_decline"}
	case m.refundWaits:
		rf.r.Status = "pending"
		p.refundPending += amount
		p.p.Refundable = p.refunded+p.refundPending < p.amount
	default:
		y.settleRefundLocked(p, rf)
	}
	y.refunds[rf.r.ID] = rf
	y.refundList = append(y.refundList, rf)
	return y.jsonResponse(http.StatusOK, rf.r), true
}

// getRefund is GET /v3/refunds/{id}.
func (y *YooKassaHandler) getRefund(c *call) (*response, bool) {
	missing := func(id string) *response { return y.notFound(c, "Refund", id) }
	return withObject(&y.mu, y.refunds, c, missing, func(rf *ykRefund) (*response, bool) {
		return y.jsonResponse(http.StatusOK, rf.r), true
	})
}

func (rf *ykRefund) order() (created, seq int64) { return rf.createdAt.UnixNano(), rf.seq }

// listRefunds is GET /v3/refunds, optionally for one payment_id, newest
// first.
func (y *YooKassaHandler) listRefunds(c *call) (*response, bool) {
	q, r := y.listQuery(c, "payment_id")
	if r != nil {
		return r, false
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	all := newestFirst(y.refundList, func(rf *ykRefund) bool {
		return q.matches(rf.createdAt, rf.r.Status) && (q.paymentID == "" || rf.r.PaymentID == q.paymentID)
	})
	return y.jsonResponse(http.StatusOK, ykList(all, q, func(rf *ykRefund) yooKassaRefund { return rf.r })), true
}
