package stripe

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Classify reads Stripe's answer to one attempt:
//
//	2xx, object readable        success / success+Processing / refused, by object status
//	2xx, object unreadable      maybe_sent
//	4xx code idempotency_key_in_use (normally 409)   key_in_use
//	400 type idempotency_error  key_mismatch
//	400, 401, 403, 404          refused
//	402 (card_error)            refused, with decline details
//	409 (other)                 maybe_sent
//	429                         not_sent, with RetryAfter
//	5xx and anything else       maybe_sent
//
// Every Outcome carries HTTPStatus, RequestID (Request-Id header) and
// Replayed (Idempotent-Replayed: true). Messages come from Stripe's error
// JSON with anything resembling an API key removed.
func (p *Provider) Classify(r payonce.SendRequest, status int, header http.Header, body []byte) payonce.Outcome {
	o := payonce.Outcome{
		HTTPStatus: status,
		RequestID:  header.Get("Request-Id"),
		Replayed:   strings.EqualFold(strings.TrimSpace(header.Get("Idempotent-Replayed")), "true"),
	}
	if status >= 200 && status < 300 {
		return p.classifySuccess(r, o, body)
	}

	e := decodeError(body)
	if e != nil {
		o.Code = e.Code
		o.DeclineCode = e.DeclineCode
		o.Message = p.scrub(e.Message)
		if e.PaymentIntent != nil {
			o.ProviderRef = e.PaymentIntent.ID
		}
	}

	switch {
	case e != nil && e.Code == codeIdempotencyKeyInUse && status >= 400 && status < 500:
		// Another request with this key is still running at Stripe (409).
		// Matched on the code for any 4xx: some clients have seen the code
		// under another status, and answering "refused" while the first
		// request may still move money would be wrong.
		o.Class = ledger.OutcomeKeyInUse
	case status == http.StatusBadRequest && e != nil && e.Type == errTypeIdempotency:
		// Stripe holds this key with other parameters (or another
		// endpoint): the ledger and Stripe disagree.
		o.Class = ledger.OutcomeKeyMismatch
	case status == http.StatusPaymentRequired:
		// 402: the parameters were valid but the payment failed (a decline).
		// Definitive; error.payment_intent names the PaymentIntent.
		o.Class = ledger.OutcomeRefused
	case status == http.StatusBadRequest, status == http.StatusUnauthorized,
		status == http.StatusForbidden, status == http.StatusNotFound:
		// invalid_request_error (bad parameters, wrong state, no such
		// object), a bad API key, missing permissions. Nothing was done, and
		// resending the same bytes gets the same answer: never retried.
		o.Class = ledger.OutcomeRefused
	case status == http.StatusTooManyRequests:
		// Stripe's rate limiters (and lock_timeout, raised when the object is
		// locked by another request before this one could act) run before
		// the idempotency layer: nothing was processed and nothing was stored
		// for the key, so a later attempt with the same key is a first
		// attempt. Not sent; the client waits RetryAfter.
		o.Class = ledger.OutcomeNotSent
		if o.Code == "" {
			o.Code = codeRateLimit
		}
		o.RetryAfter = adapterkit.RetryAfter(header.Get("Retry-After"), p.now)
	case status == http.StatusConflict:
		// A 409 other than idempotency_key_in_use conflicts with another
		// request in a way Stripe does not spell out; whether this request
		// did anything is unknown, so the operation is looked up.
		o.Class = ledger.OutcomeMaybeSent
	default:
		// 500, 502, 503, 504 and any status not named above: maybe sent.
		// Stripe stores 500s under the key and replays them, and says to
		// treat them as indeterminate. A 502/503/504 may come from a proxy or
		// load balancer after Stripe received the request. 503 is NOT taken
		// as "not sent", although some providers use it for "rejected before
		// processing": not_sent leaves the key window closed, so if money did
		// move, a resend made later could fall outside Stripe's 24 h memory
		// of the key and charge again. A wrong maybe_sent costs one lookup.
		o.Class = ledger.OutcomeMaybeSent
	}
	return o
}

// classifySuccess reads a 2xx answer. Whatever cannot be understood is
// maybe_sent: Stripe did answer 2xx, so something may have happened.
func (p *Provider) classifySuccess(r payonce.SendRequest, o payonce.Outcome, body []byte) payonce.Outcome {
	unreadable := func(what string) payonce.Outcome {
		o.Class = ledger.OutcomeMaybeSent
		o.Message = "stripe: unreadable 2xx answer: " + what
		return o
	}

	if r.Request.Kind == payonce.KindRefund {
		rf, err := decodeRefund(body)
		if err != nil {
			return unreadable(err.Error())
		}
		o.ProviderRef = rf.ID
		switch rf.Status {
		case refundSucceeded:
			o.Class = ledger.OutcomeSuccess
		case refundPending, refundRequiresAction:
			// Accepted; the refund finishes (or fails) later.
			o.Class = ledger.OutcomeSuccess
			o.Processing = true
		case refundFailed, refundCanceled:
			o.Class = ledger.OutcomeRefused
			o.Code = rf.FailureReason
			if o.Code == "" {
				o.Code = "refund_" + rf.Status
			}
			o.Message = "stripe: refund " + rf.Status
		default:
			return unreadable("refund status " + strconv.Quote(rf.Status))
		}
		return o
	}

	pi, err := decodePaymentIntent(body)
	if err != nil {
		return unreadable(err.Error())
	}
	o.ProviderRef = pi.ID
	switch r.Request.Kind {
	case payonce.KindCharge:
		switch pi.Status {
		case piSucceeded, piRequiresCapture:
			o.Class = ledger.OutcomeSuccess
		case piProcessing:
			o.Class = ledger.OutcomeSuccess
			o.Processing = true
		case piRequiresAction, piRequiresPaymentMethod, piRequiresConfirmation, piCanceled:
			// The PaymentIntent was created and confirmed but did not pay.
			// A server-side charge cannot complete it: requires_action needs
			// the customer (3-D Secure, a redirect) through the client
			// secret, which payonce never hands out; requires_payment_method
			// means the payment method failed; requires_confirmation and
			// canceled cannot move money without another call that payonce
			// does not make. The operation failed; no money moved.
			o.Class = ledger.OutcomeRefused
			o.Code = pi.Status
			o.Message = "stripe: PaymentIntent is " + pi.Status
			if lpe := pi.LastPaymentError; lpe != nil {
				o.DeclineCode = lpe.DeclineCode
				if lpe.Message != "" {
					o.Message = p.scrub(lpe.Message)
				}
			}
		default:
			return unreadable("PaymentIntent status " + strconv.Quote(pi.Status))
		}
	case payonce.KindCapture:
		switch pi.Status {
		case piSucceeded:
			o.Class = ledger.OutcomeSuccess
		case piProcessing:
			o.Class = ledger.OutcomeSuccess
			o.Processing = true
		default:
			return unreadable("captured PaymentIntent has status " + strconv.Quote(pi.Status))
		}
	case payonce.KindCancel:
		if pi.Status != piCanceled {
			return unreadable("canceled PaymentIntent has status " + strconv.Quote(pi.Status))
		}
		o.Class = ledger.OutcomeSuccess
	default:
		return unreadable("answer to an unknown kind " + strconv.Quote(string(r.Request.Kind)))
	}
	return o
}
