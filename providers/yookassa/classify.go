package yookassa

import (
	"net/http"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// answers is how YooKassa's answers classify: no request id header, no
// replay marker, and for answers that are not 2xx (nor 202) the table
// below, first matching row first. Anything else is maybe_sent: 500 is
// YooKassa's own "the result is unknown; repeat the request with the same
// Idempotence-Key" (it may still cancel the operation on its side);
// 502/503/504 may come from a proxy after YooKassa received the request;
// anything else is not understood.
func (p *Provider) answers() adapterkit.Answer[apiError] {
	return adapterkit.Answer[apiError]{Success: p.classifySuccess, Error: p.readError, Table: []adapterkit.Rule[apiError]{
		// YooKassa holds this key with another request body: the ledger and
		// YooKassa disagree. Nothing was done by this request.
		{When: func(status int, e *apiError) bool {
			return status == http.StatusBadRequest && e != nil && keyDuplicated(e)
		},
			Class: ledger.OutcomeKeyMismatch},
		// 400, 401, 403, 404: invalid_request / not_supported (bad parameters,
		// wrong payment status, amount too large), invalid_credentials,
		// forbidden, not_found. Nothing was done, and resending the same bytes
		// gets the same answer: never retried.
		{When: adapterkit.Refusal[apiError](), Class: ledger.OutcomeRefused},
		// YooKassa documents 429 only as "the limit of requests per time unit
		// has been exceeded"; it does not say that the limiter runs before the
		// request is processed or before the key is recorded. not_sent would
		// close the key window on a request that may have moved money, and a
		// later resend could then fall outside the 24 h memory of the key. So:
		// maybe_sent (it costs one lookup), and the client waits retry_after.
		adapterkit.RateLimited(codeTooManyRequests, func(o *payonce.Outcome, _ http.Header, e *apiError) {
			o.RetryAfter = e.retryAfter()
		}),
	}}
}

// classifySuccess reads a 2xx answer. Whatever cannot be understood is
// maybe_sent: YooKassa answered 2xx, so something may have happened. An
// answer that names an object of another operation, amount, currency or
// payment than this request's is key_mismatch with Contradiction set: the
// operation goes to review and is never recorded as succeeded or failed on
// it (YooKassa answers a key reused with another body with 400, so a 2xx
// carrying someone else's object means the key and the ledger disagree).
// The verdict on the object comes from states.go, which Lookup shares.
func (p *Provider) classifySuccess(r payonce.SendRequest, o payonce.Outcome, body []byte) payonce.Outcome {
	switch r.Request.Kind {
	case payonce.KindRefund:
		rf, err := decodeRefund(body)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		o.ProviderRef = rf.ID
		why, err := refundContradiction(r.Request, r.OperationID, rf)
		switch {
		case err != nil:
			return p.unreadableAnswer(o, err.Error())
		case why != "":
			return p.contradictedAnswer(o, why)
		}
		return p.refundState(rf).Outcome("yookassa", o)
	case payonce.KindCharge, payonce.KindCapture, payonce.KindCancel:
		pm, err := decodePayment(body)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		o.ProviderRef = pm.ID
		why, err := paymentContradiction(r.Request, r.OperationID, pm)
		switch {
		case err != nil:
			return p.unreadableAnswer(o, err.Error())
		case why != "":
			return p.contradictedAnswer(o, why)
		}
		return p.paymentState(r.Request.Kind, pm).Outcome("yookassa", o)
	}
	return p.unreadableAnswer(o, adapterkit.UnknownKind(r.Request.Kind))
}

// unreadableAnswer is adapterkit.Unreadable for YooKassa, what scrubbed.
func (p *Provider) unreadableAnswer(o payonce.Outcome, what string) payonce.Outcome {
	return adapterkit.Unreadable("yookassa", o, p.scrub(what))
}

// contradictedAnswer is a 2xx answer whose object belongs to another request
// (adapterkit.Contradicted): key_mismatch, why scrubbed as its
// Contradiction.
func (p *Provider) contradictedAnswer(o payonce.Outcome, why string) payonce.Outcome {
	why = p.scrub(why)
	return adapterkit.Contradicted(o, ledger.OutcomeKeyMismatch, why, "yookassa: "+why)
}

// Classify reads YooKassa's answer to one attempt:
//
//	2xx (not 202), object readable   success / success+Processing / refused, by status
//	2xx (not 202), unreadable        maybe_sent
//	202 (the key's request runs)     key_in_use, RetryAfter = retry_after (ms)
//	400 invalid_request "Idempotence key duplicated"   key_mismatch
//	400, 401, 403, 404               refused
//	429 too_many_requests            maybe_sent, RetryAfter = retry_after (ms)
//	500 and anything else            maybe_sent
//
// A decline is a 200 whose payment is canceled before authorization:
// refused, with DeclineCode = cancellation_details.reason
// (insufficient_funds, card_expired, ...) and Code "canceled". A payment
// canceled after authorization (canceled_by_merchant, expired_on_capture)
// answers a charge as a success, as Lookup reads it. A 2xx whose object is
// not this request's is key_mismatch with Contradiction set. RequestID is
// the error object's id (YooKassa sends no request id header). Messages
// have the credentials removed.
//
// YooKassa documents no header or field that marks a replayed answer
// (https://yookassa.ru/developers/using-api/interaction-format; the official
// yoomoney/yookassa-sdk-python reads no such header either), so
// Outcome.Replayed is never set and the adapter does not implement
// payonce.ReplayDetector.
func (p *Provider) Classify(r payonce.SendRequest, status int, header http.Header, body []byte) payonce.Outcome {
	o := payonce.Outcome{HTTPStatus: status}
	if status == http.StatusAccepted {
		// YooKassa accepted a request with this key and has not finished
		// it; the same key must be repeated after retry_after. It is not a
		// success: nothing says whether the payment will succeed.
		o.Class = ledger.OutcomeKeyInUse
		if e := decodeError(body); e != nil {
			o.RetryAfter = e.retryAfter()
			o.Message = p.scrub(e.Description)
			o.Code = e.Type
		}
		return o
	}
	return p.answers().Classify(r, status, header, body)
}
