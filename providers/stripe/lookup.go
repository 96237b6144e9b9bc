package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// maxRefundPages bounds the refund list pages one lookup reads (100 refunds
// each); a PaymentIntent with more refunds than that is reported as an
// error rather than guessed about.
const maxRefundPages = 50

// searchLimit is the page size of a search; one page tells 0, 1 or "more".
const searchLimit = 10

// APIError is a Stripe answer that a lookup could not use (an error status,
// or a body that is not what the endpoint returns). It never holds request
// headers or the API key; Message is Stripe's, scrubbed of anything that
// looks like a key.
type APIError struct {
	// Method and Path are the request's, without the query.
	Method string
	Path   string
	// HTTPStatus is 0 when the status was 2xx but the body unusable.
	HTTPStatus int
	RequestID  string
	// Type, Code, DeclineCode and Message come from Stripe's error JSON
	// when there was one; Message may also describe an unusable body.
	Type        string
	Code        string
	DeclineCode string
	Message     string
}

// Error describes the failed lookup request.
func (e *APIError) Error() string {
	return adapterkit.ErrorText("stripe", e.Method, e.Path, e.HTTPStatus, "request", e.RequestID, e.Type, e.Code, e.DeclineCode, e.Message)
}

// Temporary reports whether asking again later may give an answer: a 429,
// a 5xx, or an unusable 2xx body (a truncated or proxied answer).
func (e *APIError) Temporary() bool { return adapterkit.Temporary(e.HTTPStatus) }

// Lookup asks Stripe, with GETs only, what became of an operation:
//
//   - charge: GET /v1/payment_intents/{ProviderRef} when the ledger knows
//     the PaymentIntent, else a search on metadata['payonce_op'] (eventually
//     consistent: the result carries Lag = SearchLag).
//   - capture, cancel: GET /v1/payment_intents/{PaymentRef} and read its
//     status.
//   - refund: GET /v1/refunds?payment_intent={PaymentRef}, keeping the
//     refunds whose metadata payonce_op is the operation's (consistent).
//
// A 404 for a PaymentIntent read by id is LookupNotFound. Any other error
// status, and any body that is not what the endpoint returns, is an error
// (*APIError): the answer is not known.
func (p *Provider) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if hc == nil {
		return payonce.LookupResult{}, errors.New("stripe: lookup: nil HTTPDoer")
	}
	switch q.Request.Kind {
	case payonce.KindCharge:
		if q.ProviderRef != "" {
			pi, found, err := p.getPaymentIntent(ctx, hc, q.ProviderRef)
			if err != nil {
				return payonce.LookupResult{}, err
			}
			if !found {
				return payonce.LookupResult{State: payonce.LookupNotFound}, nil
			}
			return p.chargeState(pi)
		}
		return p.searchCharge(ctx, hc, q.OperationID)
	case payonce.KindCapture, payonce.KindCancel:
		ref := q.Request.PaymentRef
		if ref == "" {
			ref = q.ProviderRef
		}
		if ref == "" {
			return payonce.LookupResult{}, fmt.Errorf("stripe: lookup %s: Request.PaymentRef and ProviderRef are empty; the PaymentIntent id is needed", q.Request.Kind)
		}
		pi, found, err := p.getPaymentIntent(ctx, hc, ref)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		if !found {
			// No such PaymentIntent: the capture or cancel did not happen.
			return payonce.LookupResult{State: payonce.LookupNotFound}, nil
		}
		if q.Request.Kind == payonce.KindCapture {
			return p.captureState(pi)
		}
		return p.cancelState(pi)
	case payonce.KindRefund:
		return p.lookupRefund(ctx, hc, q)
	default:
		return payonce.LookupResult{}, fmt.Errorf("stripe: lookup: unknown kind %q", string(q.Request.Kind))
	}
}

// getPaymentIntent reads one PaymentIntent; found is false on Stripe's 404
// resource_missing.
func (p *Provider) getPaymentIntent(ctx context.Context, hc payonce.HTTPDoer, id string) (paymentIntent, bool, error) {
	path := "/v1/payment_intents/" + url.PathEscape(id)
	status, header, body, err := p.get(ctx, hc, path, nil)
	if err != nil {
		return paymentIntent{}, false, err
	}
	if status == http.StatusNotFound {
		// Only Stripe's own "no such object" counts: a 404 page from a proxy
		// or a wrong BaseURL says nothing about the PaymentIntent.
		if e := decodeError(body); e != nil && e.Code == codeResourceMissing {
			return paymentIntent{}, false, nil
		}
	}
	if status < 200 || status >= 300 {
		return paymentIntent{}, false, p.apiError(path, status, header, body)
	}
	pi, err := decodePaymentIntent(body)
	if err != nil {
		return paymentIntent{}, false, p.unusable(path, header, err)
	}
	return pi, true, nil
}

// searchQuery is the search for PaymentIntents created by operation op.
// Stripe's query language quotes strings with ' and escapes a quote inside
// them with a backslash; the backslash itself is escaped too.
func searchQuery(op string) string {
	esc := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(op)
	return "metadata['" + MetaOperation + "']:'" + esc + "'"
}

func (p *Provider) searchCharge(ctx context.Context, hc payonce.HTTPDoer, op string) (payonce.LookupResult, error) {
	if op == "" {
		return payonce.LookupResult{}, errors.New("stripe: lookup charge: OperationID is empty and no ProviderRef is known; nothing to search for")
	}
	const path = "/v1/payment_intents/search"
	query := url.Values{"query": {searchQuery(op)}, "limit": {strconv.Itoa(searchLimit)}}
	status, header, body, err := p.get(ctx, hc, path, query)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	if status < 200 || status >= 300 {
		return payonce.LookupResult{}, p.apiError(path, status, header, body)
	}
	var res listOf[paymentIntent]
	if err := adapterkit.DecodeJSON(body, &res); err != nil {
		return payonce.LookupResult{}, p.unusable(path, header, err)
	}
	if res.Object != objSearchResult {
		return payonce.LookupResult{}, p.unusable(path, header, fmt.Errorf("object is %q, want %q", res.Object, objSearchResult))
	}
	ids := make([]string, 0, len(res.Data))
	for _, pi := range res.Data {
		if pi.Object != objPaymentIntent || pi.ID == "" {
			return payonce.LookupResult{}, p.unusable(path, header, fmt.Errorf("search returned a %q without the expected id", pi.Object))
		}
		ids = append(ids, pi.ID)
	}

	// Every hit counts, even one whose metadata does not echo the
	// operation: a hit dropped here would turn into "not found", and "not
	// found" is the answer that leads to a resend.
	var r payonce.LookupResult
	switch {
	case len(ids) == 0 && res.HasMore:
		return r, p.unusable(path, header, errors.New("search returned no objects but has_more"))
	case len(ids) == 0:
		r = payonce.LookupResult{State: payonce.LookupNotFound}
	case len(ids) > 1 || res.HasMore:
		r = payonce.LookupResult{State: payonce.LookupMultiple, ProviderRef: ids[0], Refs: ids,
			Message: "stripe: more than one PaymentIntent carries this operation id"}
	default:
		r, err = p.chargeState(res.Data[0])
		if err != nil {
			return payonce.LookupResult{}, err
		}
	}
	r.Lag = p.searchLag
	return r, nil
}

// chargeState maps the PaymentIntent of a charge to a lookup state.
func (p *Provider) chargeState(pi paymentIntent) (payonce.LookupResult, error) {
	r := payonce.LookupResult{ProviderRef: pi.ID, Refs: []string{pi.ID}}
	switch pi.Status {
	case piSucceeded, piRequiresCapture:
		r.State = payonce.LookupSucceeded
	case piProcessing:
		r.State = payonce.LookupProcessing
	case piRequiresPaymentMethod, piCanceled:
		// The payment attempt failed (last_payment_error says why) or the
		// PaymentIntent was canceled: no money moved.
		r.State = payonce.LookupFailed
		r.Code = pi.Status
		if lpe := pi.LastPaymentError; lpe != nil {
			if lpe.Code != "" {
				r.Code = lpe.Code
			}
			r.DeclineCode = lpe.DeclineCode
			r.Message = p.scrub(lpe.Message)
		}
	case piRequiresAction, piRequiresConfirmation:
		// Created and confirmed server-side but waiting for something only
		// a customer (or another confirm) could give; payonce gives neither.
		r.State = payonce.LookupFailed
		r.Code = pi.Status
	default:
		return payonce.LookupResult{}, fmt.Errorf("stripe: lookup charge: PaymentIntent %s has unknown status %q", p.scrub(pi.ID), p.scrub(pi.Status))
	}
	return r, nil
}

// captureState maps the PaymentIntent a capture acted on to a lookup state.
func (p *Provider) captureState(pi paymentIntent) (payonce.LookupResult, error) {
	r := payonce.LookupResult{ProviderRef: pi.ID, Refs: []string{pi.ID}}
	switch pi.Status {
	case piSucceeded:
		if pi.AmountReceived <= 0 {
			return payonce.LookupResult{}, fmt.Errorf("stripe: lookup capture: PaymentIntent %s succeeded with amount_received %d", p.scrub(pi.ID), pi.AmountReceived)
		}
		r.State = payonce.LookupSucceeded
	case piProcessing:
		r.State = payonce.LookupProcessing
	case piRequiresCapture:
		// Still only authorized: the capture did not take effect, and a
		// resend with the same key is what completes it.
		return payonce.LookupResult{State: payonce.LookupNotFound}, nil
	case piCanceled, piRequiresPaymentMethod, piRequiresAction, piRequiresConfirmation:
		// Nothing to capture (canceled, or never authorized): Stripe refuses
		// a capture in these states.
		r.State = payonce.LookupFailed
		r.Code = codeUnexpectedState
		r.Message = "stripe: PaymentIntent is " + pi.Status
	default:
		return payonce.LookupResult{}, fmt.Errorf("stripe: lookup capture: PaymentIntent %s has unknown status %q", p.scrub(pi.ID), p.scrub(pi.Status))
	}
	return r, nil
}

// cancelState maps the PaymentIntent a cancel acted on to a lookup state.
func (p *Provider) cancelState(pi paymentIntent) (payonce.LookupResult, error) {
	r := payonce.LookupResult{ProviderRef: pi.ID, Refs: []string{pi.ID}}
	switch pi.Status {
	case piCanceled:
		r.State = payonce.LookupSucceeded
	case piSucceeded:
		// Captured: a PaymentIntent that moved money can no longer be
		// canceled (it needs a refund).
		r.State = payonce.LookupFailed
		r.Code = codeUnexpectedState
		r.Message = "stripe: PaymentIntent is succeeded and can no longer be canceled"
	case piRequiresCapture, piRequiresPaymentMethod, piRequiresAction, piRequiresConfirmation, piProcessing:
		return payonce.LookupResult{State: payonce.LookupNotFound}, nil
	default:
		return payonce.LookupResult{}, fmt.Errorf("stripe: lookup cancel: PaymentIntent %s has unknown status %q", p.scrub(pi.ID), p.scrub(pi.Status))
	}
	return r, nil
}

func (p *Provider) lookupRefund(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.Request.PaymentRef == "" {
		return payonce.LookupResult{}, errors.New("stripe: lookup refund: Request.PaymentRef is empty; refunds are listed by PaymentIntent")
	}
	if q.OperationID == "" {
		return payonce.LookupResult{}, errors.New("stripe: lookup refund: OperationID is empty; refunds are matched by it")
	}
	const path = "/v1/refunds"
	var matches []refund
	after := ""
	for page := 0; ; page++ {
		if page == maxRefundPages {
			return payonce.LookupResult{}, fmt.Errorf("stripe: lookup refund: PaymentIntent has more than %d refunds; look it up by hand", maxRefundPages*100)
		}
		query := url.Values{"payment_intent": {q.Request.PaymentRef}, "limit": {"100"}}
		if after != "" {
			query.Set("starting_after", after)
		}
		status, header, body, err := p.get(ctx, hc, path, query)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		if status < 200 || status >= 300 {
			return payonce.LookupResult{}, p.apiError(path, status, header, body)
		}
		var res listOf[refund]
		if err := adapterkit.DecodeJSON(body, &res); err != nil {
			return payonce.LookupResult{}, p.unusable(path, header, err)
		}
		if res.Object != objList {
			return payonce.LookupResult{}, p.unusable(path, header, fmt.Errorf("object is %q, want %q", res.Object, objList))
		}
		for _, rf := range res.Data {
			if rf.Object != objRefund || rf.ID == "" {
				return payonce.LookupResult{}, p.unusable(path, header, fmt.Errorf("list returned a %q without the expected id", rf.Object))
			}
			if rf.Metadata[MetaOperation] == q.OperationID {
				matches = append(matches, rf)
			}
		}
		if !res.HasMore {
			break
		}
		if len(res.Data) == 0 {
			return payonce.LookupResult{}, p.unusable(path, header, errors.New("list returned no objects but has_more"))
		}
		after = res.Data[len(res.Data)-1].ID
	}

	switch len(matches) {
	case 0:
		return payonce.LookupResult{State: payonce.LookupNotFound}, nil
	case 1:
	default:
		ids := make([]string, len(matches))
		for i, rf := range matches {
			ids[i] = rf.ID
		}
		return payonce.LookupResult{State: payonce.LookupMultiple, ProviderRef: ids[0], Refs: ids,
			Message: "stripe: more than one refund carries this operation id"}, nil
	}
	rf := matches[0]
	r := payonce.LookupResult{ProviderRef: rf.ID, Refs: []string{rf.ID}}
	switch rf.Status {
	case refundSucceeded:
		r.State = payonce.LookupSucceeded
	case refundPending, refundRequiresAction:
		r.State = payonce.LookupProcessing
	case refundFailed, refundCanceled:
		r.State = payonce.LookupFailed
		r.Code = rf.FailureReason
		if r.Code == "" {
			r.Code = "refund_" + rf.Status
		}
		r.Message = "stripe: refund " + rf.Status
	default:
		return payonce.LookupResult{}, fmt.Errorf("stripe: lookup refund: refund %s has unknown status %q", p.scrub(rf.ID), p.scrub(rf.Status))
	}
	return r, nil
}

// get sends one GET and reads at most adapterkit.MaxBodyBytes of the
// answer; a larger one is an *APIError.
func (p *Provider) get(ctx context.Context, hc payonce.HTTPDoer, path string, query url.Values) (int, http.Header, []byte, error) {
	status, header, body, err := adapterkit.Get(ctx, hc, "stripe", p.baseURL, path, query, p.setHeaders)
	if big := (*adapterkit.TooLargeError)(nil); errors.As(err, &big) {
		return 0, nil, nil, &APIError{Method: http.MethodGet, Path: path, HTTPStatus: big.Status,
			RequestID: big.Header.Get("Request-Id"), Message: big.Error()}
	}
	return status, header, body, err
}

func (p *Provider) apiError(path string, status int, header http.Header, body []byte) *APIError {
	e := &APIError{Method: http.MethodGet, Path: path, HTTPStatus: status, RequestID: header.Get("Request-Id")}
	if b := decodeError(body); b != nil {
		e.Type, e.Code, e.DeclineCode, e.Message = b.Type, b.Code, b.DeclineCode, p.scrub(b.Message)
	}
	return e
}

func (p *Provider) unusable(path string, header http.Header, err error) *APIError {
	return &APIError{Method: http.MethodGet, Path: path, RequestID: header.Get("Request-Id"),
		Message: p.scrub("unusable answer: " + err.Error())}
}
