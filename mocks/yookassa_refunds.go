package mocks

import (
	"fmt"
	"net/http"
	"sort"
	"unicode/utf8"
)

type ykCreateRefundRequest struct {
	PaymentID   string          `json:"payment_id"`
	Amount      *YooKassaAmount `json:"amount"`
	Description string          `json:"description"`
}

// createRefund is POST /v3/refunds: part or all of what remains of a
// succeeded payment. The amount is required.
func (y *YooKassaHandler) createRefund(c *call) (*response, bool) {
	if r := y.requireKey(c); r != nil {
		return r, false
	}
	var req ykCreateRefundRequest
	if r := y.decodeBody(c, &req); r != nil {
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
	if remaining := p.amount - p.refunded; amount > remaining {
		return y.invalid(c, "amount.value", fmt.Sprintf("Refund amount %s is greater than the amount left to refund %s",
			req.Amount.Value, ykFormatAmount(remaining, p.scale, p.p.Amount.Currency).Value)), true
	}
	y.seq++
	rf := &ykRefund{seq: y.seq, createdAt: c.now, key: c.key, amount: amount, r: YooKassaRefund{
		ID:          ykUUID(y.core.ids, "0016", "b000"),
		PaymentID:   p.p.ID,
		CreatedAt:   ykTime(c.now),
		Amount:      *req.Amount,
		Description: req.Description,
		Status:      "succeeded",
	}}
	if m, _ := lookupYKMethod(p.method); m.refundFails {
		rf.r.Status = "canceled"
		rf.r.CancellationDetails = &YooKassaCancellationDetails{Party: "payment_network", Reason: "general_decline"}
	} else {
		p.refunded += amount
		p.p.RefundedAmount = ptr(ykFormatAmount(p.refunded, p.scale, p.p.Amount.Currency))
		p.p.Refundable = p.refunded < p.amount
	}
	y.refunds[rf.r.ID] = rf
	y.refundList = append(y.refundList, rf)
	return y.jsonResponse(http.StatusOK, rf.r), true
}

// getRefund is GET /v3/refunds/{id}.
func (y *YooKassaHandler) getRefund(c *call) (*response, bool) {
	id := c.r.PathValue("id")
	y.mu.Lock()
	defer y.mu.Unlock()
	rf, ok := y.refunds[id]
	if !ok {
		return y.notFound(c, "Refund", id), true
	}
	return y.jsonResponse(http.StatusOK, rf.r), true
}

// listRefunds is GET /v3/refunds, optionally for one payment_id, newest
// first.
func (y *YooKassaHandler) listRefunds(c *call) (*response, bool) {
	q, r := y.listQuery(c, "payment_id")
	if r != nil {
		return r, false
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	var all []*ykRefund
	for _, rf := range y.refundList {
		if q.matches(rf.createdAt, rf.r.Status) && (q.paymentID == "" || rf.r.PaymentID == q.paymentID) {
			all = append(all, rf)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].createdAt.Equal(all[j].createdAt) {
			return all[i].createdAt.After(all[j].createdAt)
		}
		return all[i].seq > all[j].seq
	})
	page, next := ykPage(all, func(rf *ykRefund) int64 { return rf.seq }, q)
	out := YooKassaList[YooKassaRefund]{Type: "list", Items: make([]YooKassaRefund, 0, len(page)), NextCursor: next}
	for _, rf := range page {
		out.Items = append(out.Items, rf.r)
	}
	return y.jsonResponse(http.StatusOK, out), true
}
