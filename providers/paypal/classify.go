package paypal

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Classify reads PayPal's answer to one attempt:
//
//	2xx charge (an order)             by the states table: the order's status, and once
//	                                  COMPLETED its capture (authorization with
//	                                  CaptureManual): COMPLETED, CREATED → success;
//	                                  PENDING, PAYER_ACTION_REQUIRED → success+Processing;
//	                                  DECLINED, DENIED, FAILED, VOIDED → refused
//	2xx capture / cancel / refund     the capture, authorization or refund, by the table
//	                                  (a 204 to a void: success)
//	2xx of another request            key_mismatch with Contradiction: custom_id (vault
//	                                  orders, refunds), invoice_id, order id, intent,
//	                                  amount or currency not this request's
//	2xx unreadable, unknown status    maybe_sent
//	401                               not_sent; the token it used is dropped
//	409 (PREVIOUS_REQUEST_IN_PROGRESS) key_in_use
//	422 ORDER_ALREADY_CAPTURED, ORDER_ALREADY_AUTHORIZED (charge of an
//	    order:<id>), AUTHORIZATION_ALREADY_CAPTURED (capture)
//	                                  key_mismatch (review): another request did it
//	422 DUPLICATE_INVOICE_ID, PREVIOUSLY_VOIDED, DUPLICATE_REFUND (and
//	    ORDER_ALREADY_* to a vault charge) maybe_sent: evidence that the object exists
//	422 CAPTURE_FULLY_REFUNDED, CAPTURED_AMOUNT_FULLY_REFUNDED,
//	    REFUND_AMOUNT_EXCEEDED, MAX_NUMBER_OF_REFUNDS_EXCEEDED (refund),
//	    MAX_CAPTURE_AMOUNT_EXCEEDED, MAX_CAPTURE_COUNT_EXCEEDED (capture)
//	                                  maybe_sent under a later key generation
//	                                  (an earlier one may have done it); refused
//	                                  under generation 0
//	422 PAYPAL_REQUEST_ID_PREVIOUSLY_USED key_mismatch
//	429 RATE_LIMIT_REACHED            not_sent, with RetryAfter
//	400, 403, 404, other 422          refused, Code the issue (declines: DeclineCode too)
//	5xx and anything else             maybe_sent
//
// A repeat of a PayPal-Request-Id answers "the latest status of the
// previous request that used that same header"
// (https://developer.paypal.com/reference/guidelines/idempotency/), with
// 200 instead of 201 on the Orders endpoints (doc/controllers/orders.md:
// "A successful response to an idempotent request returns the HTTP 200 OK
// status code"). That answer may show the order or payment in a later
// state (a capture since REFUNDED, an authorization since CAPTURED or
// VOIDED): it is read through the same table as any answer, never taken
// for a replay of the first one, so Outcome.Replayed is never set (PayPal
// documents no replay marker).
//
// RequestID is the Paypal-Debug-Id header (or the body's debug_id).
func (p *Provider) Classify(r payonce.SendRequest, status int, header http.Header, body []byte) payonce.Outcome {
	// The token the attempt used is known by its key (AuthorizeRequest):
	// a 401 drops it only if it is still the cached one.
	p.tokens.answered(r.Key, status == http.StatusUnauthorized)
	return p.answers(r).Classify(r, status, header, body)
}

// existsIssues are the 422 issues that say the object this request would
// create already exists, so the request (or an earlier one under the key)
// may have moved money: never a refusal.
//   - DUPLICATE_INVOICE_ID: "Requested invoice number has been previously
//     captured. Possible duplicate transaction."
//     (https://developer.paypal.com/api/payments/v2/errors/duplicate_invoice_id):
//     the invoice_id is the key, so an order or capture under this key
//     exists (accounts with the "block duplicate invoice ID" setting).
//   - ORDER_ALREADY_CAPTURED, ORDER_ALREADY_AUTHORIZED to a charge that
//     creates its order (vault): not an answer PayPal documents for a
//     create, so nothing is assumed (an order:<id> charge never gets here:
//     see takenElsewhere).
//   - PREVIOUSLY_VOIDED, DUPLICATE_REFUND: the same for a void
//     ("Authorization has been previously voided":
//     https://developer.paypal.com/api/payments/v2/errors/previously_voided)
//     and a refund ("Requested invoice_id has been previously refunded":
//     .../errors/duplicate_refund; the invoice_id is the key).
//
// A lookup decides what they mean.
var existsIssues = []string{"DUPLICATE_INVOICE_ID", "ORDER_ALREADY_CAPTURED", "ORDER_ALREADY_AUTHORIZED",
	"PREVIOUSLY_VOIDED", "DUPLICATE_REFUND"}

// takenElsewhere reports the 422 of a request whose object another
// request already made: ORDER_ALREADY_CAPTURED or ORDER_ALREADY_AUTHORIZED
// to the charge of an order the payer approved (order:<id>), and
// AUTHORIZATION_ALREADY_CAPTURED to a capture
// (https://developer.paypal.com/api/rest/reference/orders/v2/errors/,
// https://developer.paypal.com/api/payments/v2/errors/authorization_already_captured).
// what names the object ("order X", "authorization Y") and done what
// happened to it.
//
// WHY it is never this request's own: inside the key window PayPal answers
// a repeat of a PayPal-Request-Id with "the latest status of the previous
// request that used that same header"
// (https://developer.paypal.com/reference/guidelines/idempotency/; Orders:
// 200 instead of 201), and a repeat whose first request still runs with
// 409; the client never sends outside the window. So this 422 means that
// ANOTHER request id did it: another payonce operation naming the same
// approved order (a double submit), a capture in PayPal's dashboard, a
// second service. Nothing in the answer or in the order tells whose it is
// (custom_id on an approved order is the merchant's, and PayPal shows no
// request id on a payment), so the operation goes to review, never
// succeeded on that object: two operations recorded paid for one payment
// would ship twice and count the revenue twice. Under a later key
// generation the object may be an earlier generation's: that, too, an
// operator resolves (review lookups still settle it when they find the
// object by the operation's own ids).
func takenElsewhere(r payonce.SendRequest, e *apiError) (what, done string, ok bool) {
	switch req := r.Request; {
	case req.Kind == payonce.KindCharge && isOrderMethod(req.PaymentMethod):
		what = "order " + strings.TrimPrefix(req.PaymentMethod, MethodOrder)
		switch {
		case e.hasIssue("ORDER_ALREADY_CAPTURED"):
			return what, "captured", true
		case e.hasIssue("ORDER_ALREADY_AUTHORIZED"):
			return what, "authorized", true
		}
	case req.Kind == payonce.KindCapture && e.hasIssue("AUTHORIZATION_ALREADY_CAPTURED"):
		return "authorization " + req.PaymentRef, "captured", true
	}
	return "", "", false
}

// spentIssues are the 422 issues that say the capture (refund) or the
// authorization (capture) has no money left for this request: "The capture
// has already been fully refunded"
// (https://developer.paypal.com/api/payments/v2/errors/capture_fully_refunded),
// "The captured amount has already been fully refunded"
// (.../errors/captured_amount_fully_refunded), "The refund amount must be
// less than or equal to the capture amount that has not yet been refunded"
// (.../errors/refund_amount_exceeded), "You have exceeded the number of
// refunds that can be processed per capture"
// (.../errors/max_number_of_refunds_exceeded); for a capture, "the sum of
// all captures" over the limit (.../errors/max_capture_amount_exceeded)
// and "Maximum number of allowable captures has been reached"
// (.../errors/max_capture_count_exceeded).
var spentIssues = map[payonce.Kind][]string{
	payonce.KindRefund: {"CAPTURE_FULLY_REFUNDED", "CAPTURED_AMOUNT_FULLY_REFUNDED", "REFUND_AMOUNT_EXCEEDED",
		"MAX_NUMBER_OF_REFUNDS_EXCEEDED"},
	payonce.KindCapture: {"MAX_CAPTURE_AMOUNT_EXCEEDED", "MAX_CAPTURE_COUNT_EXCEEDED"},
}

// laterGeneration reports a request sent under a key generation after the
// first (an operator approved a resend after review): the operation's
// earlier generations, under other PayPal-Request-Ids, may have done what
// it asks.
func laterGeneration(r payonce.SendRequest) bool { return r.Key != r.OperationID }

// declineIssues are the 422 issues of a payment the instrument's issuer or
// PayPal refused: refused, with the issue as DeclineCode.
var declineIssues = []string{"INSTRUMENT_DECLINED", "TRANSACTION_REFUSED", "PAYER_ACTION_REQUIRED", "CARD_EXPIRED",
	"PAYER_CANNOT_PAY", "PAYEE_BLOCKED_TRANSACTION", "COMPLIANCE_VIOLATION", "MAX_NUMBER_OF_PAYMENT_ATTEMPTS_EXCEEDED",
	"TRANSACTION_BLOCKED_BY_PAYEE", "REDIRECT_PAYER_FOR_ALTERNATE_FUNDING", "DECLINED_DUE_TO_RELATED_TXN", "CARD_CLOSED",
	"AUTHORIZATION_DENIED", "AUTHORIZATION_VOIDED", "AUTHORIZATION_EXPIRED"}

// answers is how PayPal's answers to r classify: the Paypal-Debug-Id
// header, no replay marker, and for answers that are not 2xx the table
// below, first matching row first; anything else (5xx included) is
// maybe_sent.
func (p *Provider) answers(r payonce.SendRequest) adapterkit.Answer[apiError] {
	retryAfter := adapterkit.RetryAfterHeader[apiError](p.now)
	client := func(status int) bool { return status >= 400 && status < 500 }
	issue := func(codes ...string) func(int, *apiError) bool {
		return func(status int, e *apiError) bool { return client(status) && e.hasIssue(codes...) }
	}
	return adapterkit.Answer[apiError]{RequestID: "Paypal-Debug-Id", Success: p.classifySuccess, Error: p.readError,
		Table: []adapterkit.Rule[apiError]{
			// "Authentication failed due to missing authorization header,
			// or invalid authentication credentials" (doc/controllers,
			// every endpoint): PayPal refuses the request before
			// processing it, so nothing was done. Classify has dropped the
			// token; the next attempt fetches a new one ("a 401 refreshes
			// once").
			{When: adapterkit.Status[apiError](http.StatusUnauthorized), Class: ledger.OutcomeNotSent},
			// "The request failed because a previous call for the given
			// resource is in progress" (doc/controllers/payments.md: void,
			// refund; 409 on capture: "a conflict while processing this
			// request"); "When you send two simultaneous API requests with
			// same PayPal-Request-Id header, PayPal processes the first
			// request and might fail the second request" (idempotency
			// guide). The first request may yet move money.
			{When: adapterkit.Status[apiError](http.StatusConflict), Class: ledger.OutcomeKeyInUse, Then: retryAfter},
			// Another request made the object this one asks for (see
			// takenElsewhere): review, never this operation's payment.
			// key_mismatch is the class the client sends straight to
			// review; Contradiction stays for 2xx answers (the root
			// documents it so), the Message says why.
			{When: func(status int, e *apiError) bool {
				_, _, ok := takenElsewhere(r, e)
				return client(status) && ok
			}, Class: ledger.OutcomeKeyMismatch, Then: func(o *payonce.Outcome, _ http.Header, e *apiError) {
				what, done, _ := takenElsewhere(r, e)
				why := fmt.Sprintf("%s was %s by another request: not recorded as this operation's %s", what, done, r.Request.Kind)
				if r.Request.Kind == payonce.KindCharge {
					why = fmt.Sprintf("%s was %s by another request: not recorded as this operation's payment", what, done)
				}
				if laterGeneration(r) {
					why += " (it may be an earlier key generation's: an operator resolves it)"
				}
				if o.Message != "" {
					why += "; PayPal: " + o.Message
				}
				o.Message = "paypal: " + p.scrub(why)
			}},
			// The object exists (see existsIssues): look it up.
			{When: issue(existsIssues...), Class: ledger.OutcomeMaybeSent},
			// Nothing left to refund or capture (see spentIssues). Under a
			// later key generation, an earlier generation of this very
			// operation (another PayPal-Request-Id, so PayPal does not
			// answer it as a repeat) may be what took it: maybe_sent, and
			// the lookup, which reads the capture's refunds (the
			// authorization's captures) by every key's invoice_id,
			// decides. A refusal would record the operation failed while
			// its money moved. Under generation 0 the row does not apply
			// and the answer is a refusal below: a repeat of this
			// request's own PayPal-Request-Id inside the window answers its
			// own result, so nothing of this operation took the money.
			{When: func(status int, e *apiError) bool {
				return client(status) && laterGeneration(r) && e.hasIssue(spentIssues[r.Request.Kind]...)
			}, Class: ledger.OutcomeMaybeSent},
			// "The PayPal-Request-ID has already been used for another
			// request" (https://developer.paypal.com/api/payment-tokens/v3/errors/paypal_request_id_previously_used):
			// the key holds another request, which may have moved money.
			{When: issue("PAYPAL_REQUEST_ID_PREVIOUSLY_USED", "DUPLICATE_REQUEST_ID"), Class: ledger.OutcomeKeyMismatch},
			// Declines: refused, the issue as the decline code.
			{When: issue(declineIssues...), Class: ledger.OutcomeRefused, Then: func(o *payonce.Outcome, _ http.Header, e *apiError) {
				o.DeclineCode = o.Code
			}},
			// "PayPal's servers may deny further requests until your usage
			// drops below the limit"; "HTTP 429 ... RATE_LIMIT_REACHED"
			// (https://developer.paypal.com/api/rate-limiting/): denied
			// before processing, and PayPal's own body says so. A 429
			// without it (a proxy's) is maybe_sent.
			{When: func(status int, e *apiError) bool {
				return status == http.StatusTooManyRequests && e.hasIssue("RATE_LIMIT_REACHED")
			}, Class: ledger.OutcomeNotSent, Then: retryAfter},
			adapterkit.RateLimited("RATE_LIMIT_REACHED", retryAfter),
			// 400 (INVALID_REQUEST: not well-formed), 403 (NOT_AUTHORIZED),
			// 404 (RESOURCE_NOT_FOUND: no such order or payment), 422
			// (UNPROCESSABLE_ENTITY: "failed business validation"): PayPal
			// did not do it, and the same request gets the same answer.
			{When: adapterkit.Refusal[apiError](http.StatusUnprocessableEntity), Class: ledger.OutcomeRefused},
		}}
}

// readError decodes an error body into o's Code, Message and RequestID.
func (p *Provider) readError(o *payonce.Outcome, body []byte) *apiError {
	e := decodeError(body)
	if e == nil {
		return nil
	}
	o.Code = p.scrub(e.issue())
	o.Message = p.scrub(e.text())
	if o.RequestID == "" {
		o.RequestID = p.scrub(e.DebugID)
	}
	return e
}

// classifySuccess reads a 2xx answer. Whatever cannot be understood is
// maybe_sent: PayPal answered 2xx, so something may have happened.
func (p *Provider) classifySuccess(r payonce.SendRequest, o payonce.Outcome, body []byte) payonce.Outcome {
	req := r.Request
	switch req.Kind {
	case payonce.KindCharge:
		ord, err := decodeOrder(body)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		st, ref, pm := p.orderState(req, ord, isOrderMethod(req.PaymentMethod))
		o.ProviderRef = ref
		why, err := p.chargeBelongs(r.OperationID, req, ord, pm)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		if why != "" {
			return p.contradictedAnswer(o, why)
		}
		return st.Outcome("paypal", o)
	case payonce.KindCancel:
		if len(strings.TrimSpace(string(body))) == 0 && o.HTTPStatus == http.StatusNoContent {
			// "204 No Content" is the void's answer under return=minimal:
			// the authorization is voided.
			o.Class, o.ProviderRef = ledger.OutcomeSuccess, req.PaymentRef
			return o
		}
		fallthrough
	case payonce.KindCapture, payonce.KindRefund:
		object := objectOf(req.Kind)
		pm, err := decodePayment(body, object)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		o.ProviderRef = pm.ID
		why, err := p.paymentBelongs(r.OperationID, r.Key, req, pm)
		if err != nil {
			return p.unreadableAnswer(o, err.Error())
		}
		if why != "" {
			return p.contradictedAnswer(o, why)
		}
		return p.paymentState(req.Kind, object, pm).Outcome("paypal", o)
	}
	return p.unreadableAnswer(o, adapterkit.UnknownKind(req.Kind))
}

// objectOf is the object an operation of kind creates or acts on: a
// capture, the authorization a cancel voids, a refund.
func objectOf(k payonce.Kind) string {
	switch k {
	case payonce.KindCapture:
		return objCapture
	case payonce.KindCancel:
		return objAuthorization
	}
	return objRefund
}

// isOrderMethod reports a charge of an order the payer approved
// (PaymentMethod order:<id>).
func isOrderMethod(pm string) bool { return strings.HasPrefix(pm, MethodOrder) }

func (p *Provider) unreadableAnswer(o payonce.Outcome, what string) payonce.Outcome {
	return adapterkit.Unreadable("paypal", o, p.scrub(what))
}

// contradictedAnswer is a 2xx answer whose object belongs to another
// request: key_mismatch with why (scrubbed) as its Contradiction. The
// operation goes to review; it is never recorded succeeded or failed on it.
func (p *Provider) contradictedAnswer(o payonce.Outcome, why string) payonce.Outcome {
	why = p.scrub(why)
	return adapterkit.Contradicted(o, ledger.OutcomeKeyMismatch, why, "paypal: "+why)
}

// ---- does the object belong to this request? ----

// chargeBelongs checks that ord (and pm, the payment inside it, when there
// is one) is what the charge r of operation op asked for: the order the
// PaymentMethod names (order:<id>), the intent, and for an order the
// charge created (vault) its custom_id; the amount and currency of the
// purchase unit and of the payment. An error means an amount cannot be
// read.
func (p *Provider) chargeBelongs(op string, r payonce.Request, ord order, pm *payment) (string, error) {
	var why []string
	acting := isOrderMethod(r.PaymentMethod)
	if acting {
		// A payment read by its own id (a lookup: ord is zero) names its
		// order in supplementary_data when PayPal includes it; without
		// either id there is nothing to compare.
		got := ord.ID
		if got == "" && pm != nil {
			got = pm.orderID()
		}
		if want := strings.TrimPrefix(r.PaymentMethod, MethodOrder); got != "" && got != want {
			why = append(why, fmt.Sprintf("order %q, not %q", got, want))
		}
	}
	if ord.Intent != "" && ord.Intent != intentOf(r) {
		why = append(why, fmt.Sprintf("intent %s, not %s", ord.Intent, intentOf(r)))
	}
	if len(ord.PurchaseUnits) > 1 {
		why = append(why, fmt.Sprintf("%d purchase units; payonce charges orders of one", len(ord.PurchaseUnits)))
	}
	// custom_id is the operation id only on orders the adapter created:
	// an order the payer approved elsewhere carries the merchant's own.
	customOp := ""
	if !acting {
		customOp = op
	}
	if len(ord.PurchaseUnits) > 0 {
		pu := ord.PurchaseUnits[0]
		w, err := belongs(r, customOp, pu.CustomID, pu.Amount)
		if err != nil {
			return "", err
		}
		why = append(why, w...)
	}
	if pm != nil {
		w, err := belongs(r, customOp, pm.CustomID, pm.Amount)
		if err != nil {
			return "", err
		}
		why = append(why, w...)
	}
	return contradiction(why), nil
}

// paymentBelongs checks that pm, the answer to a capture, cancel or refund
// with key, is what r of operation op asked for: the authorization a cancel
// names; invoice_id (the key) on a capture or refund; custom_id (the
// operation id) on a refund (a capture carries its order's, the charge's);
// the amount and currency when the request fixes them.
func (p *Provider) paymentBelongs(op, key string, r payonce.Request, pm payment) (string, error) {
	var why []string
	switch r.Kind {
	case payonce.KindCancel:
		if pm.ID != r.PaymentRef {
			why = append(why, fmt.Sprintf("authorization %q, not %q", pm.ID, r.PaymentRef))
		}
		return contradiction(why), nil
	case payonce.KindCapture:
		op = ""
	}
	if pm.InvoiceID != "" && pm.InvoiceID != key {
		why = append(why, fmt.Sprintf("invoice_id %q, not this attempt's key", pm.InvoiceID))
	}
	w, err := belongs(r, op, pm.CustomID, pm.Amount)
	if err != nil {
		return "", err
	}
	return contradiction(append(why, w...)), nil
}

// belongs compares an object's custom_id (when op is set and the object
// has one) and its amount (when the request fixes one) and currency (when
// the request names one) with r. An amount PayPal wrote that cannot be
// read is an error.
func belongs(r payonce.Request, op, customID string, m *money) ([]string, error) {
	var amount int64
	var cur string
	if m != nil {
		n, err := fromPayPal(*m)
		if err != nil {
			return nil, err
		}
		amount, cur = n, m.CurrencyCode
	} else {
		// An object without an amount cannot be compared: its id and
		// status still decide.
		r.Amount = 0
	}
	why := adapterkit.Belongs(r, op, customID, amount, cur)
	if why == "" {
		return nil, nil
	}
	return []string{strings.TrimPrefix(why, "the provider's object has ")}, nil
}

func contradiction(why []string) string {
	if len(why) == 0 {
		return ""
	}
	return "the PayPal object has " + strings.Join(why, ", ")
}
