package checkout

import (
	"net/http"
	"strconv"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Classify reads Checkout.com's answer to one attempt:
//
//	2xx charge, payment readable    approved → success; Pending → success+Processing;
//	                                Declined → refused (DeclineCode = response_code)
//	2xx capture/void/refund         202 with action_id → success+Processing (accepted, not done)
//	2xx unreadable                  maybe_sent
//	409 (the key's request runs)    key_in_use
//	400, 401, 403, 404, 422         refused
//	429                             maybe_sent, with RetryAfter
//	5xx and anything else           maybe_sent
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
// looks like a secret key removed. Checkout.com does not mark replays.
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
	switch status {
	case http.StatusConflict:
		// "Conflict with another request being processed": the first
		// request with this key is still running; it may yet move money.
		o.Class = ledger.OutcomeKeyInUse
		o.RetryAfter = adapterkit.RetryAfter(header.Get("Retry-After"), p.now)
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusNotFound, http.StatusUnprocessableEntity:
		// Invalid request (422 request_invalid with error_codes), bad key,
		// action not allowed (capture or void of a payment in the wrong
		// state), no such payment. Nothing was done and, since Checkout.com
		// does not cache 4xx, a resend would be judged anew and refused the
		// same way: never retried.
		o.Class = ledger.OutcomeRefused
	case http.StatusTooManyRequests:
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
	switch r.Request.Kind {
	case payonce.KindCharge:
		pm, err := decodePayment(body)
		if err != nil {
			return unreadable(err.Error())
		}
		o.ProviderRef = pm.ID
		switch {
		case pm.Status == statusPending:
			// Waiting for something (3-D Secure, an asynchronous method):
			// the payment may still complete. Looked up later.
			o.Class = ledger.OutcomeSuccess
			o.Processing = true
		case pm.Status == statusDeclined || (!pm.approved() && pm.Approved != nil && isFinalFailure(pm.Status)):
			o.Class = ledger.OutcomeRefused
			o.Code = codeDeclined
			o.DeclineCode = p.scrub(pm.ResponseCode)
			o.Message = p.scrub(pm.ResponseSummary)
			if o.Message == "" {
				o.Message = "checkout: payment " + p.scrub(pm.Status)
			}
		case pm.approved() && isAuthorized(pm.Status):
			o.Class = ledger.OutcomeSuccess
		default:
			return unreadable("payment status " + strconv.Quote(pm.Status) + ", approved " + strconv.FormatBool(pm.approved()))
		}
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		a, err := decodeAccepted(body)
		if err != nil {
			return unreadable(err.Error())
		}
		// 202 Accepted: Checkout.com has queued the action; it can still
		// be declined. The operation stays unknown until a lookup of the
		// payment's actions finds it approved or declined.
		o.ProviderRef = a.ActionID
		o.Class = ledger.OutcomeSuccess
		o.Processing = true
	default:
		return unreadable("answer to an unknown kind " + strconv.Quote(string(r.Request.Kind)))
	}
	return o
}

// isAuthorized reports the statuses of a payment whose authorization was
// approved (whatever happened to the money afterwards).
func isAuthorized(status string) bool {
	switch status {
	case statusAuthorized, statusCaptured, statusPartiallyCaptured, statusPartiallyRefunded,
		statusRefunded, statusVoided, statusPaid:
		return true
	}
	return false
}

// isFinalFailure reports the statuses in which an unapproved payment ends.
func isFinalFailure(status string) bool {
	switch status {
	case statusDeclined, statusCanceled, statusExpired:
		return true
	}
	return false
}
