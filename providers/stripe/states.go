package stripe

import (
	"fmt"
	"strconv"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// This file maps Stripe's objects to what they mean for one operation. The
// same functions serve Classify (a 2xx answer to the attempt) and Lookup (the
// object read by id), so that the two never disagree about an object.

// verdict is what one Stripe object says about one operation.
type verdict struct {
	// state is the object's meaning: succeeded, failed, processing or (for
	// a capture or cancel that did not happen yet) not found.
	state   payonce.LookupState
	code    string
	decline string
	message string
	// needCharge, when set, is the id of the PaymentIntent's latest charge:
	// the state is decided only by that charge (a canceled PaymentIntent
	// whose answer did not embed it). Lookup reads it; Classify answers
	// maybe_sent and leaves it to the lookup.
	needCharge string
	// unknown, when set, says why the object's state is not understood
	// (an unknown status): Classify answers maybe_sent, Lookup an error.
	unknown string
}

// outcome is the verdict as the classification of a 2xx answer.
func (v verdict) outcome(o payonce.Outcome, p *Provider) payonce.Outcome {
	switch v.state {
	case payonce.LookupSucceeded:
		o.Class = ledger.OutcomeSuccess
	case payonce.LookupProcessing:
		o.Class = ledger.OutcomeSuccess
		o.Processing = true
	case payonce.LookupFailed:
		o.Class = ledger.OutcomeRefused
	default:
		o.Class = ledger.OutcomeMaybeSent
	}
	o.Code, o.DeclineCode, o.Message = v.code, v.decline, p.scrub(v.message)
	return o
}

// result is the verdict as the lookup answer for the object id.
func (v verdict) result(p *Provider, id string) payonce.LookupResult {
	r := payonce.LookupResult{State: v.state, Code: v.code, DeclineCode: v.decline, Message: p.scrub(v.message)}
	if v.state != payonce.LookupNotFound {
		r.ProviderRef, r.Refs = id, []string{id}
	}
	return r
}

// contradicted is the lookup answer for an object that does not belong to
// the operation. Its state is processing, never succeeded or failed: the
// client sends a contradiction to review, and a caller that ignored it
// would at least keep looking instead of recording or resending.
func contradicted(p *Provider, id, why string) payonce.LookupResult {
	return payonce.LookupResult{State: payonce.LookupProcessing, ProviderRef: id, Refs: []string{id},
		Contradiction: p.scrub(why), Message: "stripe: the object found does not belong to this operation"}
}

// failedIntent is the verdict for a charge whose PaymentIntent did not pay:
// last_payment_error says why when Stripe kept it.
func failedIntent(pi paymentIntent, message string) verdict {
	v := verdict{state: payonce.LookupFailed, code: pi.Status, message: message}
	if lpe := pi.LastPaymentError; lpe != nil {
		if lpe.Code != "" {
			v.code = lpe.Code
		}
		v.decline = lpe.DeclineCode
		if lpe.Message != "" {
			v.message = lpe.Message
		}
	}
	return v
}

// chargeVerdict maps the PaymentIntent a charge created. latest is its
// latest charge when the caller read it (nil otherwise).
//
//	succeeded, requires_capture    succeeded (captured, or authorized)
//	processing                     processing
//	requires_payment_method        failed (the payment attempt failed)
//	requires_action                failed (needs the customer; payonce never hands out the client secret)
//	requires_confirmation          failed (needs another confirm payonce never makes)
//	canceled, authorized first     succeeded (the authorization was released; docs/ADAPTERS.md, Lookup rule 7)
//	canceled, never authorized     failed (no money moved)
//	anything else                  unknown
func chargeVerdict(pi paymentIntent, latest *charge) verdict {
	switch pi.Status {
	case piSucceeded, piRequiresCapture:
		return verdict{state: payonce.LookupSucceeded}
	case piProcessing:
		return verdict{state: payonce.LookupProcessing}
	case piRequiresPaymentMethod, piRequiresAction, piRequiresConfirmation:
		// Created and confirmed, but it did not pay. A server-side charge
		// cannot complete it: requires_action needs the customer (3-D
		// Secure, a redirect) through the client secret, which payonce never
		// hands out; requires_payment_method means the payment method
		// failed; requires_confirmation cannot move money without another
		// call that payonce does not make. The operation failed.
		return failedIntent(pi, "stripe: PaymentIntent is "+pi.Status)
	case piCanceled:
		return canceledCharge(pi, latest)
	default:
		return verdict{unknown: "PaymentIntent status " + strconv.Quote(pi.Status)}
	}
}

// canceledCharge decides a canceled PaymentIntent: a charge succeeded if it
// was authorized before the cancel (the hold was released: "For
// PaymentIntents with a status of requires_capture, the remaining
// amount_capturable is automatically refunded", API reference, Cancel a
// PaymentIntent), and failed if nothing was ever authorized.
//
// After a cancel amount_capturable is 0 and amount_received 0, and
// cancellation_reason does not say whether an authorization existed, so the
// evidence is the PaymentIntent's charge: latest_charge "is null until
// PaymentIntent confirmation is attempted" (nothing was authorized), and a
// Charge's paid is "true if the charge succeeded, or was successfully
// authorized for later capture" (API reference, PaymentIntent and Charge
// objects). Once authorized (requires_capture) a PaymentIntent cannot be
// confirmed again, so its latest charge is the authorized one.
func canceledCharge(pi paymentIntent, latest *charge) verdict {
	reason := pi.CancellationReason
	if reason == "" {
		reason = "no reason given"
	}
	released := verdict{state: payonce.LookupSucceeded,
		message: "stripe: PaymentIntent was authorized, then canceled (" + reason + "): the authorization was released"}
	never := failedIntent(pi, "stripe: PaymentIntent was canceled ("+reason+") before any authorization")
	never.code = "canceled"
	if lpe := pi.LastPaymentError; lpe != nil && lpe.Code != "" {
		never.code = lpe.Code
	}

	if pi.AmountReceived > 0 || pi.AmountCapturable > 0 {
		// Money received or still held: Stripe does not leave either on a
		// canceled PaymentIntent, but if it did, money moved.
		return released
	}
	if pi.Charges != nil {
		// API versions before 2022-11-15 embed the charges (newest first).
		for _, c := range pi.Charges.Data {
			if c.Paid {
				return released
			}
		}
		for _, c := range pi.Charges.Data {
			if c.Status == chargePending {
				return verdict{state: payonce.LookupProcessing, message: "stripe: canceled PaymentIntent has a pending charge " + c.ID}
			}
		}
	}
	if pi.LatestCharge.ID == "" {
		if pi.Charges != nil && pi.Charges.HasMore {
			return verdict{unknown: "canceled PaymentIntent has more charges than its answer embeds"}
		}
		// No charge: never confirmed, so never authorized.
		return never
	}

	ch := latest
	if ch == nil && pi.LatestCharge.Object != nil {
		if c, err := decodeCharge(pi.LatestCharge.Object); err == nil {
			ch = &c
		}
	}
	if ch == nil {
		return verdict{needCharge: pi.LatestCharge.ID,
			message: "stripe: PaymentIntent is canceled (" + reason + "); whether it was authorized first is known from its charge " + pi.LatestCharge.ID}
	}
	if ch.ID != pi.LatestCharge.ID || ch.PaymentIntent.ID != "" && ch.PaymentIntent.ID != pi.ID {
		return verdict{unknown: fmt.Sprintf("charge %s is not the latest charge %s of PaymentIntent %s", ch.ID, pi.LatestCharge.ID, pi.ID)}
	}
	switch {
	case ch.Paid:
		return released
	case ch.Status == chargePending:
		return verdict{state: payonce.LookupProcessing, message: "stripe: canceled PaymentIntent has a pending charge " + ch.ID}
	case ch.Status == chargeFailed:
		return never
	default:
		return verdict{unknown: "charge status " + strconv.Quote(ch.Status)}
	}
}

// captureVerdict maps the PaymentIntent a capture acted on.
//
//	succeeded (amount_received > 0)   succeeded
//	processing                        processing
//	requires_capture                  not found: still only authorized, and a resend with the same key completes it
//	canceled, requires_*              failed: nothing to capture; Stripe refuses a capture in these states
//	anything else                     unknown
func captureVerdict(pi paymentIntent) verdict {
	switch pi.Status {
	case piSucceeded:
		if pi.AmountReceived <= 0 {
			return verdict{unknown: fmt.Sprintf("PaymentIntent succeeded with amount_received %d", pi.AmountReceived)}
		}
		return verdict{state: payonce.LookupSucceeded}
	case piProcessing:
		return verdict{state: payonce.LookupProcessing}
	case piRequiresCapture:
		return verdict{state: payonce.LookupNotFound}
	case piCanceled, piRequiresPaymentMethod, piRequiresAction, piRequiresConfirmation:
		return verdict{state: payonce.LookupFailed, code: codeUnexpectedState, message: "stripe: PaymentIntent is " + pi.Status}
	default:
		return verdict{unknown: "PaymentIntent status " + strconv.Quote(pi.Status)}
	}
}

// cancelVerdict maps the PaymentIntent a cancel acted on.
//
//	canceled              succeeded
//	succeeded             failed: captured, it can no longer be canceled (it needs a refund)
//	requires_*, processing   not found: the cancel did not happen yet
//	anything else         unknown
func cancelVerdict(pi paymentIntent) verdict {
	switch pi.Status {
	case piCanceled:
		return verdict{state: payonce.LookupSucceeded}
	case piSucceeded:
		return verdict{state: payonce.LookupFailed, code: codeUnexpectedState,
			message: "stripe: PaymentIntent is succeeded and can no longer be canceled"}
	case piRequiresCapture, piRequiresPaymentMethod, piRequiresAction, piRequiresConfirmation, piProcessing:
		return verdict{state: payonce.LookupNotFound}
	default:
		return verdict{unknown: "PaymentIntent status " + strconv.Quote(pi.Status)}
	}
}

// refundVerdict maps a Refund. Its statuses: "This can be pending,
// requires_action, succeeded, failed, or canceled" (API reference, Refund
// object).
func refundVerdict(rf refund) verdict {
	switch rf.Status {
	case refundSucceeded:
		return verdict{state: payonce.LookupSucceeded}
	case refundPending, refundRequiresAction:
		// Accepted; the refund finishes (or fails) later.
		return verdict{state: payonce.LookupProcessing}
	case refundFailed, refundCanceled:
		v := verdict{state: payonce.LookupFailed, code: rf.FailureReason, message: "stripe: refund " + rf.Status}
		if v.code == "" {
			v.code = "refund_" + rf.Status
		}
		return v
	default:
		return verdict{unknown: "refund status " + strconv.Quote(rf.Status)}
	}
}

// createdBelongs checks an object the operation created (the charge's
// PaymentIntent, the refund): it must carry the operation id payonce wrote
// in its metadata, and the amount and currency requested. A missing
// payonce_op is a contradiction too: payonce writes it on every object it
// creates, so an object without it is not this operation's.
func createdBelongs(r payonce.Request, opID string, md metadata, amount int64, currency string) string {
	got := md.get(MetaOperation)
	if got == "" && opID != "" {
		return fmt.Sprintf("the provider's object has no %s metadata (want %q)", MetaOperation, opID)
	}
	return adapterkit.Belongs(r, opID, got, amount, currency)
}

// chargeBelongs checks the PaymentIntent of a charge: operation id, amount,
// currency (Stripe's currency codes are lower case; the comparison ignores
// case).
func chargeBelongs(opID string, r payonce.Request, pi paymentIntent) string {
	return createdBelongs(r, opID, pi.Metadata, pi.Amount, pi.Currency)
}

// refundBelongs checks a Refund: operation id, amount when the request
// fixed one, currency, and the PaymentIntent it refunds.
func refundBelongs(opID string, r payonce.Request, rf refund) string {
	if why := createdBelongs(r, opID, rf.Metadata, rf.Amount, rf.Currency); why != "" {
		return why
	}
	if r.PaymentRef != "" && rf.PaymentIntent.ID != "" && rf.PaymentIntent.ID != r.PaymentRef {
		return fmt.Sprintf("the refund is of PaymentIntent %q, not %q", rf.PaymentIntent.ID, r.PaymentRef)
	}
	return ""
}

// actedOnBelongs checks the PaymentIntent a capture or cancel acted on
// (ref): it is that PaymentIntent, in the currency requested, and a
// captured one received the amount the capture fixed (a capture's amount is
// amount_to_capture; 0 captures the whole authorization). Its metadata is
// the charge's, not this operation's, so the operation id is not checked.
func actedOnBelongs(r payonce.Request, ref string, pi paymentIntent, capture bool) string {
	if ref != "" && pi.ID != ref {
		return fmt.Sprintf("the answer is PaymentIntent %q, not %q", pi.ID, ref)
	}
	got := int64(0)
	if capture && pi.Status == piSucceeded {
		got = pi.AmountReceived
	} else {
		r.Amount = 0
	}
	return adapterkit.Belongs(r, "", "", got, pi.Currency)
}
