package mocks

import (
	"fmt"
	"net/http"

	"github.com/payonce/payonce/mocks/internal/stripewire"
)

var refundCreateParams = paramSet{
	names:    []string{"payment_intent", "charge", "amount", "reason", "instructions_email", "refund_application_fee", "reverse_transfer", "metadata"},
	prefixes: []string{"metadata[", "expand["},
}

// createRefund is POST /v1/refunds: refunds a succeeded PaymentIntent (by
// payment_intent or by its charge), by default whatever remains.
func (s *StripeHandler) createRefund(c *call) (*response, bool) {
	v := c.form
	if r := s.checkParams(c, v, refundCreateParams); r != nil {
		return r, false
	}
	piID, chID := v.Get("payment_intent"), v.Get("charge")
	switch {
	case piID == "" && chID == "":
		return s.invalid(c, "parameter_missing", "payment_intent",
			"One of the following params should be provided for this request: payment_intent or charge."), false
	case piID != "" && chID != "":
		return s.invalid(c, "parameters_exclusive", "charge",
			"You may only specify one of these parameters: charge, payment_intent."), false
	}
	amount, given, r := s.intParam(c, v, "amount", 1, 1<<62)
	if r != nil {
		return r, false
	}
	reason, r := s.enumParam(c, v, "reason", "duplicate", "fraudulent", "requested_by_customer")
	if r != nil {
		return r, false
	}
	md, r := s.metadataParam(c, v)
	if r != nil {
		return r, false
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var in *stripeIntent
	if piID != "" {
		in = s.intents[piID]
		if in == nil {
			return s.notFound(c, "payment_intent", piID, "payment_intent"), true
		}
	} else {
		in = s.charges[chID]
		if in == nil {
			return s.notFound(c, "charge", chID, "charge"), true
		}
	}
	pi := &in.pi
	if pi.Status != "succeeded" || in.chargeID == "" {
		return s.invalid(c, "", "payment_intent", fmt.Sprintf(
			"This PaymentIntent (%s) does not have a successful charge to refund.", pi.ID)), true
	}
	remaining := pi.AmountReceived - in.refunded
	if remaining <= 0 {
		return s.invalid(c, "charge_already_refunded", "",
			fmt.Sprintf("Charge %s has already been refunded.", in.chargeID)), true
	}
	if !given {
		amount = remaining
	}
	if amount > remaining {
		return s.invalid(c, "amount_too_large", "amount", fmt.Sprintf(
			"Refund amount (%s) is greater than unrefunded amount on charge (%s)",
			formatMoney(amount, pi.Currency), formatMoney(remaining, pi.Currency))), true
	}
	in.refunded += amount
	if ch := s.chargeObjs[in.chargeID]; ch != nil {
		ch.AmountRefunded += amount
		// "Whether the charge has been fully refunded": of what it captured.
		ch.Refunded = ch.AmountRefunded >= ch.AmountCaptured
	}
	re := &stripeRefund{
		stored: s.stamp(c),
		re: stripewire.Refund{
			ID:                 s.core.ids.next("re_", 24),
			Object:             "refund",
			Amount:             amount,
			BalanceTransaction: s.core.ids.next("txn_", 24),
			Charge:             in.chargeID,
			Created:            c.now.Unix(),
			Currency:           pi.Currency,
			Metadata:           md,
			PaymentIntent:      pi.ID,
			Reason:             reason,
			Status:             "succeeded",
		},
	}
	s.refunds[re.re.ID] = re
	s.refundOrder = append(s.refundOrder, re)
	// A card refund that succeeds at once: the charge's charge.refunded
	// and the refund's refund.created (sent for every refund since API
	// version 2024-10-28.acacia, before only for refunds without a charge:
	// https://docs.stripe.com/changelog/acacia/2024-10-28/refund-webhook-update).
	if ch := s.chargeObjs[in.chargeID]; ch != nil {
		s.emitLocked(c, c.now, stripeEvtChargeRefunded, *ch, nil)
	}
	if s.refundEventsLocked() {
		s.emitLocked(c, c.now, stripeEvtRefundCreated, re.re, nil)
	}
	return s.jsonResponse(c, http.StatusOK, re.re), true
}

// getRefund is GET /v1/refunds/{id}.
func (s *StripeHandler) getRefund(c *call) (*response, bool) {
	missing := func(id string) *response { return s.notFound(c, "refund", id, "id") }
	return withObject(&s.mu, s.refunds, c, missing, func(re *stripeRefund) (*response, bool) {
		return s.jsonResponse(c, http.StatusOK, re.re), true
	})
}

func (re *stripeRefund) order() (created, seq int64) { return re.re.Created, re.seq }

// listRefunds is GET /v1/refunds, optionally for one payment_intent or
// charge, newest first.
func (s *StripeHandler) listRefunds(c *call) (*response, bool) {
	p, created, r := s.listParams(c, "payment_intent", "charge")
	if r != nil {
		return r, false
	}
	piID, chID := c.query.Get("payment_intent"), c.query.Get("charge")
	s.mu.Lock()
	defer s.mu.Unlock()
	if piID != "" && s.intents[piID] == nil {
		return s.notFound(c, "payment_intent", piID, "payment_intent"), true
	}
	all := newestFirst(s.refundOrder, func(re *stripeRefund) bool {
		return (piID == "" || re.re.PaymentIntent == piID) && (chID == "" || re.re.Charge == chID) &&
			(!created.set || created.matches(re.re.Created))
	})
	out, r := stripeList("/v1/refunds", all, p, func(re *stripeRefund) string { return re.re.ID },
		func(re *stripeRefund) stripewire.Refund { return re.re },
		func(id string) (*stripeRefund, bool) { re, ok := s.refunds[id]; return re, ok },
		func(param, id string) *response { return s.unknownCursor(c, "refund", param, id) })
	if r != nil {
		return r, false
	}
	return s.jsonResponse(c, http.StatusOK, out), true
}
