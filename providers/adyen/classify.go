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
	switch r.Request.Kind {
	case payonce.KindCharge:
		pm, err := decodePayment(body)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		o.ProviderRef = pm.PspReference
		// A PaymentResponse names no merchant account (its fields in
		// CheckoutService-v71.json: action, additionalData, amount,
		// donationToken, fraudResult, merchantReference, order,
		// paymentMethod, paymentValidations, pspReference, refusalReason,
		// refusalReasonCode, resultCode, threeDS*), and its
		// merchantReference is the operation id on every merchant account:
		// nothing in it can show that it is this account's payment. Only
		// the key keeps accounts apart: it is scoped to
		// Config.MerchantAccount (idempotency.go), so no other account's
		// request can store the answer this key replays.
		if why := paymentContradiction(r.Request, r.OperationID, pm); why != "" {
			return p.contradictedAnswer(o, why)
		}
		return p.paymentState(pm).Outcome("adyen", o)
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		m, err := decodeModification(body)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		o.ProviderRef = m.PspReference
		if why := modificationContradiction(r.Request, r.OperationID, m); why != "" {
			return p.contradictedAnswer(o, why)
		}
		// A modification's answer names its merchant account
		// ("merchantAccount ... used to process the payment", required in
		// PaymentCaptureResponse, PaymentCancelResponse and
		// PaymentRefundResponse): an answer of another account is one this
		// key was not sent for.
		if m.MerchantAccount != "" && m.MerchantAccount != p.merchant {
			return p.contradictedAnswer(o, "the provider's object belongs to merchant account "+quote(p.scrub(m.MerchantAccount))+", not "+quote(p.merchant))
		}
		// 201 "received": Adyen has taken the modification, not done it
		// ("The status of your request. This will always have the value
		// received"). Its outcome comes only by the CAPTURE, CANCELLATION
		// or REFUND webhook, which names this pspReference (ProviderRef):
		// the operation stays unknown until then.
		o.Class = ledger.OutcomeSuccess
		o.Processing = true
		return o
	}
	return p.unreadableAnswer(o, adapterkit.UnknownKind(r.Request.Kind))
}

// unreadableAnswer is adapterkit.Unreadable for Adyen, what scrubbed.
func (p *Provider) unreadableAnswer(o payonce.Outcome, what string) payonce.Outcome {
	return adapterkit.Unreadable("adyen", o, p.scrub(what))
}

// contradictedAnswer is a 2xx answer whose object belongs to another request
// (adapterkit.Contradicted): key_mismatch, why scrubbed as its
// Contradiction.
func (p *Provider) contradictedAnswer(o payonce.Outcome, why string) payonce.Outcome {
	why = p.scrub(why)
	return adapterkit.Contradicted(o, ledger.OutcomeKeyMismatch, why, "adyen: "+why)
}

// transientHeader is the answer header with which Adyen marks an error
// that may be retried with the same idempotency key: "HTTP header
// Transient-Error with the value true, which indicates that the request
// can be retried at a later time using the same idempotency key. If the
// API does not return a transient error header, or returns a header with
// a value of false, do not retry the request"
// (https://docs.adyen.com/development-resources/api-idempotency#transient-errors,
// quoted in Adyen/adyen-java-api-library#284). Adyen's own example is the
// 409 errorCode 704 of a key whose first request is in progress
// (Adyen/adyen-java-api-library#288); its test switch
// additionalData.RequestedTestErrorResponseCode shows the two kinds of
// error (CheckoutService-v71.json, AdditionalDataCommon):
// NO_CONNECTION_AVAILABLE, "a transient, retriable error since no
// messaging could be initiated to an issuing system ... the header
// Transient-Error: true is returned ... A subsequent request using the
// same idempotency key will be processed as if it was the first request";
// IOEXCEPTION_RECEIVED, "non-transient because the message could have been
// received by the issuing party and been acted upon. No transient error
// header is returned. If using idempotency, the (error) response is stored
// as the final result for the idempotency key".
const transientHeader = "Transient-Error"

// transient reports an answer Adyen marked Transient-Error: true.
func transient(header http.Header) bool {
	return strings.EqualFold(strings.TrimSpace(header.Get(transientHeader)), "true")
}

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
			// comes with 409 (Adyen/adyen-java-api-library#288) and with
			// 422 (shared/PROVIDERS.md; the 422 is "a request validation
			// error" in CheckoutService-v71.json, which must not make
			// this a refusal): the first request with this key has not
			// finished and may yet move money. It is a transient error
			// (Transient-Error: true): the same key may be sent again,
			// which the client does after RetryAfter and a lookup. A 409
			// is read so even without a body or the header.
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
//	2xx charge                      by resultCode: Authorised → success;
//	                                Refused, Cancelled, Error → refused (DeclineCode =
//	                                refusalReasonCode); Pending, Received →
//	                                success+Processing; RedirectShopper,
//	                                IdentifyShopper, ChallengeShopper,
//	                                PresentToShopper → refused
//	                                (shopper_action_required); others → maybe_sent
//	201 capture/cancel/refund       status "received" → success+Processing, ProviderRef =
//	                                the modification's pspReference
//	2xx of another request          key_mismatch with Contradiction (another
//	                                reference, payment, amount or currency, or a
//	                                modification of another merchant account), and
//	                                a PartiallyAuthorised payment
//	2xx unreadable                  maybe_sent
//	409, or errorCode 704 (409/422) key_in_use
//	4xx naming the idempotency key  key_mismatch (undocumented; see answers)
//	400, 401, 403, 404, 422         refused
//	429                             maybe_sent, with RetryAfter
//	5xx with Transient-Error: true  maybe_sent: the same key may be resent, and is
//	                                processed as if it were the first
//	5xx error body of Adyen's own   maybe_sent with Replayed: Adyen stored it as the
//	without Transient-Error: true   key's final answer (see Classify's last paragraph)
//	5xx of a proxy, and the rest    maybe_sent
//
// Adyen documents that a repeat of a processed request with the same key
// gets "the response to the first attempt"
// (https://docs.adyen.com/development-resources/api-idempotency); it
// documents no marker that tells a replay from a first answer (the
// response's Idempotency-Key header is there on both), and the adapter does
// not implement payonce.ReplayDetector.
//
// It documents instead which errors are final for the key: an error that
// does not carry Transient-Error: true "is stored as the final result for
// the idempotency key. Subsequent messages with the same idempotency key
// [will] not be processed beyond returning the stored response" (see
// transientHeader). So a 5xx that is Adyen's own error (its ServiceError
// body) without the header is maybe_sent with Outcome.Replayed set: it is
// what every resend under the key will be answered, exactly what a
// replayed stored error is to the client, which then stops resending under
// the key and waits for the webhook (or, after the key window, review). A
// resend would only be answered the same 500 again, and counted by the
// circuit breaker as a new failure. Every 4xx refusal is final anyway, 704
// is transient, and a 429 or an answer that is not Adyen's (a proxy's 502,
// an empty or HTML body) says nothing about the key: those stay as the
// table classifies them. A 5xx with Transient-Error: true may be resent
// with the same key: maybe_sent, and the client resends after the lookup.
func (p *Provider) Classify(r payonce.SendRequest, status int, header http.Header, body []byte) payonce.Outcome {
	o := p.answers().Classify(r, status, header, body)
	if status < 500 || o.Class != ledger.OutcomeMaybeSent {
		return o
	}
	switch {
	case transient(header):
		o.Message = strings.TrimPrefix(o.Message+"; Adyen marked the error transient (Transient-Error: true): the same key may be sent again", "; ")
	case decodeError(body) != nil:
		o.Replayed = true
		o.Message = strings.TrimPrefix(o.Message+"; not transient (no Transient-Error: true): Adyen keeps this answer as the key's final one", "; ")
	}
	return o
}
