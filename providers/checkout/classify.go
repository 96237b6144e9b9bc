package checkout

import (
	"fmt"
	"net/http"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// classifySuccess reads a 2xx answer. Whatever cannot be understood is
// maybe_sent: Checkout.com answered 2xx, so something may have happened.
func (p *Provider) classifySuccess(r payonce.SendRequest, o payonce.Outcome, body []byte) payonce.Outcome {
	switch r.Request.Kind {
	case payonce.KindCharge:
		pm, err := decodePayment(body)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		o.ProviderRef = pm.ID
		if why := paymentContradiction(r.Request, r.OperationID, pm); why != "" {
			return p.contradictedAnswer(o, why)
		}
		return p.chargeState(pm).Outcome("checkout", o)
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		a, err := decodeAccepted(body)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		if a.ID != "" || a.Status != "" {
			// A payment (id, status) where an accepted action was expected:
			// the key answered for another request.
			o.ProviderRef = a.ID
			return p.contradictedAnswer(o, fmt.Sprintf("the provider's answer is payment %q (status %q), not an accepted %s", a.ID, a.Status, r.Request.Kind))
		}
		o.ProviderRef = a.ActionID
		if why := adapterkit.Belongs(payonce.Request{}, r.OperationID, a.Reference, 0, ""); why != "" {
			return p.contradictedAnswer(o, why)
		}
		// 202 Accepted: Checkout.com has queued the action; it can still
		// be declined. The operation stays unknown until a lookup of the
		// payment's actions finds it approved or declined.
		o.Class = ledger.OutcomeSuccess
		o.Processing = true
		return o
	}
	return p.unreadableAnswer(o, adapterkit.UnknownKind(r.Request.Kind))
}

// unreadableAnswer is adapterkit.Unreadable for Checkout.com, what scrubbed.
func (p *Provider) unreadableAnswer(o payonce.Outcome, what string) payonce.Outcome {
	return adapterkit.Unreadable("checkout", o, p.scrub(what))
}

// contradictedAnswer is a 2xx answer whose object belongs to another request
// (adapterkit.Contradicted): key_mismatch, why scrubbed as its
// Contradiction.
func (p *Provider) contradictedAnswer(o payonce.Outcome, why string) payonce.Outcome {
	why = p.scrub(why)
	return adapterkit.Contradicted(o, ledger.OutcomeKeyMismatch, why, "checkout: "+why)
}

// answers is how Checkout.com's answers classify: the Cko-Request-Id
// header, no replay marker, and for answers that are not 2xx the table
// below, first matching row first. Anything else (500, 502, 503, 504 and any
// status not named here) is maybe_sent: the payment may have been made,
// and Checkout.com did not keep the key. Look up before anything is sent
// again.
func (p *Provider) answers() adapterkit.Answer[apiError] {
	retryAfter := adapterkit.RetryAfterHeader[apiError](p.now)
	return adapterkit.Answer[apiError]{RequestID: "Cko-Request-Id", Success: p.classifySuccess, Error: p.readError,
		Table: []adapterkit.Rule[apiError]{
			// "Conflict with another request being processed": the first
			// request with this key is still running; it may yet move money.
			// (Checkout.com answered 429 in that case before; now 409:
			// support.checkout.com "Why did I receive a 409 HTTP response to my
			// idempotent API request instead of 429?".)
			{When: adapterkit.Status[apiError](http.StatusConflict), Class: ledger.OutcomeKeyInUse, Then: retryAfter},
			// The same case as Checkout.com's public idempotency pages still
			// describe it: "If we detect concurrent requests with the same
			// idempotency key, only one request will be processed and the
			// other requests will return a 429 Too many requests response"
			// (https://www.checkout.com/docs/developer-resources/api/idempotency,
			// 2022-2024), whose body the API reference gives as error_codes
			// ["duplicate_request"] (POST /payments, 429 "Too many requests or
			// duplicate request detected": checkout/checkout-api-reference,
			// nas_spec/paths/payments.yaml). A 429 that says so, or that names
			// the idempotency key, is the key in flight: key_in_use, never the
			// key_mismatch row below (nothing says another request holds the
			// key) and never not_sent (the first request may yet move money).
			// duplicate_request under any other 4xx is read the same way, not
			// as a refusal: it says an earlier request with this key exists,
			// which is the opposite of "nothing was done".
			{When: func(status int, e *apiError) bool {
				return e != nil && ((status == http.StatusTooManyRequests && e.namesIdempotencyKey()) ||
					(status >= 400 && status < 500 && e.duplicateRequest()))
			}, Class: ledger.OutcomeKeyInUse, Then: retryAfter},
			// Undocumented: see Classify. Review, not failed.
			{When: func(status int, e *apiError) bool {
				return status >= 400 && status < 500 && e != nil && e.namesIdempotencyKey()
			},
				Class: ledger.OutcomeKeyMismatch},
			// 400, 401, 403, 404, 422: invalid request (422 request_invalid
			// with error_codes), bad key, action not allowed (capture or void
			// of a payment in the wrong state), no such payment. Nothing was
			// done and, since Checkout.com does not cache 4xx, a resend would
			// be judged anew and refused the same way: never retried.
			{When: adapterkit.Refusal[apiError](http.StatusUnprocessableEntity), Class: ledger.OutcomeRefused},
			// Any other 429: rate limiting ("The 429 – Too many requests
			// response now only refers to rate limit issues", the support
			// article above), or an in-flight key answered without the
			// duplicate_request body: the two cannot be told apart. Checkout.com
			// does not document that its limiter runs before the request is
			// processed, and not_sent would let the next attempt go out
			// without a lookup; if the first request then ended in a 5xx
			// after the payment was made, that attempt would charge again.
			// maybe_sent costs one lookup.
			adapterkit.RateLimited(codeRateLimited, retryAfter),
		}}
}

// Classify reads Checkout.com's answer to one attempt:
//
//	2xx charge, payment readable    by status and approved (the rules shared with
//	                                Lookup): approved → success; Pending, Retry
//	                                Scheduled → success+Processing; Declined, or
//	                                Canceled/Expired unapproved → refused
//	                                (DeclineCode = response_code)
//	2xx capture/void/refund         202 with action_id → success+Processing (accepted, not done)
//	2xx of another request          key_mismatch with Contradiction: another
//	                                reference, amount or currency (see below)
//	2xx unreadable                  maybe_sent
//	409 (the key's request runs)    key_in_use
//	4xx duplicate_request           key_in_use (the same, as older pages say it:
//	                                429 with error_codes duplicate_request)
//	4xx naming the idempotency key  key_mismatch (never documented; see below);
//	                                a 429 naming it is key_in_use
//	400, 401, 403, 404, 422         refused
//	any other 429                   maybe_sent, with RetryAfter
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
	return p.answers().Classify(r, status, header, body)
}
