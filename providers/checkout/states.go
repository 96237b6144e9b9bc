package checkout

import (
	"fmt"
	"strconv"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The functions of this file decide what a Checkout.com payment or action
// says about an operation. Classify and Lookup both call them, so that an
// object means the same thing whether it came back as the answer to a send
// or was read by a lookup. Each returns an adapterkit.State: one verdict
// that State.Outcome (Classify) and State.Result (Lookup) both convert.

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
func (p *Provider) chargeState(pm payment) adapterkit.State {
	switch pm.Status {
	case statusPending, statusRetryScheduled:
		return adapterkit.State{Verdict: adapterkit.VerdictProcessing}
	case statusDeclined:
		return p.declined(pm)
	case statusAuthorized, statusCaptured, statusPartiallyCaptured, statusPaid,
		statusVoided, statusRefunded, statusPartiallyRefunded:
		if pm.approved() {
			return adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
		}
	case statusCanceled, statusExpired:
		switch {
		case pm.Approved == nil:
		case *pm.Approved:
			return adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
		default:
			return p.declined(pm)
		}
	}
	approved := "absent"
	if pm.Approved != nil {
		approved = strconv.FormatBool(*pm.Approved)
	}
	return adapterkit.State{Verdict: adapterkit.VerdictUnknown, Message: fmt.Sprintf("payment status %q, approved %s", p.scrub(pm.Status), approved)}
}

func (p *Provider) declined(pm payment) adapterkit.State {
	s := adapterkit.State{Verdict: adapterkit.VerdictFailed, Code: codeDeclined, Decline: p.scrub(pm.ResponseCode), Message: p.scrub(pm.ResponseSummary)}
	if s.Message == "" {
		s.Message = "checkout: payment " + p.scrub(pm.Status)
	}
	return s
}

// actionState maps a Capture, Void or Refund action of
// GET /payments/{id}/actions: approved absent means not decided yet.
func (p *Provider) actionState(a action) adapterkit.State {
	switch {
	case a.Approved == nil:
		return adapterkit.State{Verdict: adapterkit.VerdictProcessing}
	case *a.Approved:
		return adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
	}
	s := adapterkit.State{Verdict: adapterkit.VerdictFailed, Code: codeActionDeclined, Decline: p.scrub(a.ResponseCode), Message: p.scrub(a.ResponseSummary)}
	if s.Message == "" {
		s.Message = "checkout: " + a.Type + " declined"
	}
	return s
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
