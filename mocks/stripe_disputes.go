package mocks

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/payonce/payonce/mocks/internal/stripewire"
)

// Disputes. A cardholder disputes a charge with their card issuer, and
// Stripe creates a Dispute (https://docs.stripe.com/disputes): nothing a
// client of the fake asks for, so the fake makes them out of band only
// (InjectDispute, SetDisputeStatus), and serves their list
// (GET /v1/disputes) for audits.
//
// A dispute changes no PaymentIntent, Charge or Refund of the fake: at
// Stripe a disputed PaymentIntent stays succeeded, and the funds a
// chargeback withdraws are a balance transaction of the dispute, not a
// refund. Truth is unchanged by one: the disputed payment still counts as
// charged (ChargesBy, TotalCharged) and nothing counts as refunded; Truth
// holds no disputes. A refund of a disputed charge is not refused as
// Stripe refuses it (charge_disputed): the fake does not model it.

// stripeDispute is the fake's record of one Dispute; intent is the
// disputed PaymentIntent.
type stripeDispute struct {
	stored
	d      stripewire.Dispute
	intent *stripeIntent
}

func (d *stripeDispute) order() (created, seq int64) { return d.d.Created, d.seq }

// stripeDisputeStatuses are a Dispute's statuses (API reference, The
// Dispute object, status); stripeDisputeFinal those no dispute leaves.
var (
	stripeDisputeStatuses = []string{"warning_needs_response", "warning_under_review", "warning_closed",
		"needs_response", "under_review", "won", "lost", "prevented"}
	stripeDisputeFinal = []string{"warning_closed", "won", "lost", "prevented"}
)

// stripeDisputeReasons are a Dispute's reasons (API reference, The Dispute
// object, reason).
var stripeDisputeReasons = []string{"bank_cannot_process", "check_returned", "credit_not_processed",
	"customer_initiated", "debit_not_authorized", "duplicate", "fraudulent", "general",
	"incorrect_account_details", "insufficient_funds", "noncompliant", "product_not_received",
	"product_unacceptable", "subscription_canceled", "unrecognized"}

// StripeDisputeSpec describes a Dispute made out of band (InjectDispute).
type StripeDisputeSpec struct {
	// PaymentIntent is the id of a succeeded PaymentIntent of the fake:
	// its successful charge is disputed.
	PaymentIntent string
	// Status is the dispute's status: needs_response (the default: a
	// chargeback, its funds withdrawn), under_review, won, lost, prevented,
	// or an inquiry's warning_needs_response, warning_under_review,
	// warning_closed.
	Status string
	// Amount is the disputed amount in minor units; 0 is the charge's
	// captured amount.
	Amount int64
	// Reason is one of Stripe's dispute reasons; default "fraudulent".
	Reason string
	// Created is its creation time; zero is the fake's clock now.
	Created time.Time
}

// InjectDispute makes a Dispute of a succeeded PaymentIntent's charge, as
// Stripe does when the cardholder's issuer opens one: no request and no
// webhook event (as if charge.dispute.created was lost, or the endpoint
// never subscribed to it). A charge is disputed once at most. It returns
// the dispute's id (du_...), or an error saying what in spec is wrong.
func (s *StripeHandler) InjectDispute(spec StripeDisputeSpec) (string, error) {
	status := orDefault(spec.Status, "needs_response")
	reason := orDefault(spec.Reason, "fraudulent")
	switch {
	case !slices.Contains(stripeDisputeStatuses, status):
		return "", fmt.Errorf("mocks: InjectDispute: Status %q is not one of %v", spec.Status, stripeDisputeStatuses)
	case !slices.Contains(stripeDisputeReasons, reason):
		return "", fmt.Errorf("mocks: InjectDispute: Reason %q is not one of %v", spec.Reason, stripeDisputeReasons)
	case spec.Amount < 0:
		return "", fmt.Errorf("mocks: InjectDispute: Amount %d is negative; give minor units, or 0 for the charge's amount", spec.Amount)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.intents[spec.PaymentIntent]
	if in == nil || in.pi.Status != "succeeded" || in.chargeID == "" {
		return "", fmt.Errorf("mocks: InjectDispute: %q is no succeeded PaymentIntent of the fake", spec.PaymentIntent)
	}
	for _, d := range s.disputeOrder {
		if d.intent == in {
			return "", fmt.Errorf("mocks: InjectDispute: the charge of %s is disputed already (%s); a charge has one dispute", in.pi.ID, d.d.ID)
		}
	}
	amount := spec.Amount
	if amount == 0 {
		amount = in.pi.AmountReceived
	}
	if amount > in.pi.AmountReceived {
		return "", fmt.Errorf("mocks: InjectDispute: Amount %d is more than the %d the charge captured", amount, in.pi.AmountReceived)
	}
	created := s.injectTime(spec.Created)
	d := &stripeDispute{stored: s.injectStamp(created), intent: in, d: stripewire.Dispute{
		ID: s.core.ids.next("du_", 24), Object: "dispute", Amount: amount, Charge: in.chargeID, Created: created.Unix(),
		Currency: in.pi.Currency, PaymentIntent: in.pi.ID, Reason: reason,
	}}
	d.setStatus(status)
	s.disputes[d.d.ID] = d
	s.disputeOrder = append(s.disputeOrder, d)
	return d.d.ID, nil
}

// SetDisputeStatus moves a dispute to status, as its issuer's decision or
// the merchant's answer does (needs_response to under_review, then won
// or lost; an inquiry to needs_response when it escalates), without a
// request and without a webhook event (charge.dispute.closed or .updated
// lost). A dispute whose status is final (warning_closed, won, lost,
// prevented) does not move.
func (s *StripeHandler) SetDisputeStatus(id, status string) error {
	if !slices.Contains(stripeDisputeStatuses, status) {
		return fmt.Errorf("mocks: SetDisputeStatus: status %q is not one of %v", status, stripeDisputeStatuses)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.disputes[id]
	switch {
	case d == nil:
		return fmt.Errorf("mocks: SetDisputeStatus: no dispute %q; pass the du_ id InjectDispute returned", id)
	case slices.Contains(stripeDisputeFinal, d.d.Status):
		return fmt.Errorf("mocks: SetDisputeStatus: dispute %s is %s, which is final", id, d.d.Status)
	}
	d.setStatus(status)
	return nil
}

// setStatus sets the dispute's status and what follows from it: the
// payment can still be refunded while the dispute is an inquiry ("If
// true, it's still possible to refund the disputed payment", API
// reference, is_charge_refundable), not once it is a chargeback.
func (d *stripeDispute) setStatus(status string) {
	d.d.Status = status
	d.d.IsChargeRefundable = status == "warning_needs_response" || status == "warning_under_review"
}

// disputeExpansions are the expand[] values GET /v1/disputes honours.
var disputeExpansions = []string{"data.payment_intent", "data.charge"}

// listDisputes is GET /v1/disputes ("List all disputes",
// https://docs.stripe.com/api/disputes/list): newest first, filtered by
// charge, payment_intent and created, paged like every list of the fake
// (stripeList). expand[]=data.payment_intent and expand[]=data.charge
// render those as the objects ("Expansions on list requests start with
// the data property", https://docs.stripe.com/api/expanding_objects);
// another expansion is refused with a 400, as Stripe refuses a property
// it cannot expand.
func (s *StripeHandler) listDisputes(c *call) (*response, bool) {
	p, created, r := s.listParams(c, "payment_intent", "charge")
	if r != nil {
		return r, false
	}
	expand := map[string]bool{}
	for name, vals := range c.query {
		if !strings.HasPrefix(name, "expand[") {
			continue
		}
		for _, v := range vals {
			if !slices.Contains(disputeExpansions, v) {
				return s.invalid(c, "", name, fmt.Sprintf("This property cannot be expanded (%s).", v)), false
			}
			expand[v] = true
		}
	}
	piID, chID := c.query.Get("payment_intent"), c.query.Get("charge")
	s.mu.Lock()
	defer s.mu.Unlock()
	all := newestFirst(s.disputeOrder, func(d *stripeDispute) bool {
		return (piID == "" || d.intent.pi.ID == piID) && (chID == "" || d.intent.chargeID == chID) &&
			(!created.set || created.matches(d.d.Created))
	})
	out, r := stripeList("/v1/disputes", all, p, func(d *stripeDispute) string { return d.d.ID },
		func(d *stripeDispute) stripewire.Dispute {
			w := d.d
			if expand["data.payment_intent"] {
				pi := d.intent.pi
				pi.Metadata = maps.Clone(pi.Metadata)
				w.PaymentIntent = pi
			}
			if ch := s.chargeObjs[d.intent.chargeID]; expand["data.charge"] && ch != nil {
				cp := *ch
				cp.Metadata = maps.Clone(cp.Metadata)
				w.Charge = cp
			}
			return w
		},
		func(id string) (*stripeDispute, bool) { d, ok := s.disputes[id]; return d, ok },
		func(param, id string) *response { return s.unknownCursor(c, "dispute", param, id) })
	if r != nil {
		return r, false
	}
	return s.jsonResponse(c, http.StatusOK, out), true
}
