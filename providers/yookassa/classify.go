package yookassa

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

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
// A decline is a 200 whose payment is canceled: refused, with DeclineCode =
// cancellation_details.reason (insufficient_funds, card_expired, ...) and
// Code "canceled". RequestID is the error object's id (YooKassa sends no
// request id header). Messages have the credentials removed.
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
	if status >= 200 && status < 300 {
		return p.classifySuccess(r, o, body)
	}

	e := decodeError(body)
	if e != nil {
		o.RequestID = e.ID
		o.Code = e.Code
		o.Message = p.scrub(e.Description)
		if e.Parameter != "" && o.Message != "" {
			o.Message += " (parameter " + e.Parameter + ")"
		}
	}
	switch {
	case status == http.StatusBadRequest && e != nil && keyDuplicated(e):
		// YooKassa holds this key with another request body: the ledger and
		// YooKassa disagree. Nothing was done by this request.
		o.Class = ledger.OutcomeKeyMismatch
	case status == http.StatusBadRequest, status == http.StatusUnauthorized,
		status == http.StatusForbidden, status == http.StatusNotFound:
		// invalid_request / not_supported (bad parameters, wrong payment
		// status, amount too large), invalid_credentials, forbidden,
		// not_found. Nothing was done, and resending the same bytes gets the
		// same answer: never retried.
		o.Class = ledger.OutcomeRefused
	case status == http.StatusTooManyRequests:
		// YooKassa documents 429 only as "the limit of requests per time
		// unit has been exceeded"; it does not say that the limiter runs
		// before the request is processed or before the key is recorded.
		// not_sent would close the key window on a request that may have
		// moved money, and a later resend could then fall outside the 24 h
		// memory of the key. So: maybe_sent (it costs one lookup), and the
		// client waits retry_after.
		o.Class = ledger.OutcomeMaybeSent
		if o.Code == "" {
			o.Code = codeTooManyRequests
		}
		o.RetryAfter = e.retryAfter()
	default:
		// 500: YooKassa's own word is "the result is unknown; repeat the
		// request with the same Idempotence-Key" (it may still cancel the
		// operation on its side). 502/503/504 may come from a proxy after
		// YooKassa received the request. Anything else is not understood.
		o.Class = ledger.OutcomeMaybeSent
	}
	return o
}

// keyDuplicated recognises YooKassa's answer to a key reused with another
// body: invalid_request, "Idempotence key duplicated", parameter
// Idempotence-Key. Other errors about the header (missing, too long) are
// ordinary refusals.
func keyDuplicated(e *apiError) bool {
	if e.Code != codeInvalidRequest {
		return false
	}
	d := strings.ToLower(e.Description)
	return strings.Contains(d, strings.ToLower(descKeyDuplicated)) ||
		(strings.EqualFold(e.Parameter, paramIdempotenceKey) && strings.Contains(d, "duplicat"))
}

// classifySuccess reads a 2xx answer. Whatever cannot be understood is
// maybe_sent: YooKassa answered 2xx, so something may have happened.
func (p *Provider) classifySuccess(r payonce.SendRequest, o payonce.Outcome, body []byte) payonce.Outcome {
	unreadable := func(what string) payonce.Outcome {
		o.Class = ledger.OutcomeMaybeSent
		o.Message = "yookassa: unreadable 2xx answer: " + p.scrub(what)
		return o
	}

	if r.Request.Kind == payonce.KindRefund {
		rf, err := decodeRefund(body)
		if err != nil {
			return unreadable(err.Error())
		}
		o.ProviderRef = rf.ID
		switch rf.Status {
		case statusSucceeded:
			o.Class = ledger.OutcomeSuccess
		case statusPending:
			o.Class = ledger.OutcomeSuccess
			o.Processing = true
		case statusCanceled:
			o.Class = ledger.OutcomeRefused
			o.Code = codeRefundCanceled
			o.Message = "yookassa: refund canceled"
			if cd := rf.CancellationDetails; cd != nil {
				o.DeclineCode = cd.Reason
				o.Message = p.scrub("yookassa: refund canceled by " + cd.Party + ": " + cd.Reason)
			}
		default:
			return unreadable("refund status " + strconv.Quote(rf.Status))
		}
		return o
	}

	pm, err := decodePayment(body)
	if err != nil {
		return unreadable(err.Error())
	}
	o.ProviderRef = pm.ID
	switch r.Request.Kind {
	case payonce.KindCharge:
		switch pm.Status {
		case statusSucceeded, statusWaitingForCapture:
			o.Class = ledger.OutcomeSuccess
		case statusPending:
			// Created, not finished (the bank has not answered, or the
			// payment waits for a confirmation that a server-side charge
			// cannot give and will expire into canceled). Looked up later.
			o.Class = ledger.OutcomeSuccess
			o.Processing = true
		case statusCanceled:
			// The decline: no money moved.
			o.Class = ledger.OutcomeRefused
			o.Code = codeCanceled
			o.Message = "yookassa: payment canceled"
			if cd := pm.CancellationDetails; cd != nil {
				o.DeclineCode = cd.Reason
				o.Message = p.scrub("yookassa: payment canceled by " + cd.Party + ": " + cd.Reason)
			}
		default:
			return unreadable("payment status " + strconv.Quote(pm.Status))
		}
	case payonce.KindCapture:
		switch pm.Status {
		case statusSucceeded:
			o.Class = ledger.OutcomeSuccess
		case statusCanceled:
			// The authorization was gone (expired or canceled): nothing to
			// capture, nothing captured.
			o.Class = ledger.OutcomeRefused
			o.Code = codeCanceled
			if cd := pm.CancellationDetails; cd != nil {
				o.DeclineCode = cd.Reason
			}
			o.Message = "yookassa: payment is canceled"
		default:
			return unreadable("captured payment has status " + strconv.Quote(pm.Status))
		}
	case payonce.KindCancel:
		if pm.Status != statusCanceled {
			return unreadable("canceled payment has status " + strconv.Quote(pm.Status))
		}
		o.Class = ledger.OutcomeSuccess
	default:
		return unreadable("answer to an unknown kind " + strconv.Quote(string(r.Request.Kind)))
	}
	return o
}
