package paypal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// APIError is a PayPal answer that a lookup could not use (an error
// status, or a body that is not what the endpoint returns). It never holds
// a credential, a token or a request header.
type APIError struct {
	// Method and Path are the request's.
	Method string
	Path   string
	// HTTPStatus is 0 when the status was 2xx but the body unusable.
	HTTPStatus int
	// DebugID is the Paypal-Debug-Id header (or the body's debug_id).
	DebugID string
	// Code is the error's issue (or name) and Message its message and
	// descriptions, when PayPal sent them; Message may also describe an
	// unusable body.
	Code    string
	Message string
}

// Error describes the failed lookup request.
func (e *APIError) Error() string {
	return adapterkit.ErrorText("paypal", e.Method, e.Path, e.HTTPStatus, "debug id", e.DebugID, e.Code, e.Message)
}

// Temporary reports whether asking again later may give an answer: a 429,
// a 5xx, or an unusable 2xx body.
func (e *APIError) Temporary() bool { return adapterkit.Temporary(e.HTTPStatus) }

// apiError is err as an *APIError when it is an answer the lookup cannot
// use (an adapterkit.Failure), scrubbed; other errors pass as they are.
func (p *Provider) apiError(err error) error {
	var f *adapterkit.Failure
	if !errors.As(err, &f) {
		return err
	}
	e := &APIError{Method: f.Method, Path: f.Path, HTTPStatus: f.HTTPStatus, DebugID: p.scrub(f.Header.Get("Paypal-Debug-Id")), Message: p.scrub(f.Message)}
	if b := decodeError(f.Body); b != nil {
		e.Code, e.Message = p.scrub(b.issue()), p.scrub(b.text())
		if e.DebugID == "" {
			e.DebugID = p.scrub(b.DebugID)
		}
	}
	return e
}

// get reads one object by path with the access token: found is false on
// PayPal's own 404 (a JSON body naming RESOURCE_NOT_FOUND or
// INVALID_RESOURCE_ID: a proxy's 404 or a wrong BaseURL proves nothing).
// A 401 drops the token it used and asks once more with a new one ("a 401
// refreshes once"); every other failure is an *APIError.
func (p *Provider) get(ctx context.Context, hc payonce.HTTPDoer, path string, v any) (found bool, err error) {
	for try := 0; ; try++ {
		t, err := p.token(ctx, hc)
		if err != nil {
			return false, err
		}
		_, header, body, err := adapterkit.Get(ctx, hc, p.Name(), p.baseURL, path, nil, func(h http.Header) {
			h.Set("Authorization", "Bearer "+t.value)
			h.Set("Accept", "application/json")
		})
		var f *adapterkit.Failure
		if errors.As(err, &f) && f.HTTPStatus == http.StatusUnauthorized && try == 0 {
			p.tokens.invalidate(t.gen)
			continue
		}
		if errors.As(err, &f) && f.HTTPStatus == http.StatusNotFound && f.Message == "" && payPalNotFound(f.Body) {
			return false, nil
		}
		if err != nil {
			return false, p.apiError(err)
		}
		if err := adapterkit.DecodeJSON(body, v); err != nil {
			return false, p.apiError(adapterkit.Unusable(path, header, err))
		}
		return true, nil
	}
}

// payPalNotFound tells PayPal's "no such object" ({"name":
// "RESOURCE_NOT_FOUND", "details":[{"issue":"INVALID_RESOURCE_ID"}]}) from
// any other 404.
func payPalNotFound(body []byte) bool {
	e := decodeError(body)
	return e.hasIssue("RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID")
}

// getOrder reads GET /v2/checkout/orders/{id}.
func (p *Provider) getOrder(ctx context.Context, hc payonce.HTTPDoer, id string) (order, bool, error) {
	path := "/v2/checkout/orders/" + url.PathEscape(id)
	var o order
	found, err := p.get(ctx, hc, path, &o)
	if err != nil || !found {
		return order{}, found, err
	}
	if o.ID == "" || o.Status == "" {
		return order{}, false, p.apiError(adapterkit.Unusable(path, nil, errors.New("answer is not an order (no id or status)")))
	}
	return o, true, nil
}

// paymentPaths are where each payment object is read by id.
var paymentPaths = map[string]string{
	objAuthorization: "/v2/payments/authorizations/",
	objCapture:       "/v2/payments/captures/",
	objRefund:        "/v2/payments/refunds/",
}

// getPayment reads an authorization, capture or refund by id.
func (p *Provider) getPayment(ctx context.Context, hc payonce.HTTPDoer, object, id string) (payment, bool, error) {
	path := paymentPaths[object] + url.PathEscape(id)
	var pm payment
	found, err := p.get(ctx, hc, path, &pm)
	if err != nil || !found {
		return payment{}, found, err
	}
	if pm.ID == "" || pm.Status == "" {
		return payment{}, false, p.apiError(adapterkit.Unusable(path, nil, fmt.Errorf("answer is not a %s (no id or status)", object)))
	}
	return pm, true, nil
}

// Lookup asks PayPal, with GETs only and by the ids PayPal returned, what
// became of an operation:
//
//   - charge: each known id (q.ProviderRef, every earlier generation's
//     reference) is read as the payment the charge made (GET
//     /v2/payments/captures/{id}, or authorizations/{id} with
//     CaptureManual) and, when PayPal has no such payment, as an order
//     (GET /v2/checkout/orders/{id}: the ref of a charge whose order held
//     no payment yet); the order of an "order:<id>" PaymentMethod is read
//     too. The payment inside the order, or without one the order's
//     status, decides (the states table). An "order:<id>" charge never
//     claims a payment it finds only inside the order: whose request made
//     it is unknown (not found; see lookupCharge).
//   - capture: the capture by q.ProviderRef; without one, the
//     authorization (q.Request.PaymentRef): CREATED or PENDING means not
//     captured yet, otherwise its order's captures whose invoice_id is one
//     of the operation's keys are read by id.
//   - cancel: the authorization (PaymentRef, else ProviderRef): VOIDED is
//     done, CREATED not yet.
//   - refund: the refund by q.ProviderRef; without one, the capture
//     (PaymentRef) and its order's refunds whose invoice_id is one of the
//     operation's keys, each read by id.
//
// PayPal has no search by the adapter's ids in Orders: a charge whose
// request never answered with an id (a lost answer to POST
// /v2/checkout/orders) is LookupNotFound, which proves nothing
// (Info().LookupProvesAbsence is false): inside the Orders window the
// client's resend with the same PayPal-Request-Id is the lookup (PayPal
// answers it with the latest status of the first request), outside it the
// operation goes to review. Transaction search lags up to 3 hours and has
// no custom-id filter: it serves the audit, never a resend.
//
// An audit's lookup (q.Audit) gets a doer that sends GETs only: its token,
// when one must be fetched, goes through Config.HTTPClient.
//
// Every object is checked to belong to the operation (custom_id,
// invoice_id, amount, currency where it carries them): one that does not is
// a Contradiction. Objects of every key generation are combined by
// adapterkit.Combine. Reads by id are consistent: Lag is 0.
func (p *Provider) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.Audit && hc != nil {
		hc = tokenVia{hc: hc, post: p.cfg.HTTPClient}
	}
	return adapterkit.Lookups{Provider: p.Name(), Charge: p.lookupCharge, Capture: p.lookupCapture,
		Cancel: p.lookupCancel, Refund: p.lookupRefund}.Lookup(ctx, hc, q)
}

// chargeObject is what a charge lookup read for one id: an order, or the
// payment the charge made.
type chargeObject struct {
	order *order
	pm    *payment
}

func (p *Provider) lookupCharge(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	r := q.Request
	object := objCapture
	if r.CaptureManual {
		object = objAuthorization
	}
	acting := isOrderMethod(r.PaymentMethod)
	unclaimed := ""
	// readOrder reads order id for the charge. For a charge of an order the
	// payer approved (order:<id>), an order that holds a capture or
	// authorization counts as no object (found false) unless it
	// contradicts the request.
	//
	// WHY: such an order may be read by its id (the PaymentMethod's, or a
	// reference recorded while it held no payment), never by the id of a
	// payment this operation's answer gave. Nothing in it tells whose
	// request made its payment: custom_id on an approved order is the
	// merchant's, and PayPal shows no request id on a payment. Another
	// payonce operation naming the same order, or a capture in PayPal's
	// dashboard, leaves the same order; claiming its payment would record
	// two operations paid for one payment. "Not found" proves nothing
	// (Info().LookupProvesAbsence is false): inside the Orders window the
	// client resends under this operation's PayPal-Request-Id, which PayPal
	// answers with this request's own result ("the latest status of the
	// previous request that used that same header",
	// https://developer.paypal.com/reference/guidelines/idempotency/) or,
	// when another request captured the order, 422 ORDER_ALREADY_CAPTURED,
	// which Classify sends to review (takenElsewhere); past the window the
	// operation goes to review. A payment whose id this operation recorded
	// is read by that id (Known), so it still counts, once. An order without
	// a payment still answers by its own status (not captured yet: not
	// found; VOIDED: nothing can be paid on it).
	readOrder := func(id string) (chargeObject, bool, error) {
		o, found, err := p.getOrder(ctx, hc, id)
		if err != nil || !found {
			return chargeObject{}, found, err
		}
		if acting && holdsPayment(r, o) {
			if why, err := p.chargeBelongs(q.OperationID, r, o, nil); err == nil && why == "" {
				unclaimed = o.ID
				return chargeObject{}, false, nil
			}
			// The order itself is not what the request names (another
			// intent, amount, currency, order id): Match reports that
			// contradiction (or the amount it cannot read).
		}
		return chargeObject{order: &o}, true, nil
	}
	objs := adapterkit.Objects[chargeObject]{Provider: p.Name(),
		Get: func(id string) (chargeObject, bool, error) {
			pm, found, err := p.getPayment(ctx, hc, object, id)
			if err != nil || found {
				return chargeObject{pm: &pm}, found, err
			}
			return readOrder(id)
		},
		Match: func(c chargeObject) (adapterkit.Match, error) {
			if c.order != nil {
				st, ref, pm := p.orderState(r, *c.order, acting)
				why, err := p.chargeBelongs(q.OperationID, r, *c.order, pm)
				return p.match(q, ref, c.order.PurchaseUnits, why, st, err)
			}
			why, err := p.chargeBelongs(q.OperationID, r, order{}, c.pm)
			return p.match(q, c.pm.ID, nil, why, p.paymentState(payonce.KindCharge, object, *c.pm), err)
		},
	}
	if err := objs.Read(false, adapterkit.Known(q)...); err != nil {
		return payonce.LookupResult{}, err
	}
	if res := objs.Result(0); !acting || res.State != payonce.LookupNotFound {
		return res, nil
	}
	// The order the charge acts on is known from the request itself: read
	// it when no recorded id found the charge's payment (reading it as
	// well would count that payment twice), under the same rule.
	if id := strings.TrimPrefix(r.PaymentMethod, MethodOrder); !slices.Contains(adapterkit.Known(q), id) {
		c, found, err := readOrder(id)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		if found {
			if err := objs.Add(id, c); err != nil {
				return payonce.LookupResult{}, err
			}
		}
	}
	res := objs.Result(0)
	if res.State == payonce.LookupNotFound && unclaimed != "" {
		res.Message = fmt.Sprintf("paypal: order %s holds a payment (%s) that no id of this operation names: whose request made it is unknown, "+
			"so it is not claimed (a resend under this operation's PayPal-Request-Id answers with its own result)", p.scrub(unclaimed), object)
	}
	return res, nil
}

// match turns one object's state into a Match, with its generation told
// by its id among the earlier references or, for an order, its
// invoice_id among the earlier keys.
func (p *Provider) match(q payonce.LookupQuery, ref string, pus []purchaseUnit, why string, st adapterkit.State, err error) (adapterkit.Match, error) {
	if err != nil {
		return adapterkit.Match{}, fmt.Errorf("paypal: lookup %s: object %s: %s", q.Request.Kind, p.scrub(ref), p.scrub(err.Error()))
	}
	key := ""
	if len(pus) > 0 {
		key = pus[0].InvoiceID
	}
	m := adapterkit.Match{Earlier: adapterkit.IsEarlier(q, key, ref)}
	if why != "" {
		why = p.scrub(why)
		m.Result = payonce.LookupResult{ProviderRef: ref, Refs: []string{ref}, Contradiction: why, Message: "paypal: " + why}
		return m, nil
	}
	m.Result, err = st.Result("paypal", ref)
	if err != nil {
		return m, errors.New(p.scrub(err.Error()))
	}
	return m, nil
}

// paymentLookup reads the payments of a capture or refund (object): by id
// when the ledger knows them, else those of the order that the payment
// acted on (parent, read as parentObject) whose invoice_id is one of the
// operation's keys.
func (p *Provider) paymentLookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery, object, parentObject string) (payonce.LookupResult, error) {
	r := q.Request
	objs := adapterkit.Objects[payment]{Provider: p.Name(),
		Get: func(id string) (payment, bool, error) { return p.getPayment(ctx, hc, object, id) },
		Missing: func(id string) error {
			return p.apiError(adapterkit.Fail(paymentPaths[object]+"{id}", 0, nil, object+" "+id+" is listed in its order but GET by id answers 404"))
		},
		Match: func(pm payment) (adapterkit.Match, error) {
			why, err := p.paymentBelongs(q.OperationID, pm.InvoiceID, r, pm)
			if pm.InvoiceID != "" && pm.InvoiceID != q.Key && !slices.Contains(q.EarlierKeys, pm.InvoiceID) {
				why = contradiction(append(splitWhy(why), fmt.Sprintf("invoice_id %q, none of the operation's keys", pm.InvoiceID)))
			}
			m, err := p.match(q, pm.ID, nil, why, p.paymentState(r.Kind, object, pm), err)
			m.Earlier = adapterkit.IsEarlier(q, pm.InvoiceID, pm.ID)
			return m, err
		},
	}
	if err := objs.Read(false, adapterkit.Known(q)...); err != nil {
		return payonce.LookupResult{}, err
	}
	if q.ProviderRef != "" && !adapterkit.Resent(q) && !q.Audit {
		return objs.Result(0), nil
	}
	if r.PaymentRef == "" {
		return objs.Result(0), nil
	}
	parent, found, err := p.getPayment(ctx, hc, parentObject, r.PaymentRef)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	if !found {
		// No such authorization or capture: nothing was done on it.
		return objs.Result(0), nil
	}
	if object == objCapture {
		switch v := stateOf(payonce.KindCapture, objAuthorization, parent.Status); v {
		case vUnknown:
			return payonce.LookupResult{}, fmt.Errorf("paypal: lookup capture: authorization %s has status %q, which the adapter does not know",
				p.scrub(parent.ID), p.scrub(parent.Status))
		case vNotYet:
			// CREATED or PENDING: not captured yet; a resend with the same
			// key captures it.
			return objs.Result(0), nil
		case vFailed:
			// DENIED or VOIDED: it can never be captured. A capture of
			// ours read by id above still answers for itself.
			if res := objs.Result(0); res.State != payonce.LookupNotFound {
				return res, nil
			}
			return p.paymentState(payonce.KindCapture, objAuthorization, parent).Result("paypal", parent.ID)
		}
		// CAPTURED or PARTIALLY_CAPTURED: the order's captures tell whose.
	}
	orderID := parent.orderID()
	if orderID == "" {
		// PayPal did not say which order: only a resend with the same
		// key can tell (not found proves nothing).
		return objs.Result(0), nil
	}
	o, found, err := p.getOrder(ctx, hc, orderID)
	if err != nil || !found {
		return objs.Result(0), err
	}
	keys := append([]string{q.Key}, q.EarlierKeys...)
	var listed []string
	for _, pu := range o.PurchaseUnits {
		if pu.Payments == nil {
			continue
		}
		list := pu.Payments.Captures
		if object == objRefund {
			list = pu.Payments.Refunds
		}
		for _, pm := range list {
			if pm.ID != "" && pm.InvoiceID != "" && slices.Contains(keys, pm.InvoiceID) {
				listed = append(listed, pm.ID)
			}
		}
	}
	if err := objs.Read(true, listed...); err != nil {
		return payonce.LookupResult{}, err
	}
	return objs.Result(0), nil
}

func splitWhy(why string) []string {
	if why == "" {
		return nil
	}
	return []string{strings.TrimPrefix(why, "the PayPal object has ")}
}

func (p *Provider) lookupCapture(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.ProviderRef == "" && q.Request.PaymentRef == "" {
		return payonce.LookupResult{}, errors.New("paypal: lookup capture: Request.PaymentRef (the authorization) and ProviderRef (the capture) are empty")
	}
	return p.paymentLookup(ctx, hc, q, objCapture, objAuthorization)
}

func (p *Provider) lookupRefund(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.ProviderRef == "" && q.Request.PaymentRef == "" {
		return payonce.LookupResult{}, errors.New("paypal: lookup refund: Request.PaymentRef (the capture) and ProviderRef (the refund) are empty")
	}
	return p.paymentLookup(ctx, hc, q, objRefund, objCapture)
}

// lookupCancel reads the authorization the cancel voids.
func (p *Provider) lookupCancel(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	id := adapterkit.ActedOn(q)
	if id == "" {
		return payonce.LookupResult{}, errors.New("paypal: lookup cancel: Request.PaymentRef (the authorization) is empty")
	}
	pm, found, err := p.getPayment(ctx, hc, objAuthorization, id)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	if !found {
		return payonce.LookupResult{State: payonce.LookupNotFound}, nil
	}
	m, err := p.match(q, pm.ID, nil, "", p.paymentState(payonce.KindCancel, objAuthorization, pm), nil)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	return adapterkit.Combine(p.Name(), []adapterkit.Match{{Result: m.Result}}, 0), nil
}
