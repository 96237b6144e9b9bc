package stripe

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Replayed reports whether Stripe replayed this answer from its idempotency
// store: "To identify a previously executed response that's being replayed
// from the server, look for the header Idempotent-Replayed: true"
// (docs.stripe.com/error-low-level, Sending idempotency keys). Stripe
// replays the saved status code and body of the first request for a key,
// 500 errors included (docs.stripe.com/api/idempotent_requests), so a
// replayed 5xx is that stored answer, not a new failure. The status does
// not matter: any replayed answer carries the header. Replayed implements
// payonce.ReplayDetector; Classify uses it for Outcome.Replayed.
func (p *Provider) Replayed(_ int, header http.Header) bool {
	return strings.EqualFold(strings.TrimSpace(header.Get("Idempotent-Replayed")), "true")
}

// classifySuccess reads a 2xx answer. Whatever cannot be understood is
// maybe_sent: Stripe did answer 2xx, so something may have happened. An
// object that does not belong to the request (another operation id,
// amount, currency or PaymentIntent) is maybe_sent with Contradiction: the
// client sends the operation to review and never records it succeeded or
// failed on that object.
func (p *Provider) classifySuccess(r payonce.SendRequest, o payonce.Outcome, body []byte) payonce.Outcome {
	if r.Request.Kind == payonce.KindRefund {
		rf, err := decodeRefund(body)
		if err != nil {
			return unreadableAnswer(o, err.Error())
		}
		o.ProviderRef = rf.ID
		if why := refundBelongs(r.OperationID, r.Request, rf); why != "" {
			return contradictedAnswer(o, p.scrub(why))
		}
		v := refundVerdict(rf)
		if v.unknown != "" {
			return unreadableAnswer(o, v.unknown)
		}
		return v.outcome(o, p)
	}

	pi, err := decodePaymentIntent(body)
	if err != nil {
		return unreadableAnswer(o, err.Error())
	}
	o.ProviderRef = pi.ID
	var v verdict
	switch r.Request.Kind {
	case payonce.KindCharge:
		if why := chargeBelongs(r.OperationID, r.Request, pi); why != "" {
			return contradictedAnswer(o, p.scrub(why))
		}
		// A create-and-confirm answer never embeds the latest charge as an
		// object (the request does not expand it), so a canceled
		// PaymentIntent with a charge stays undecided here; the lookup
		// reads the charge.
		v = chargeVerdict(pi, nil)
	case payonce.KindCapture:
		if why := actedOnBelongs(r.Request, r.Request.PaymentRef, pi, true); why != "" {
			return contradictedAnswer(o, p.scrub(why))
		}
		v = captureVerdict(pi)
		if v.state != payonce.LookupSucceeded && v.state != payonce.LookupProcessing {
			// A 2xx to a capture whose PaymentIntent is not captured is
			// not an answer Stripe gives; its meaning is unknown.
			return unreadableAnswer(o, "captured PaymentIntent has status "+strconv.Quote(pi.Status))
		}
	case payonce.KindCancel:
		if why := actedOnBelongs(r.Request, r.Request.PaymentRef, pi, false); why != "" {
			return contradictedAnswer(o, p.scrub(why))
		}
		v = cancelVerdict(pi)
		if v.state != payonce.LookupSucceeded {
			return unreadableAnswer(o, "canceled PaymentIntent has status "+strconv.Quote(pi.Status))
		}
	default:
		return unreadableAnswer(o, adapterkit.UnknownKind(r.Request.Kind))
	}
	switch {
	case v.unknown != "":
		return unreadableAnswer(o, v.unknown)
	case v.needCharge != "":
		// Undecided until the charge is read: maybe_sent, and the lookup
		// (which reads it) settles the operation.
		o.Class = ledger.OutcomeMaybeSent
		o.Message = p.scrub(v.message)
		return o
	}
	return v.outcome(o, p)
}

// unreadableAnswer is adapterkit.Unreadable for Stripe; what must already be
// scrubbed.
func unreadableAnswer(o payonce.Outcome, what string) payonce.Outcome {
	return adapterkit.Unreadable("stripe", o, what)
}

// contradictedAnswer is a 2xx answer whose object belongs to another request
// (adapterkit.Contradicted): maybe_sent, why (already scrubbed) as its
// Contradiction.
func contradictedAnswer(o payonce.Outcome, why string) payonce.Outcome {
	return adapterkit.Contradicted(o, ledger.OutcomeMaybeSent, why, "stripe: the answer does not belong to this request")
}

// answers is how Stripe's answers classify: the Request-Id header, the
// Idempotent-Replayed marker, and for answers that are not 2xx the table
// below, first matching row first; anything else (500, 502, 503, 504 and any status
// not named here) is maybe_sent.
//
// 5xx: Stripe stores 500s under the key and replays them, and says to
// treat them as indeterminate. A 502/503/504 may come from a proxy or
// load balancer after Stripe received the request. 503 is NOT taken as
// "not sent", although some providers use it for "rejected before
// processing": not_sent leaves the key window closed, so if money did
// move, a resend made later could fall outside Stripe's 24 h memory of
// the key and charge again. A wrong maybe_sent costs one lookup.
func (p *Provider) answers() adapterkit.Answer[apiErrorBody] {
	retryAfter := adapterkit.RetryAfterHeader[apiErrorBody](p.now)
	return adapterkit.Answer[apiErrorBody]{RequestID: "Request-Id", Replayed: p.Replayed,
		Success: p.classifySuccess, Error: p.readError, Table: []adapterkit.Rule[apiErrorBody]{
			// Another request with this key is still running at Stripe (409).
			// Matched on the code for any 4xx: some clients have seen the code
			// under another status, and answering "refused" while the first
			// request may still move money would be wrong.
			{When: func(status int, e *apiErrorBody) bool {
				return e != nil && e.Code == codeIdempotencyKeyInUse && status >= 400 && status < 500
			}, Class: ledger.OutcomeKeyInUse},
			// Stripe holds this key with other parameters (or another
			// endpoint): the ledger and Stripe disagree.
			{When: func(status int, e *apiErrorBody) bool {
				return status == http.StatusBadRequest && e != nil && e.Type == errTypeIdempotency
			}, Class: ledger.OutcomeKeyMismatch},
			// 402: the parameters were valid but the payment failed (a decline).
			// Definitive; error.payment_intent names the PaymentIntent.
			{When: adapterkit.Status[apiErrorBody](http.StatusPaymentRequired), Class: ledger.OutcomeRefused},
			// 400, 401, 403, 404: invalid_request_error (bad parameters, wrong
			// state, no such object), a bad API key, missing permissions.
			// Nothing was done, and resending the same bytes gets the same
			// answer: never retried.
			{When: adapterkit.Refusal[apiErrorBody](), Class: ledger.OutcomeRefused},
			// Stripe's rate and concurrency limiters: "a request that's rate
			// limited with a 429 can produce a different result with the same
			// idempotency key because rate limiters run before the API's
			// idempotency layer" (docs.stripe.com/error-low-level, Content
			// errors; error code rate_limit: "Too many requests hit the API too
			// quickly", docs.stripe.com/error-codes). Nothing was processed and
			// nothing stored for the key: not sent, and the client waits
			// RetryAfter. A 429 without an error body (or without a code) is
			// taken as a limiter's too: nothing else is documented to answer
			// 429 without a code.
			{When: func(status int, e *apiErrorBody) bool {
				return status == http.StatusTooManyRequests && (e == nil || e.Code == "" || e.Code == codeRateLimit)
			}, Class: ledger.OutcomeNotSent, Then: func(o *payonce.Outcome, header http.Header, e *apiErrorBody) {
				retryAfter(o, header, e)
				if o.Code == "" {
					o.Code = codeRateLimit
				}
			}},
			// lock_timeout: "The Stripe API locks objects on some operations
			// ... The error above is caused by a request trying to acquire a
			// lock that's already held elsewhere, and timing out after it
			// couldn't be acquired in time" (docs.stripe.com/rate-limits,
			// Object lock timeouts). Stripe does not say that this happens
			// before the idempotency layer, or that nothing of the request was
			// done or stored; retrying it (as the SDKs do) is safe only because
			// the key protects the retry. So it is maybe_sent, like any other
			// or unknown code under 429: a wrong not_sent would take the
			// attempt out of the key window (docs/ADAPTERS.md, rule 3).
			{When: adapterkit.Status[apiErrorBody](http.StatusTooManyRequests), Class: ledger.OutcomeMaybeSent, Then: retryAfter},
			// A 409 other than idempotency_key_in_use conflicts with another
			// request in a way Stripe does not spell out; whether this request
			// did anything is unknown, so the operation is looked up.
			{When: adapterkit.Status[apiErrorBody](http.StatusConflict), Class: ledger.OutcomeMaybeSent},
		}}
}

// Classify reads Stripe's answer to one attempt:
//
//	2xx, object readable        success / success+Processing / refused, by object status
//	2xx, object of another op   maybe_sent with Contradiction (review)
//	2xx, object unreadable      maybe_sent
//	4xx code idempotency_key_in_use (normally 409)   key_in_use
//	400 type idempotency_error  key_mismatch
//	400, 401, 403, 404          refused
//	402 (card_error)            refused, with decline details
//	409 (other)                 maybe_sent
//	429 code rate_limit, or no code   not_sent, with RetryAfter
//	429 lock_timeout, other code      maybe_sent, with RetryAfter
//	5xx and anything else       maybe_sent
//
// Every Outcome carries HTTPStatus, RequestID (Request-Id header) and
// Replayed (Idempotent-Replayed: true, see Replayed). Messages come from
// Stripe's error JSON with anything resembling an API key removed.
func (p *Provider) Classify(r payonce.SendRequest, status int, header http.Header, body []byte) payonce.Outcome {
	return p.answer.Classify(r, status, header, body)
}
