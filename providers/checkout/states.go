package checkout

import (
	"fmt"
	"strconv"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The functions of this file decide what a Checkout.com payment or action
// says about an operation. Classify and Lookup both call them, so that an
// object means the same thing whether it came back as the answer to a send
// or was read by a lookup.

// stateKind is what one object says about the operation it is read for.
type stateKind int

const (
	// stUnknown: a status the adapter does not know (or an approval it
	// cannot read). Classify: maybe_sent; Lookup: an error.
	stUnknown stateKind = iota
	// stProcessing: Checkout.com is still working on it.
	stProcessing
	// stSucceeded: the operation took effect.
	stSucceeded
	// stFailed: the operation definitively failed.
	stFailed
)

type state struct {
	kind          stateKind
	code, decline string
	message       string
}

// chargeState maps the payment a charge created, by its status and
// approved flag (GET /payments/{id}: "approved: whether the authorization
// was successful"). The statuses are Checkout.com's payment statuses
// (Pending, Authorized, Card Verified, Voided, Partially Captured,
// Captured, Partially Refunded, Refunded, Declined, Canceled, Expired,
// Paid: PaymentDetails.status in checkout/checkout-api-reference,
// PaymentStatus in checkout/checkout-sdk-go) and "Retry Scheduled" (a soft
// decline of a merchant-initiated payment that Checkout.com will retry:
// https://www.checkout.com/docs/payments/manage-payments/retry-a-payment/smart-dunning-retries).
//
//   - Pending, Retry Scheduled: processing (money may still move).
//   - Authorized, Captured, Partially Captured, Paid, and Voided,
//     Refunded, Partially Refunded, approved: succeeded. What happened to
//     the money after the authorization is another operation's business.
//   - Canceled, Expired: succeeded if approved (authorized, then released:
//     docs/ADAPTERS.md, Lookup rule 7), failed if not approved; unknown
//     when approved is absent (Lookup then asks the actions).
//   - Declined: failed, DeclineCode the response_code.
//   - Card Verified: not a charge at all (a card verification): reported
//     by the caller as a contradiction.
//   - anything else: unknown.
func (p *Provider) chargeState(pm payment) state {
	switch pm.Status {
	case statusPending, statusRetryScheduled:
		return state{kind: stProcessing}
	case statusDeclined:
		return p.declined(pm)
	case statusAuthorized, statusCaptured, statusPartiallyCaptured, statusPaid,
		statusVoided, statusRefunded, statusPartiallyRefunded:
		if pm.approved() {
			return state{kind: stSucceeded}
		}
	case statusCanceled, statusExpired:
		switch {
		case pm.Approved == nil:
		case *pm.Approved:
			return state{kind: stSucceeded}
		default:
			return p.declined(pm)
		}
	}
	approved := "absent"
	if pm.Approved != nil {
		approved = strconv.FormatBool(*pm.Approved)
	}
	return state{kind: stUnknown, message: fmt.Sprintf("payment status %q, approved %s", p.scrub(pm.Status), approved)}
}

func (p *Provider) declined(pm payment) state {
	s := state{kind: stFailed, code: codeDeclined, decline: p.scrub(pm.ResponseCode), message: p.scrub(pm.ResponseSummary)}
	if s.message == "" {
		s.message = "checkout: payment " + p.scrub(pm.Status)
	}
	return s
}

// actionState maps a Capture, Void or Refund action of
// GET /payments/{id}/actions: approved absent means not decided yet.
func (p *Provider) actionState(a action) state {
	switch {
	case a.Approved == nil:
		return state{kind: stProcessing}
	case *a.Approved:
		return state{kind: stSucceeded}
	}
	s := state{kind: stFailed, code: codeActionDeclined, decline: p.scrub(a.ResponseCode), message: p.scrub(a.ResponseSummary)}
	if s.message == "" {
		s.message = "checkout: " + a.Type + " declined"
	}
	return s
}

// outcome turns a state into the class of a send's answer.
func (s state) outcome(o payonce.Outcome) payonce.Outcome {
	switch s.kind {
	case stSucceeded:
		o.Class = ledger.OutcomeSuccess
	case stProcessing:
		o.Class = ledger.OutcomeSuccess
		o.Processing = true
	case stFailed:
		o.Class = ledger.OutcomeRefused
		o.Code, o.DeclineCode, o.Message = s.code, s.decline, s.message
	default:
		o.Class = ledger.OutcomeMaybeSent
		o.Message = "checkout: unreadable 2xx answer: " + s.message
	}
	return o
}

// result turns a state into what a lookup found for the object id.
func (s state) result(id string) (payonce.LookupResult, error) {
	r := payonce.LookupResult{ProviderRef: id, Refs: []string{id}}
	switch s.kind {
	case stSucceeded:
		r.State = payonce.LookupSucceeded
	case stProcessing:
		r.State = payonce.LookupProcessing
	case stFailed:
		r.State = payonce.LookupFailed
		r.Code, r.DeclineCode, r.Message = s.code, s.decline, s.message
	default:
		return payonce.LookupResult{}, fmt.Errorf("checkout: lookup: %s: %s, which a charge does not end in", id, s.message)
	}
	return r, nil
}

// ---- does the object belong to this request? ----

// opOf is the operation id an object carries: its payonce_op metadata, or
// else its reference (the adapter writes the operation id in both).
func opOf(md map[string]any, reference string) string {
	if v, ok := md[MetaOperation]; ok {
		if s := fmt.Sprint(v); s != "" {
			return s
		}
	}
	return reference
}

// keyOf is the idempotency key an object was created under (payonce_key
// metadata), "" when it does not say.
func keyOf(md map[string]any) string {
	if v, ok := md[MetaKey]; ok {
		return fmt.Sprint(v)
	}
	return ""
}

// paymentContradiction checks that pm is the payment the charge r of
// operation op asked for: its reference and payonce_op metadata, its amount
// (integer minor units) and its currency. An amount or currency the answer
// does not carry (the 202 answer to a payment that is Pending has neither)
// is not compared. A card verification (Card Verified) is not a charge.
func paymentContradiction(r payonce.Request, op string, pm payment) string {
	if pm.Status == statusCardVerified {
		return "the provider's object is a card verification (status Card Verified), not a charge"
	}
	if pm.Amount == nil {
		r.Amount = 0
	}
	var amount int64
	if pm.Amount != nil {
		amount = *pm.Amount
	}
	if why := adapterkit.Belongs(r, op, opOf(pm.Metadata, ""), amount, pm.Currency); why != "" {
		return why
	}
	return adapterkit.Belongs(payonce.Request{}, op, pm.Reference, 0, "")
}

// actionContradiction checks that a is the action operation op asked for:
// its reference (or payonce_op metadata) and, when the request fixes one
// (a partial capture or refund), its amount. Actions carry no currency.
func actionContradiction(r payonce.Request, op string, a action) string {
	if a.Amount == nil || r.Kind == payonce.KindCancel {
		// A void releases whatever was authorized; a cancel fixes no
		// amount.
		r.Amount = 0
	}
	var amount int64
	if a.Amount != nil {
		amount = *a.Amount
	}
	if why := adapterkit.Belongs(r, op, opOf(a.Metadata, ""), amount, ""); why != "" {
		return why
	}
	return adapterkit.Belongs(payonce.Request{}, op, a.Reference, 0, "")
}
