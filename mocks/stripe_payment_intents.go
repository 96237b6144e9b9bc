package mocks

import (
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/payonce/payonce/mocks/internal/stripewire"
)

var intentCreateParams = paramSet{
	names: []string{"amount", "currency", "confirm", "payment_method", "customer", "capture_method",
		"description", "confirmation_method", "off_session", "setup_future_usage", "receipt_email",
		"return_url", "statement_descriptor", "statement_descriptor_suffix", "transfer_group",
		"on_behalf_of", "application_fee_amount", "error_on_requires_action", "use_stripe_sdk", "metadata"},
	prefixes: []string{"metadata[", "expand[", "payment_method_types[", "payment_method_options[",
		"automatic_payment_methods[", "shipping[", "transfer_data[", "mandate_data["},
}

var intentConfirmParams = paramSet{
	names:    []string{"payment_method", "off_session", "return_url", "receipt_email", "setup_future_usage", "error_on_requires_action", "use_stripe_sdk", "capture_method"},
	prefixes: []string{"expand[", "payment_method_options[", "mandate_data[", "shipping["},
}

var intentCaptureParams = paramSet{
	names:    []string{"amount_to_capture", "application_fee_amount", "final_capture", "statement_descriptor", "statement_descriptor_suffix"},
	prefixes: []string{"metadata[", "expand[", "transfer_data["},
}

var intentCancelParams = paramSet{
	names:    []string{"cancellation_reason"},
	prefixes: []string{"expand["},
}

// createIntent is POST /v1/payment_intents.
func (s *StripeHandler) createIntent(c *call) (*response, bool) {
	v := c.form
	if r := s.checkParams(c, v, intentCreateParams); r != nil {
		return r, false
	}
	if _, ok := v["amount"]; !ok {
		return s.invalid(c, "parameter_missing", "amount", "Missing required param: amount."), false
	}
	amount, _, r := s.intParam(c, v, "amount", 1, 1<<62)
	if r != nil {
		return r, false
	}
	cur, r := s.currencyParam(c, v)
	if r != nil {
		return r, false
	}
	if amount > 99999999 {
		return s.invalid(c, "amount_too_large", "amount",
			fmt.Sprintf("Amount must be no more than %s", formatMoney(99999999, cur))), false
	}
	captureMethod, r := s.enumParam(c, v, "capture_method", "automatic", "automatic_async", "manual")
	if r != nil {
		return r, false
	}
	confirm, r := s.boolParam(c, v, "confirm")
	if r != nil {
		return r, false
	}
	md, r := s.metadataParam(c, v)
	if r != nil {
		return r, false
	}
	pm := v.Get("payment_method")
	var card stripeTestCard
	if pm != "" {
		s.mu.Lock()
		card, pm, r = s.resolveMethodLocked(c, pm)
		s.mu.Unlock()
		if r != nil {
			return r, false
		}
	} else if confirm {
		return s.invalid(c, "parameter_missing", "payment_method",
			"You cannot confirm this PaymentIntent because it's missing a payment method. Specify a payment_method to confirm it."), false
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.core.ids.next("pi_", 24)
	in := &stripeIntent{
		stored: s.stamp(c),
		pi: stripewire.PaymentIntent{
			ID:                 id,
			Object:             "payment_intent",
			Amount:             amount,
			CaptureMethod:      orDefault(captureMethod, "automatic"),
			ClientSecret:       id + "_secret_" + s.core.ids.next("", 25),
			ConfirmationMethod: orDefault(v.Get("confirmation_method"), "automatic"),
			Created:            c.now.Unix(),
			Currency:           cur,
			Customer:           v.Get("customer"),
			Description:        v.Get("description"),
			Metadata:           md,
			PaymentMethod:      pm,
			PaymentMethodTypes: []string{"card"},
			Status:             "requires_payment_method",
		},
	}
	if pm != "" {
		in.pi.Status = "requires_confirmation"
	}
	s.intents[id] = in
	s.intentOrder = append(s.intentOrder, in)
	if confirm {
		return s.confirmLocked(c, in, card), true
	}
	return s.jsonResponse(c, http.StatusOK, in.pi), true
}

// resolveMethodLocked turns a test PaymentMethod name (pm_card_visa) into a
// PaymentMethod id of its own, as Stripe does; ids it issued before resolve
// to the same behaviour.
func (s *StripeHandler) resolveMethodLocked(c *call, pm string) (stripeTestCard, string, *response) {
	name := pm
	if n, ok := s.methods[pm]; ok {
		name = n
	}
	card, ok := lookupTestCard(name)
	if !ok {
		return card, "", s.invalid(c, "resource_missing", "payment_method",
			fmt.Sprintf("No such PaymentMethod: '%s'", pm))
	}
	if name != pm {
		return card, pm, nil
	}
	id := s.core.ids.next("pm_", 24)
	s.methods[id] = name
	return card, id, nil
}

// confirmLocked charges the intent's payment method: the answer is the
// updated PaymentIntent, or a 402 card_error carrying it.
func (s *StripeHandler) confirmLocked(c *call, in *stripeIntent, card stripeTestCard) *response {
	chargeID := s.core.ids.next("ch_", 24)
	pi := &in.pi
	switch {
	case card.requiresAction:
		pi.Status = "requires_action"
		pi.NextAction = map[string]any{"type": "use_stripe_sdk", "use_stripe_sdk": map[string]any{}}
		return s.jsonResponse(c, http.StatusOK, *pi)
	case card.code != "":
		lpe := stripewire.Error{
			Type:        "card_error",
			Code:        card.code,
			DeclineCode: card.declineCode,
			Message:     card.message,
			Charge:      chargeID,
			DocURL:      "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(card.code, "_", "-"),
		}
		pi.LatestCharge = chargeID
		pi.LastPaymentError = &lpe
		pi.Status = "requires_payment_method"
		pi.NextAction = nil
		s.chargeObjs[chargeID] = &stripewire.Charge{
			ID: chargeID, Object: "charge", Amount: pi.Amount, Created: c.now.Unix(), Currency: pi.Currency,
			FailureCode: card.code, FailureMessage: card.message, Metadata: cloneMap(pi.Metadata),
			PaymentIntent: pi.ID, PaymentMethod: pi.PaymentMethod, Status: "failed",
		}
		in.chargeIDs = append(in.chargeIDs, chargeID)
		s.emitIntentLocked(c, in, stripeEvtIntentFailed)
		e := lpe
		snapshot := *pi
		e.PaymentIntent = &snapshot
		return s.errorResponse(c, http.StatusPaymentRequired, e)
	}
	pi.LatestCharge = chargeID
	pi.LastPaymentError = nil
	pi.NextAction = nil
	in.authorized = true
	in.chargeID = chargeID
	s.charges[chargeID] = in
	ch := &stripewire.Charge{
		ID: chargeID, Object: "charge", Amount: pi.Amount, Created: c.now.Unix(), Currency: pi.Currency,
		Metadata: cloneMap(pi.Metadata), Paid: true, PaymentIntent: pi.ID, PaymentMethod: pi.PaymentMethod, Status: "succeeded",
	}
	s.chargeObjs[chargeID] = ch
	in.chargeIDs = append(in.chargeIDs, chargeID)
	if pi.CaptureMethod == "manual" {
		// Authorized only: the charge is paid ("successfully authorized for
		// later capture") but not captured.
		pi.Status = "requires_capture"
		pi.AmountCapturable = pi.Amount
		s.emitIntentLocked(c, in, stripeEvtIntentCapturable)
	} else {
		pi.Status = "succeeded"
		pi.AmountReceived = pi.Amount
		ch.Captured, ch.AmountCaptured = true, pi.Amount
		s.emitIntentLocked(c, in, stripeEvtIntentSucceeded)
	}
	return s.jsonResponse(c, http.StatusOK, *pi)
}

// getIntent is GET /v1/payment_intents/{id}.
func (s *StripeHandler) getIntent(c *call) (*response, bool) {
	return s.withIntent(c, func(in *stripeIntent) (*response, bool) {
		return s.jsonResponse(c, http.StatusOK, in.pi), true
	})
}

// getCharge is GET /v1/charges/{id}.
func (s *StripeHandler) getCharge(c *call) (*response, bool) {
	missing := func(id string) *response { return s.notFound(c, "charge", id, "id") }
	return withObject(&s.mu, s.chargeObjs, c, missing, func(ch *stripewire.Charge) (*response, bool) {
		return s.jsonResponse(c, http.StatusOK, *ch), true
	})
}

// listIntents is GET /v1/payment_intents ("List all PaymentIntents",
// https://docs.stripe.com/api/payment_intents/list): newest first,
// filtered by customer and created (a Unix time, or created[gt|gte|lt|lte]),
// limit 1..100 (default 10), paged by starting_after or ending_before, and
// not delayed: a PaymentIntent is listed as soon as it exists, unlike the
// search ("These APIs aren't subject to the availability delays",
// https://docs.stripe.com/search, Data freshness).
func (s *StripeHandler) listIntents(c *call) (*response, bool) {
	p, created, r := s.listParams(c, "customer")
	if r != nil {
		return r, false
	}
	customer := c.query.Get("customer")
	// The page is copied under the lock and encoded after it: a page of
	// 100 PaymentIntents takes a while to encode, and a real Stripe does
	// not hold every write back while a list is read.
	s.mu.Lock()
	all := newestFirst(s.intentOrder, func(in *stripeIntent) bool {
		return (customer == "" || in.pi.Customer == customer) && (!created.set || created.matches(in.pi.Created))
	})
	out, r := stripeList("/v1/payment_intents", all, p, func(in *stripeIntent) string { return in.pi.ID },
		func(in *stripeIntent) stripewire.PaymentIntent {
			pi := in.pi
			pi.Metadata = maps.Clone(pi.Metadata) // a capture adds to it in place
			return pi
		},
		func(id string) (*stripeIntent, bool) { in, ok := s.intents[id]; return in, ok },
		func(param, id string) *response { return s.unknownCursor(c, "payment_intent", param, id) })
	s.mu.Unlock()
	if r != nil {
		return r, false
	}
	return s.jsonResponse(c, http.StatusOK, out), true
}

func (in *stripeIntent) order() (created, seq int64) { return in.pi.Created, in.seq }

// unknownCursor is Stripe's answer to a starting_after or ending_before
// that names no object of the list's type: a 400 invalid_request_error
// resource_missing on that parameter, "No such <object>: '<id>'" (the
// shape of Stripe's resource_missing errors; the status of this case is
// not documented: 400, as for the list's other invalid parameters).
func (s *StripeHandler) unknownCursor(c *call, object, param, id string) *response {
	return s.invalid(c, "resource_missing", param, fmt.Sprintf("No such %s: '%s'", object, id))
}

// withIntent runs fn on the intent of a {id} route under the lock, or
// answers 404.
func (s *StripeHandler) withIntent(c *call, fn func(in *stripeIntent) (*response, bool)) (*response, bool) {
	missing := func(id string) *response { return s.notFound(c, "payment_intent", id, "intent") }
	return withObject(&s.mu, s.intents, c, missing, fn)
}

// unexpectedState is Stripe's 400 payment_intent_unexpected_state, carrying
// the PaymentIntent.
func (s *StripeHandler) unexpectedState(c *call, in *stripeIntent, msg string) *response {
	snapshot := in.pi
	return s.errorResponse(c, http.StatusBadRequest, stripewire.Error{
		Type: "invalid_request_error", Code: "payment_intent_unexpected_state",
		Message: msg, PaymentIntent: &snapshot,
	})
}

// confirmIntent is POST /v1/payment_intents/{id}/confirm.
func (s *StripeHandler) confirmIntent(c *call) (*response, bool) {
	v := c.form
	if r := s.checkParams(c, v, intentConfirmParams); r != nil {
		return r, false
	}
	return s.withIntent(c, func(in *stripeIntent) (*response, bool) {
		if st := in.pi.Status; st != "requires_payment_method" && st != "requires_confirmation" {
			return s.unexpectedState(c, in, fmt.Sprintf(
				"You cannot confirm this PaymentIntent because it has a status of %s. Only a PaymentIntent with one of the following statuses may be confirmed: requires_confirmation, requires_payment_method.", st)), true
		}
		pm := v.Get("payment_method")
		if pm == "" {
			pm = in.pi.PaymentMethod
		}
		if pm == "" {
			return s.invalid(c, "parameter_missing", "payment_method",
				"You cannot confirm this PaymentIntent because it's missing a payment method. Specify a payment_method to confirm it."), false
		}
		card, pmID, r := s.resolveMethodLocked(c, pm)
		if r != nil {
			return r, false
		}
		in.pi.PaymentMethod = pmID
		return s.confirmLocked(c, in, card), true
	})
}

// captureIntent is POST /v1/payment_intents/{id}/capture.
func (s *StripeHandler) captureIntent(c *call) (*response, bool) {
	v := c.form
	if r := s.checkParams(c, v, intentCaptureParams); r != nil {
		return r, false
	}
	atc, given, r := s.intParam(c, v, "amount_to_capture", 1, 1<<62)
	if r != nil {
		return r, false
	}
	md, r := s.metadataParam(c, v)
	if r != nil {
		return r, false
	}
	return s.withIntent(c, func(in *stripeIntent) (*response, bool) {
		pi := &in.pi
		if pi.Status != "requires_capture" {
			return s.unexpectedState(c, in, fmt.Sprintf(
				"This PaymentIntent could not be captured because it has a status of %s. Only a PaymentIntent with one of the following statuses may be captured: requires_capture.", pi.Status)), true
		}
		if !given {
			atc = pi.AmountCapturable
		}
		if atc > pi.AmountCapturable {
			return s.invalid(c, "amount_too_large", "amount_to_capture", fmt.Sprintf(
				"The amount to capture (%s) is greater than the amount capturable (%s).",
				formatMoney(atc, pi.Currency), formatMoney(pi.AmountCapturable, pi.Currency))), true
		}
		if ch := s.chargeObjs[in.chargeID]; ch != nil {
			ch.Captured, ch.AmountCaptured = true, atc
		}
		pi.AmountReceived = atc
		pi.AmountCapturable = 0
		pi.Status = "succeeded"
		for k, val := range md {
			pi.Metadata[k] = val
		}
		s.emitIntentLocked(c, in, stripeEvtIntentSucceeded)
		return s.jsonResponse(c, http.StatusOK, *pi), true
	})
}

// cancelIntent is POST /v1/payment_intents/{id}/cancel.
func (s *StripeHandler) cancelIntent(c *call) (*response, bool) {
	v := c.form
	if r := s.checkParams(c, v, intentCancelParams); r != nil {
		return r, false
	}
	reason, r := s.enumParam(c, v, "cancellation_reason", "duplicate", "fraudulent", "requested_by_customer", "abandoned")
	if r != nil {
		return r, false
	}
	return s.withIntent(c, func(in *stripeIntent) (*response, bool) {
		pi := &in.pi
		switch pi.Status {
		case "requires_payment_method", "requires_capture", "requires_confirmation", "requires_action", "processing":
		default:
			return s.unexpectedState(c, in, fmt.Sprintf(
				"You cannot cancel this PaymentIntent because it has a status of %s. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.", pi.Status)), true
		}
		if ch := s.chargeObjs[in.chargeID]; ch != nil && pi.Status == "requires_capture" {
			// "For PaymentIntents with a status of requires_capture, the
			// remaining amount_capturable is automatically refunded" (API
			// reference, Cancel a PaymentIntent): the authorized charge stays
			// paid and uncaptured, and is refunded in full.
			ch.AmountRefunded, ch.Refunded = ch.Amount, true
		}
		pi.Status = "canceled"
		pi.CanceledAt = c.now.Unix()
		pi.CancellationReason = reason
		pi.AmountCapturable = 0
		pi.NextAction = nil
		s.emitIntentLocked(c, in, stripeEvtIntentCanceled)
		return s.jsonResponse(c, http.StatusOK, *pi), true
	})
}
