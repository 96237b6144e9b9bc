package mocks

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

type ckoSourceRequest struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Token string `json:"token"`
}

type ckoCustomerRequest struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	Name  string `json:"name"`
}

type ckoPaymentRequest struct {
	Source              *ckoSourceRequest   `json:"source"`
	Amount              *int64              `json:"amount"`
	Currency            string              `json:"currency"`
	Reference           string              `json:"reference"`
	Description         string              `json:"description"`
	Capture             *bool               `json:"capture"`
	Metadata            map[string]any      `json:"metadata"`
	Customer            *ckoCustomerRequest `json:"customer"`
	ProcessingChannelID string              `json:"processing_channel_id"`
	PaymentType         string              `json:"payment_type"`
	MerchantInitiated   bool                `json:"merchant_initiated"`
}

type ckoActionRequest struct {
	Amount      *int64         `json:"amount"`
	Reference   string         `json:"reference"`
	Metadata    map[string]any `json:"metadata"`
	CaptureType string         `json:"capture_type"`
}

// amountUpTo is the amount the action asks for, all of available when it
// names none; ok is false when it asks for more than available.
func (req ckoActionRequest) amountUpTo(available int64) (amount int64, ok bool) {
	if req.Amount == nil {
		return available, true
	}
	return *req.Amount, *req.Amount <= available
}

// ckoTestSource is the behaviour of one of the fake's test sources.
type ckoTestSource struct {
	code, summary  string // response of the authorization
	approved       bool
	pending        bool
	refundDeclined bool
}

func lookupCkoSource(name string) (ckoTestSource, bool) {
	switch name {
	case CheckoutSourceApproved:
		return ckoTestSource{code: "10000", summary: "Approved", approved: true}, true
	case CheckoutSourceDoNotHonour:
		return ckoTestSource{code: "20005", summary: "Declined - Do Not Honour"}, true
	case CheckoutSourceInsufficientFunds:
		return ckoTestSource{code: "20051", summary: "Insufficient Funds"}, true
	case CheckoutSourceExpiredCard:
		return ckoTestSource{code: "20054", summary: "Expired Card"}, true
	case CheckoutSource3DS:
		return ckoTestSource{pending: true}, true
	case CheckoutSourceRefundDeclined:
		return ckoTestSource{code: "10000", summary: "Approved", approved: true, refundDeclined: true}, true
	}
	return ckoTestSource{}, false
}

func stringMetadata(md map[string]any) map[string]string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		if s, ok := v.(string); ok {
			out[k] = s
		} else {
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

func (h *CheckoutHandler) links(id string, extra ...string) map[string]checkoutLink {
	l := map[string]checkoutLink{
		"self":    {Href: "https://api.sandbox.checkout.com/payments/" + id},
		"actions": {Href: "https://api.sandbox.checkout.com/payments/" + id + "/actions"},
	}
	for _, e := range extra {
		if e == "redirect" {
			l[e] = checkoutLink{Href: "https://3ds2-sandbox.ckotech.co/interceptor/3ds_" + id}
		} else {
			l[e] = checkoutLink{Href: "https://api.sandbox.checkout.com/payments/" + id + "/" + e + "s"}
		}
	}
	return l
}

// createPayment is POST /payments: authorizes (and by default captures) a
// test source.
func (h *CheckoutHandler) createPayment(c *call) (*response, bool) {
	var req ckoPaymentRequest
	if r := h.decodeBody(c, &req); r != nil {
		return r, false
	}
	var codes []string
	var src ckoTestSource
	var srcName string
	switch {
	case req.Source == nil || req.Source.Type == "":
		codes = append(codes, "source_required")
	case req.Source.Type == "id" && strings.HasPrefix(req.Source.ID, "src_"):
		srcName = req.Source.ID
	case req.Source.Type == "token" && strings.HasPrefix(req.Source.Token, "tok_"):
		srcName = "src_" + strings.TrimPrefix(req.Source.Token, "tok_")
	case req.Source.Type == "token":
		codes = append(codes, "token_invalid")
	default:
		codes = append(codes, "source_id_invalid")
	}
	if srcName != "" {
		s, ok := lookupCkoSource(srcName)
		if !ok {
			codes = append(codes, "source_id_invalid")
		}
		src = s
	}
	switch {
	case req.Amount == nil:
		codes = append(codes, "amount_required")
	case *req.Amount < 1:
		codes = append(codes, "amount_invalid")
	}
	if req.Currency == "" {
		codes = append(codes, "currency_required")
	} else if !validCurrency(req.Currency) {
		codes = append(codes, "currency_invalid")
	}
	if len(codes) > 0 {
		return h.invalid(c, codes...), false
	}
	capture := req.Capture == nil || *req.Capture

	h.mu.Lock()
	defer h.mu.Unlock()
	amount := *req.Amount
	p := &ckoPayment{stored: h.stamp(c), source: srcName}
	p.p = checkoutPayment{
		ID:          ckoID(h.core.ids, "pay_"),
		RequestedOn: ckoTime(c.now),
		Amount:      amount,
		Currency:    req.Currency,
		Reference:   req.Reference,
		Description: req.Description,
		Source:      &checkoutSource{Type: "card", ID: ckoID(h.core.ids, "src_")},
		Metadata:    stringMetadata(req.Metadata),
		Balances:    &checkoutBalances{},
	}
	h.payments[p.p.ID] = p
	h.paymentList = append(h.paymentList, p)

	if src.pending {
		p.p.Status = "Pending"
		p.p.Links = h.links(p.p.ID, "redirect")
		h.emitLocked(c.now, ckoEvtPending, p, nil)
		return h.jsonResponse(http.StatusAccepted, p.p), true
	}
	auth := checkoutAction{ID: ckoID(h.core.ids, "act_"), Type: "Authorization", ProcessedOn: ckoTime(c.now),
		Amount: amount, Approved: src.approved, ResponseCode: src.code, ResponseSummary: src.summary, Reference: req.Reference}
	p.actions = append(p.actions, auth)
	p.p.ActionID = auth.ID
	p.p.ProcessedOn = auth.ProcessedOn
	p.p.Approved = src.approved
	p.p.ResponseCode, p.p.ResponseSummary = src.code, src.summary
	if !src.approved {
		p.p.Status = "Declined"
		p.p.Links = h.links(p.p.ID)
		h.emitLocked(c.now, ckoEvtDeclined, p, nil)
		return h.jsonResponse(http.StatusCreated, p.p), true
	}
	p.p.AuthCode = strconv.Itoa(100000 + int(p.seq%900000))
	b := p.p.Balances
	b.TotalAuthorized = amount
	if capture {
		p.actions = append(p.actions, checkoutAction{ID: ckoID(h.core.ids, "act_"), Type: "Capture",
			ProcessedOn: ckoTime(c.now), Amount: amount, Approved: true, ResponseCode: "10000",
			ResponseSummary: "Approved", Reference: req.Reference})
		p.p.Status = "Captured"
		b.TotalCaptured, b.AvailableToRefund = amount, amount
		p.p.Links = h.links(p.p.ID, "refund")
		// Approved and captured: both events, the capture's last.
		h.emitLocked(c.now, ckoEvtApproved, p, nil)
		h.emitActionLocked(c.now, p)
	} else {
		p.p.Status = "Authorized"
		b.AvailableToCapture, b.AvailableToVoid = amount, amount
		p.p.Links = h.links(p.p.ID, "capture", "void")
		h.emitLocked(c.now, ckoEvtApproved, p, nil)
	}
	return h.jsonResponse(http.StatusCreated, p.p), true
}

// getPayment is GET /payments/{id}.
func (h *CheckoutHandler) getPayment(c *call) (*response, bool) {
	return h.withPayment(c, func(p *ckoPayment) (*response, bool) {
		return h.jsonResponse(http.StatusOK, p.p), true
	})
}

// withPayment runs fn on the payment of a {id} route under the lock, or
// answers 404.
func (h *CheckoutHandler) withPayment(c *call, fn func(p *ckoPayment) (*response, bool)) (*response, bool) {
	return withObject(&h.mu, h.payments, c, func(string) *response { return h.notFound() }, fn)
}

// listPayments is GET /payments?reference=...&limit=...&skip=..., newest
// first.
func (h *CheckoutHandler) listPayments(c *call) (*response, bool) {
	for name := range c.query {
		if name != "reference" && name != "limit" && name != "skip" {
			return h.invalid(c, name+"_invalid"), false
		}
	}
	ref := c.query.Get("reference")
	if ref == "" {
		return h.invalid(c, "reference_required"), false
	}
	limit, skip := 10, 0
	if v := c.query.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return h.invalid(c, "limit_invalid"), false
		}
		limit = n
	}
	if v := c.query.Get("skip"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return h.invalid(c, "skip_invalid"), false
		}
		skip = n
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	all := matching(h.paymentList, func(p *ckoPayment) bool {
		return p.p.Reference == ref
	})
	sort.Slice(all, func(i, j int) bool { return all[i].seq > all[j].seq })
	out := checkoutPaymentList{Limit: limit, Skip: skip, TotalCount: len(all), Data: []checkoutPayment{}}
	for i := skip; i < len(all) && i < skip+limit; i++ {
		out.Data = append(out.Data, all[i].p)
	}
	return h.jsonResponse(http.StatusOK, out), true
}

// getActions is GET /payments/{id}/actions: a bare array, newest first.
func (h *CheckoutHandler) getActions(c *call) (*response, bool) {
	return h.withPayment(c, func(p *ckoPayment) (*response, bool) {
		out := make([]checkoutAction, 0, len(p.actions))
		for i := len(p.actions) - 1; i >= 0; i-- {
			out = append(out, p.actions[i])
		}
		return h.jsonResponse(http.StatusOK, out), true
	})
}

// action runs a capture, void or refund on the payment of the route: it
// reads the body, finds the payment and calls do under the lock. do returns
// the action to record or the refusal.
func (h *CheckoutHandler) action(c *call, do func(p *ckoPayment, req ckoActionRequest) (*checkoutAction, *response)) (*response, bool) {
	var req ckoActionRequest
	if r := h.decodeBody(c, &req); r != nil {
		return r, false
	}
	if req.Amount != nil && *req.Amount < 1 {
		return h.invalid(c, "amount_invalid"), false
	}
	return h.withPayment(c, func(p *ckoPayment) (*response, bool) {
		act, refusal := do(p, req)
		if refusal != nil {
			return refusal, true
		}
		act.ID = ckoID(h.core.ids, "act_")
		act.ProcessedOn = ckoTime(c.now)
		act.Reference = req.Reference
		act.Metadata = stringMetadata(req.Metadata)
		p.actions = append(p.actions, *act)
		if act.Type == "Refund" {
			h.refunds = append(h.refunds, &ckoRefund{stored: stored{createdAt: c.now, key: c.key}, paymentID: p.p.ID, currency: p.p.Currency, action: *act})
		}
		h.emitActionLocked(c.now, p)
		return h.jsonResponse(http.StatusAccepted, checkoutActionAccepted{ActionID: act.ID, Reference: req.Reference,
			Links: map[string]checkoutLink{"payment": {Href: "https://api.sandbox.checkout.com/payments/" + p.p.ID}}}), true
	})
}

func (h *CheckoutHandler) notAllowed(c *call, what string) *response {
	return h.errorResponse(c, http.StatusForbidden, "action_not_allowed", what+"_not_allowed")
}

// capture is POST /payments/{id}/captures: one capture of all or part of
// the authorization (the rest is released).
func (h *CheckoutHandler) capture(c *call) (*response, bool) {
	return h.action(c, func(p *ckoPayment, req ckoActionRequest) (*checkoutAction, *response) {
		b := p.p.Balances
		if p.p.Status != "Authorized" || b.AvailableToCapture == 0 {
			return nil, h.notAllowed(c, "capture")
		}
		amount, ok := req.amountUpTo(b.AvailableToCapture)
		if !ok {
			return nil, h.invalid(c, "capture_amount_exceeds_balance")
		}
		b.TotalCaptured, b.AvailableToCapture, b.AvailableToVoid, b.AvailableToRefund = amount, 0, 0, amount
		p.p.Status = "Captured"
		if amount < b.TotalAuthorized {
			p.p.Status = "Partially Captured"
		}
		p.p.Links = h.links(p.p.ID, "refund")
		return &checkoutAction{Type: "Capture", Amount: amount, Approved: true, ResponseCode: "10000", ResponseSummary: "Approved"}, nil
	})
}

// void is POST /payments/{id}/voids: releases an uncaptured authorization.
func (h *CheckoutHandler) void(c *call) (*response, bool) {
	return h.action(c, func(p *ckoPayment, req ckoActionRequest) (*checkoutAction, *response) {
		b := p.p.Balances
		if req.Amount != nil {
			return nil, h.invalid(c, "amount_invalid")
		}
		if p.p.Status != "Authorized" || b.AvailableToVoid == 0 {
			return nil, h.notAllowed(c, "void")
		}
		b.TotalVoided, b.AvailableToVoid, b.AvailableToCapture = b.TotalAuthorized, 0, 0
		p.p.Status = "Voided"
		p.p.Links = h.links(p.p.ID)
		return &checkoutAction{Type: "Void", Amount: b.TotalAuthorized, Approved: true, ResponseCode: "10000", ResponseSummary: "Approved"}, nil
	})
}

// refund is POST /payments/{id}/refunds: all (by default) or part of what
// was captured and not yet refunded.
func (h *CheckoutHandler) refund(c *call) (*response, bool) {
	return h.action(c, func(p *ckoPayment, req ckoActionRequest) (*checkoutAction, *response) {
		b := p.p.Balances
		if b.AvailableToRefund == 0 {
			return nil, h.notAllowed(c, "refund")
		}
		amount, ok := req.amountUpTo(b.AvailableToRefund)
		if !ok {
			return nil, h.invalid(c, "refund_amount_exceeds_balance")
		}
		if s, _ := lookupCkoSource(p.source); s.refundDeclined {
			return &checkoutAction{Type: "Refund", Amount: amount, Approved: false, ResponseCode: "20005",
				ResponseSummary: "Declined - Do Not Honour"}, nil
		}
		b.TotalRefunded += amount
		b.AvailableToRefund -= amount
		p.p.Status = "Partially Refunded"
		if b.TotalRefunded == b.TotalCaptured {
			p.p.Status = "Refunded"
		}
		return &checkoutAction{Type: "Refund", Amount: amount, Approved: true, ResponseCode: "10000", ResponseSummary: "Approved"}, nil
	})
}
