package checkout

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Classify reads Checkout.com's answer to one attempt:
//
//	2xx charge, payment readable    by status and approved (states.go, shared with
//	                                Lookup): approved → success; Pending, Retry
//	                                Scheduled → success+Processing; Declined, or
//	                                Canceled/Expired unapproved → refused
//	                                (DeclineCode = response_code)
//	2xx capture/void/refund         202 with action_id → success+Processing (accepted, not done)
//	2xx of another request          key_mismatch with Contradiction: another
//	                                reference, amount or currency (see below)
//	2xx unreadable                  maybe_sent
//	409 (the key's request runs)    key_in_use
//	4xx naming the idempotency key  key_mismatch (never documented; see below)
//	400, 401, 403, 404, 422         refused
//	429                             maybe_sent, with RetryAfter
//	5xx and anything else           maybe_sent
//
// Same key, another request. Checkout.com documents only that "subsequent
// requests with the same key will return the same HTTP status code and
// response body as the original request, providing that it was processed
// successfully" (https://www.checkout.com/docs/developer-resources/api/idempotency);
// it documents no error for a repeated Cko-Idempotency-Key with another
// body, and its API reference lists none (checkout/checkout-api-reference,
// 2021: POST /payments answers 201, 202, 401, 422, 429 "too many requests
// or duplicate request detected", 502). The safe assumption
// is that it replays the first request's 2xx answer. Every 2xx is
// therefore checked against this request (adapterkit.Belongs: the
// reference and payonce_op the adapter writes, the amount, the currency):
// an answer that belongs to another request is key_mismatch with
// Outcome.Contradiction set, for review; never a success or a refusal. A
// 4xx whose error_type or error_codes name the idempotency key, which
// Checkout.com does not document either, is key_mismatch too: the key may
// be held by a request that moved money, so it is not recorded as failed.
//
// Why maybe_sent matters more here than anywhere: Checkout.com caches the
// answer under Cko-Idempotency-Key only when the first request returned 2xx.
// After a 5xx, even one produced after the payment was made, the same key is
// processed as a new payment. A resend with the same key is therefore NOT
// protected by the key after a 5xx; only the lookup that the client always
// runs before resending a maybe_sent operation (GET /payments?reference=,
// or the payment's actions) prevents the second charge. So nothing that may
// have reached Checkout.com is ever classified not_sent, and a "not found"
// is believed only after SettleLag (see Config.SettleLag).
//
// RequestID is the Cko-Request-Id header (or the error body's request_id).
// Messages come from response_summary or error_codes, with anything that
// looks like a secret key removed. Checkout.com documents no marker of a
// replayed answer (neither the idempotency page nor the official SDKs name
// a header; a duplicate may even come back as 202: support article
// "Duplicate payment request responses"), so Outcome.Replayed is never set
// and the adapter does not implement payonce.ReplayDetector.
func (p *Provider) Classify(r payonce.SendRequest, status int, header http.Header, body []byte) payonce.Outcome {
	o := payonce.Outcome{HTTPStatus: status, RequestID: header.Get("Cko-Request-Id")}
	if status >= 200 && status < 300 {
		return p.classifySuccess(r, o, body)
	}
	e := decodeError(body)
	if e != nil {
		o.Code = p.scrub(e.ErrorType)
		o.Message = p.scrub(e.message())
		if o.RequestID == "" {
			o.RequestID = e.RequestID
		}
	}
	switch {
	case status == http.StatusConflict:
		// "Conflict with another request being processed": the first
		// request with this key is still running; it may yet move money.
		// (Checkout.com answered 429 in that case before; now 409:
		// support.checkout.com "Why did I receive a 409 HTTP response to my
		// idempotent API request instead of 429?".)
		o.Class = ledger.OutcomeKeyInUse
		o.RetryAfter = adapterkit.RetryAfter(header.Get("Retry-After"), p.now)
	case status >= 400 && status < 500 && e != nil && e.namesIdempotencyKey():
		// Undocumented: see above. Review, not failed.
		o.Class = ledger.OutcomeKeyMismatch
	case status == http.StatusBadRequest, status == http.StatusUnauthorized, status == http.StatusForbidden,
		status == http.StatusNotFound, status == http.StatusUnprocessableEntity:
		// Invalid request (422 request_invalid with error_codes), bad key,
		// action not allowed (capture or void of a payment in the wrong
		// state), no such payment. Nothing was done and, since Checkout.com
		// does not cache 4xx, a resend would be judged anew and refused the
		// same way: never retried.
		o.Class = ledger.OutcomeRefused
	case status == http.StatusTooManyRequests:
		// Checkout.com documents 429 as rate limiting, but it used to answer
		// 429 to a request whose key was still being processed (now 409),
		// and it does not document that the limiter runs before the
		// request is processed. not_sent would let the next attempt go out
		// without a lookup; if the first request then ended in a 5xx after
		// the payment was made, that attempt would charge again. maybe_sent
		// costs one lookup.
		o.Class = ledger.OutcomeMaybeSent
		if o.Code == "" {
			o.Code = codeRateLimited
		}
		o.RetryAfter = adapterkit.RetryAfter(header.Get("Retry-After"), p.now)
	default:
		// 500, 502, 503, 504 and anything not named above: the payment may
		// have been made, and Checkout.com did not keep the key. Look up
		// before anything is sent again.
		o.Class = ledger.OutcomeMaybeSent
	}
	return o
}

// classifySuccess reads a 2xx answer. Whatever cannot be understood is
// maybe_sent: Checkout.com answered 2xx, so something may have happened.
func (p *Provider) classifySuccess(r payonce.SendRequest, o payonce.Outcome, body []byte) payonce.Outcome {
	unreadable := func(what string) payonce.Outcome {
		o.Class = ledger.OutcomeMaybeSent
		o.Message = "checkout: unreadable 2xx answer: " + p.scrub(what)
		return o
	}
	contradicted := func(why string) payonce.Outcome {
		o.Class = ledger.OutcomeKeyMismatch
		o.Contradiction = p.scrub(why)
		o.Message = "checkout: " + o.Contradiction
		return o
	}
	switch r.Request.Kind {
	case payonce.KindCharge:
		pm, err := decodePayment(body)
		if err != nil {
			return unreadable(err.Error())
		}
		o.ProviderRef = pm.ID
		if why := paymentContradiction(r.Request, r.OperationID, pm); why != "" {
			return contradicted(why)
		}
		return p.chargeState(pm).Outcome("checkout", o)
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		a, err := decodeAccepted(body)
		if err != nil {
			return unreadable(err.Error())
		}
		if a.ID != "" || a.Status != "" {
			// A payment (id, status) where an accepted action was expected:
			// the key answered for another request.
			o.ProviderRef = a.ID
			return contradicted(fmt.Sprintf("the provider's answer is payment %q (status %q), not an accepted %s", a.ID, a.Status, r.Request.Kind))
		}
		o.ProviderRef = a.ActionID
		if why := adapterkit.Belongs(payonce.Request{}, r.OperationID, a.Reference, 0, ""); why != "" {
			return contradicted(why)
		}
		// 202 Accepted: Checkout.com has queued the action; it can still
		// be declined. The operation stays unknown until a lookup of the
		// payment's actions finds it approved or declined.
		o.Class = ledger.OutcomeSuccess
		o.Processing = true
		return o
	}
	return unreadable("answer to an unknown kind " + strconv.Quote(string(r.Request.Kind)))
}
