package paypal

import (
	"fmt"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// One table says what each PayPal status means for each kind of operation.
// Classify (the object in a 2xx answer, a same-request-id repeat included:
// PayPal answers a repeat with the LATEST status of the earlier request),
// Lookup (the object read by id) and the webhooks (the object an event
// carries) all read it through stateOf, so that an object means the same
// thing whichever way it arrived.
//
// The statuses are PayPal's (paypal/PayPal-TypeScript-Server-SDK,
// src/models/orderStatus.ts, authorizationStatus.ts, captureStatus.ts,
// refundStatus.ts):
//
//	order          CREATED SAVED APPROVED VOIDED COMPLETED PAYER_ACTION_REQUIRED
//	authorization  CREATED CAPTURED DENIED PARTIALLY_CAPTURED VOIDED PENDING
//	capture        COMPLETED DECLINED PARTIALLY_REFUNDED PENDING REFUNDED FAILED
//	refund         CANCELLED FAILED PENDING COMPLETED
//
// A status the table does not name is adapterkit.VerdictUnknown: Classify
// reads it maybe_sent, Lookup fails, a webhook changes nothing.

// The objects a status belongs to.
const (
	objOrder         = "order"
	objAuthorization = "authorization"
	objCapture       = "capture"
	objRefund        = "refund"
)

// verdictInside is the table's word for "this object does not decide; the
// payment object inside it does": an order COMPLETED (its capture may
// still be DECLINED or PENDING), an authorization CAPTURED when a capture
// is looked up (which capture took it is in the order's captures).
const verdictInside adapterkit.Verdict = -1

const (
	vUnknown    = adapterkit.VerdictUnknown
	vProcessing = adapterkit.VerdictProcessing
	vSucceeded  = adapterkit.VerdictSucceeded
	vFailed     = adapterkit.VerdictFailed
	vNotYet     = adapterkit.VerdictNotYet
)

// reading is what one status of one object says for each kind: the charge
// that created the order or payment, the capture of an authorization, the
// void (cancel) of an authorization, the refund of a capture. A zero field
// (VerdictUnknown) means the kind never reads that object.
type reading struct {
	charge, capture, cancel, refund adapterkit.Verdict
}

var states = map[string]map[string]reading{
	objOrder: {
		// The order exists but holds no payment yet: the payer has to
		// approve it or complete 3-D Secure. For an order the charge
		// acts on (PaymentMethod order:<id>), see orderState: there it
		// means that the capture or authorize has not happened.
		"CREATED":               {charge: vProcessing},
		"SAVED":                 {charge: vProcessing},
		"APPROVED":              {charge: vProcessing},
		"PAYER_ACTION_REQUIRED": {charge: vProcessing},
		// "All purchase units in the order are voided": with no payment
		// inside, nothing was paid (a payment inside decides: orderState).
		"VOIDED": {charge: vFailed},
		// The order is done; its capture or authorization says how.
		"COMPLETED": {charge: verdictInside},
	},
	objAuthorization: {
		// CREATED: the payment is authorized. For a capture or a void,
		// the authorization still waits for them: a same-request-id
		// resend completes them (VerdictNotYet).
		"CREATED": {charge: vSucceeded, capture: vNotYet, cancel: vNotYet},
		// PENDING: under review (status_details.reason); money may still
		// be authorized.
		"PENDING": {charge: vProcessing, capture: vNotYet, cancel: vNotYet},
		// Authorized, then captured (by this adapter's capture or another):
		// the charge succeeded. Which capture took it is the order's
		// business; a fully captured authorization cannot be voided, a
		// partly captured one still can.
		"CAPTURED":           {charge: vSucceeded, capture: verdictInside, cancel: vFailed},
		"PARTIALLY_CAPTURED": {charge: vSucceeded, capture: verdictInside, cancel: vNotYet},
		// Denied: never authorized, never capturable, nothing to void.
		"DENIED": {charge: vFailed, capture: vFailed, cancel: vFailed},
		// Voided: what a cancel asked for. For the charge, an authorization
		// that is later released still succeeded as a charge
		// (docs/ADAPTERS.md, Lookup rule 9: "A charge that was authorized
		// and later released ... still succeeded"); the design's draft
		// read it failed, see the notes. No capture can follow it (the
		// adapter's captures are final, so none of them came before it).
		"VOIDED": {charge: vSucceeded, capture: vFailed, cancel: vSucceeded},
	},
	objCapture: {
		// The money moved; refunds later do not undo the charge or the
		// capture (they are refund operations of their own).
		"COMPLETED":          {charge: vSucceeded, capture: vSucceeded},
		"PARTIALLY_REFUNDED": {charge: vSucceeded, capture: vSucceeded},
		"REFUNDED":           {charge: vSucceeded, capture: vSucceeded},
		// "The funds could not be captured" / the processor declined.
		"DECLINED": {charge: vFailed, capture: vFailed},
		"FAILED":   {charge: vFailed, capture: vFailed},
		// Held (eCheck, review, ...): money may still move.
		"PENDING": {charge: vProcessing, capture: vProcessing},
	},
	objRefund: {
		"COMPLETED": {refund: vSucceeded},
		"PENDING":   {refund: vProcessing},
		"CANCELLED": {refund: vFailed},
		"FAILED":    {refund: vFailed},
	},
}

// stateOf is the one reading of PayPal's statuses: what status of object
// (objOrder, objAuthorization, objCapture, objRefund) says about an
// operation of kind. It returns verdictInside when the payment inside
// decides (orderState does that), and adapterkit.VerdictUnknown for a
// status or object the table does not know. The webhook code reads events
// through it (or through paymentState and orderState, which add the codes
// of a failure).
func stateOf(kind payonce.Kind, object, status string) adapterkit.Verdict {
	r, ok := states[object][status]
	if !ok {
		return vUnknown
	}
	switch kind {
	case payonce.KindCharge:
		return r.charge
	case payonce.KindCapture:
		return r.capture
	case payonce.KindCancel:
		return r.cancel
	case payonce.KindRefund:
		return r.refund
	}
	return vUnknown
}

// paymentState is stateOf for an authorization, capture or refund pm, with
// what a failure reports: Code is the object's status (DECLINED, DENIED,
// FAILED, ...), DeclineCode the processor's response code (a card decline)
// or else status_details.reason. verdictInside is returned as it is.
func (p *Provider) paymentState(kind payonce.Kind, object string, pm payment) adapterkit.State {
	v := stateOf(kind, object, pm.Status)
	reason := ""
	if pm.StatusDetails != nil {
		reason = pm.StatusDetails.Reason
	}
	switch v {
	case vFailed:
		s := adapterkit.State{Verdict: vFailed, Code: p.scrub(pm.Status)}
		if pm.ProcessorResponse != nil && pm.ProcessorResponse.ResponseCode != "" {
			s.Decline = p.scrub(pm.ProcessorResponse.ResponseCode)
		} else {
			s.Decline = p.scrub(reason)
		}
		s.Message = fmt.Sprintf("paypal: %s %s is %s", object, p.scrub(pm.ID), p.scrub(pm.Status))
		if reason != "" {
			s.Message += " (" + p.scrub(reason) + ")"
		}
		return s
	case vUnknown:
		return adapterkit.State{Verdict: vUnknown, Message: fmt.Sprintf("%s %s has status %q, which the adapter does not know for a %s",
			object, p.scrub(pm.ID), p.scrub(pm.Status), kind)}
	case vNotYet:
		return adapterkit.State{Verdict: vNotYet, Message: fmt.Sprintf("%s %s is still %s: the %s has not happened",
			object, p.scrub(pm.ID), p.scrub(pm.Status), kind)}
	}
	return adapterkit.State{Verdict: v}
}

// intentOf is the order intent a charge asks for.
func intentOf(r payonce.Request) string {
	if r.CaptureManual {
		return "AUTHORIZE"
	}
	return "CAPTURE"
}

// inside is the payment a charge's order holds: its first capture
// (intent CAPTURE) or authorization (intent AUTHORIZE), nil when it holds
// none; object names which.
func inside(o order, intent string) (pm *payment, object string) {
	if len(o.PurchaseUnits) == 0 || o.PurchaseUnits[0].Payments == nil {
		return nil, ""
	}
	ps := o.PurchaseUnits[0].Payments
	if intent == "AUTHORIZE" {
		if len(ps.Authorizations) > 0 {
			return &ps.Authorizations[0], objAuthorization
		}
		return nil, ""
	}
	if len(ps.Captures) > 0 {
		return &ps.Captures[0], objCapture
	}
	return nil, ""
}

// orderState reads an order for the charge r: by the payment inside it
// once it holds one (paymentState), else by its own status. ref is the id
// the charge is known by: the payment's once the order holds one, else the
// order's. acting says that the charge acts on an order the payer approved
// elsewhere (PaymentMethod order:<id>): until it holds a payment such an
// order shows that the charge's capture or authorize has not happened
// (VerdictNotYet: a resend with the same PayPal-Request-Id does it), where
// an order the charge created itself waits for the payer (processing).
//
// WHY the payment decides whatever the order's status: an order VOIDED
// ("All purchase units in the order are voided", orderStatus.ts) may hold
// an authorization that was voided after it was made. The table reads that
// authorization as a charge that succeeded (authorized, then released);
// reading the order alone would record it declined, under the order's id
// instead of the authorization's, while a payonce cancel of that same
// authorization is recorded succeeded. Only an order without a payment is
// read by its own status.
func (p *Provider) orderState(r payonce.Request, o order, acting bool) (st adapterkit.State, ref string, pm *payment) {
	intent := orderIntent(r, o)
	if pm, object := inside(o, intent); pm != nil && pm.ID != "" {
		return p.paymentState(payonce.KindCharge, object, *pm), pm.ID, pm
	}
	v := stateOf(payonce.KindCharge, objOrder, o.Status)
	switch {
	case v == verdictInside:
		return adapterkit.State{Verdict: vUnknown, Message: fmt.Sprintf("order %s is %s but holds no %s", p.scrub(o.ID), p.scrub(o.Status),
			strings.ToLower(intent))}, o.ID, nil
	case v == vProcessing && acting:
		return adapterkit.State{Verdict: vNotYet, Message: fmt.Sprintf("order %s is %s: not captured or authorized yet", p.scrub(o.ID), p.scrub(o.Status))}, o.ID, nil
	case v == vFailed:
		return adapterkit.State{Verdict: vFailed, Code: p.scrub(o.Status), Message: fmt.Sprintf("paypal: order %s is %s", p.scrub(o.ID), p.scrub(o.Status))}, o.ID, nil
	case v == vUnknown:
		return adapterkit.State{Verdict: vUnknown, Message: fmt.Sprintf("order %s has status %q, which the adapter does not know", p.scrub(o.ID), p.scrub(o.Status))}, o.ID, nil
	}
	return adapterkit.State{Verdict: v}, o.ID, nil
}

// holdsPayment reports whether o holds the payment (capture, or
// authorization for intent AUTHORIZE) that a charge of r would read.
func holdsPayment(r payonce.Request, o order) bool {
	pm, _ := inside(o, orderIntent(r, o))
	return pm != nil && pm.ID != ""
}

// orderIntent is o's intent, or the one the charge r asks for when the
// order does not say.
func orderIntent(r payonce.Request, o order) string {
	if o.Intent != "" {
		return o.Intent
	}
	return intentOf(r)
}
