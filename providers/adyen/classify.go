package adyen

import (
	"net/http"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// classifySuccess reads a 2xx answer. Whatever cannot be understood is
// maybe_sent: Adyen answered 2xx, so something may have happened.
func (p *Provider) classifySuccess(r payonce.SendRequest, o payonce.Outcome, body []byte) payonce.Outcome {
	rp := adapterkit.Reply{Provider: "adyen", Scrub: p.scrub, Mismatch: ledger.OutcomeKeyMismatch}
	switch r.Request.Kind {
	case payonce.KindCharge:
		return adapterkit.Object(rp, o, body, decodePayment, func(pm paymentResponse) string { return pm.PspReference },
			func(pm paymentResponse) (string, error) {
				return paymentContradiction(r.Request, r.OperationID, pm), nil
			},
			func(pm paymentResponse, o payonce.Outcome) payonce.Outcome {
				return p.paymentState(pm).Outcome("adyen", o)
			})
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		return adapterkit.Object(rp, o, body, decodeModification, func(m modificationResponse) string { return m.PspReference },
			func(m modificationResponse) (string, error) {
				return modificationContradiction(r.Request, r.OperationID, m), nil
			},
			func(_ modificationResponse, o payonce.Outcome) payonce.Outcome {
				// 201 "received": Adyen has taken the modification, not
				// done it ("The status of your request. This will always
				// have the value received"). Its outcome comes only by the
				// CAPTURE, CANCELLATION or REFUND webhook, which names this
				// pspReference (ProviderRef): the operation stays unknown
				// until then.
				o.Class = ledger.OutcomeSuccess
				o.Processing = true
				return o
			})
	}
	return rp.Unreadable(o, adapterkit.UnknownKind(r.Request.Kind))
}

// transientHeader is the answer header with which Adyen marks an error
// that may be retried with the same idempotency key
// (https://docs.adyen.com/development-resources/api-idempotency, "Error
// handling"). The adapter relies on nothing it says: it changes no class
// (every 5xx is maybe_sent, and the client waits for the webhook, then
// resends with the same key either way); it is noted in the Message.
const transientHeader = "Transient-Error"

// answers is how Adyen's answers classify: no request id header (the error
// body's pspReference serves), no documented replay marker, and for answers
// that are not 2xx the table below, first matching row first. Anything
// else (500, 502, 503, 504 and any status not named here) is maybe_sent.
func (p *Provider) answers() adapterkit.Answer[apiError] {
	retryAfter := adapterkit.RetryAfterHeader[apiError](p.now)
	inProgress := func(o *payonce.Outcome, header http.Header, e *apiError) {
		if o.Code == "" {
			o.Code = errorCodeInProgress
		}
		retryAfter(o, header, e)
	}
	return adapterkit.Answer[apiError]{Success: p.classifySuccess, Error: p.readError,
		Table: []adapterkit.Rule[apiError]{
			// errorCode 704, "request already processed or in progress",
			// comes with 409 and with 422: the first request with this key
			// has not finished and may yet move money.
			{When: func(status int, e *apiError) bool {
				return status == http.StatusConflict || (e != nil && e.ErrorCode == errorCodeInProgress)
			}, Class: ledger.OutcomeKeyInUse, Then: inProgress},
			// Adyen documents no answer to a key reused with another
			// request: a 4xx that names the idempotency key is read as
			// key_mismatch, not as a refusal, because the key may be held
			// by a request that moved money. (Every 2xx is also checked
			// against the request: an answer replayed for another request
			// fails the belongs check and is key_mismatch too.)
			{When: func(status int, e *apiError) bool {
				return status >= 400 && status < 500 && e != nil && e.namesIdempotencyKey()
			}, Class: ledger.OutcomeKeyMismatch},
			// 400, 401, 403, 404, 422: invalid request (422 is "a request
			// validation error", CheckoutService-v71.json), bad API key or
			// no permission, no such payment, a modification the payment's
			// state does not allow. Nothing was done; never retried.
			{When: adapterkit.Refusal[apiError](http.StatusUnprocessableEntity), Class: ledger.OutcomeRefused},
			// Adyen does not document that its rate limiting runs before a
			// request is processed and before its key is stored: maybe_sent
			// (docs/ADAPTERS.md, rule 2).
			adapterkit.RateLimited(codeRateLimited, retryAfter),
		}}
}

// Classify reads Adyen's answer to one attempt:
//
//	2xx charge                      by resultCode (states.go): Authorised → success;
//	                                Refused, Cancelled, Error → refused (DeclineCode =
//	                                refusalReasonCode); Pending, Received →
//	                                success+Processing; RedirectShopper,
//	                                IdentifyShopper, ChallengeShopper,
//	                                PresentToShopper → refused
//	                                (shopper_action_required); others → maybe_sent
//	201 capture/cancel/refund       status "received" → success+Processing, ProviderRef =
//	                                the modification's pspReference
//	2xx of another request          key_mismatch with Contradiction (another
//	                                reference, payment, amount or currency), and a
//	                                PartiallyAuthorised payment
//	2xx unreadable                  maybe_sent
//	409, or errorCode 704           key_in_use
//	4xx naming the idempotency key  key_mismatch (undocumented; see answers)
//	400, 401, 403, 404, 422         refused
//	429                             maybe_sent, with RetryAfter
//	5xx and anything else           maybe_sent (Transient-Error: true noted)
//
// Adyen documents that a repeat of a processed request with the same key
// gets "the response to the first attempt"
// (https://docs.adyen.com/development-resources/api-idempotency); it
// documents no marker that tells a replay from a first answer (the
// response's Idempotency-Key header is there on both), so Outcome.Replayed
// is never set and the adapter does not implement payonce.ReplayDetector.
func (p *Provider) Classify(r payonce.SendRequest, status int, header http.Header, body []byte) payonce.Outcome {
	o := p.answers().Classify(r, status, header, body)
	if status >= 500 && strings.EqualFold(strings.TrimSpace(header.Get(transientHeader)), "true") {
		o.Message = strings.TrimPrefix(o.Message+"; Adyen marked the error transient (Transient-Error: true)", "; ")
	}
	return o
}
