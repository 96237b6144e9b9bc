package yookassa

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

// listLimit is the page size of list lookups (YooKassa's maximum).
const listLimit = 100

// maxListPages bounds the pages one lookup reads; an operation whose search
// would need more is reported as an error rather than guessed about.
const maxListPages = 100

// APIError is a YooKassa answer that a lookup could not use (an error
// status, or a body that is not what the endpoint returns). It never holds
// request headers or credentials; Message is YooKassa's, scrubbed.
type APIError struct {
	// Method and Path are the request's, without the query.
	Method string
	Path   string
	// HTTPStatus is 0 when the status was 2xx but the body unusable.
	HTTPStatus int
	// RequestID is the error object's id, when YooKassa sent one.
	RequestID string
	// Code and Message come from YooKassa's error JSON when there was one;
	// Message may also describe an unusable body.
	Code    string
	Message string
}

// Error describes the failed lookup request.
func (e *APIError) Error() string {
	return adapterkit.ErrorText("yookassa", e.Method, e.Path, e.HTTPStatus, "error id", e.RequestID, e.Code, e.Message)
}

// Temporary reports whether asking again later may give an answer: a 429,
// a 5xx, or an unusable 2xx body.
func (e *APIError) Temporary() bool { return adapterkit.Temporary(e.HTTPStatus) }

// Lookup asks YooKassa, with GETs only, what became of an operation:
//
//   - charge: GET /v3/payments/{ProviderRef} when the ledger knows the
//     payment (consistent), else the payments list from Since minus
//     LookupMargin, paged with its cursor, keeping the payments whose
//     metadata payonce_op is the operation's (Lag = ListLag).
//   - capture, cancel: GET /v3/payments/{PaymentRef} and read its status.
//   - refund: GET /v3/refunds?payment_id={PaymentRef}, paged, keeping the
//     refunds whose description carries RefundMarker + the operation id (or
//     whose metadata payonce_op is it) (Lag = ListLag).
//
// A 404 not_found for a payment read by id is LookupNotFound. Any other
// error status, and any body that is not what the endpoint returns, is an
// error (*APIError): the answer is not known.
func (p *Provider) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if hc == nil {
		return payonce.LookupResult{}, errors.New("yookassa: lookup: nil HTTPDoer")
	}
	switch q.Request.Kind {
	case payonce.KindCharge:
		if q.ProviderRef != "" {
			pm, found, err := p.getPayment(ctx, hc, q.ProviderRef)
			if err != nil {
				return payonce.LookupResult{}, err
			}
			if !found {
				return payonce.LookupResult{State: payonce.LookupNotFound}, nil
			}
			return p.chargeState(pm)
		}
		return p.searchCharge(ctx, hc, q)
	case payonce.KindCapture, payonce.KindCancel:
		ref := q.Request.PaymentRef
		if ref == "" {
			ref = q.ProviderRef
		}
		if ref == "" {
			return payonce.LookupResult{}, fmt.Errorf("yookassa: lookup %s: Request.PaymentRef and ProviderRef are empty; the payment id is needed", q.Request.Kind)
		}
		pm, found, err := p.getPayment(ctx, hc, ref)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		if !found {
			// No such payment: the capture or cancel did not happen.
			return payonce.LookupResult{State: payonce.LookupNotFound}, nil
		}
		if q.Request.Kind == payonce.KindCapture {
			return p.captureState(pm)
		}
		return p.cancelState(pm)
	case payonce.KindRefund:
		return p.lookupRefund(ctx, hc, q)
	default:
		return payonce.LookupResult{}, fmt.Errorf("yookassa: lookup: unknown kind %q", string(q.Request.Kind))
	}
}

// getPayment reads one payment; found is false on YooKassa's 404 not_found.
func (p *Provider) getPayment(ctx context.Context, hc payonce.HTTPDoer, id string) (payment, bool, error) {
	path := "/v3/payments/" + url.PathEscape(id)
	status, body, err := p.get(ctx, hc, path, nil)
	if err != nil {
		return payment{}, false, err
	}
	if status == http.StatusNotFound {
		// Only YooKassa's own "not found" counts: a 404 page from a proxy
		// or a wrong BaseURL says nothing about the payment.
		if e := decodeError(body); e != nil && e.Code == codeNotFound {
			return payment{}, false, nil
		}
	}
	if status < 200 || status >= 300 {
		return payment{}, false, p.apiError(path, status, body)
	}
	pm, err := decodePayment(body)
	if err != nil {
		return payment{}, false, p.unusable(path, err)
	}
	return pm, true, nil
}

// searchCharge pages through the payments created since the first attempt
// (minus LookupMargin) and keeps those carrying the operation id.
func (p *Provider) searchCharge(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.OperationID == "" {
		return payonce.LookupResult{}, errors.New("yookassa: lookup charge: OperationID is empty and no ProviderRef is known; nothing to search for")
	}
	if q.Since.IsZero() {
		return payonce.LookupResult{}, errors.New("yookassa: lookup charge: LookupQuery.Since is zero; the payments list is searched from the first attempt's start")
	}
	const path = "/v3/payments"
	from := q.Since.Add(-p.lookupMargin).UTC().Format("2006-01-02T15:04:05.000Z")
	var matches []payment
	err := pageList(ctx, p, hc, path, url.Values{"created_at.gte": {from}}, func(pm payment) error {
		if pm.ID == "" || pm.Type != "" {
			return errors.New("list returned an item that is not a payment")
		}
		if pm.Metadata[MetaOperation] == q.OperationID {
			matches = append(matches, pm)
		}
		return nil
	})
	if err != nil {
		return payonce.LookupResult{}, err
	}
	var r payonce.LookupResult
	switch len(matches) {
	case 0:
		r = payonce.LookupResult{State: payonce.LookupNotFound}
	case 1:
		r, err = p.chargeState(matches[0])
		if err != nil {
			return payonce.LookupResult{}, err
		}
	default:
		ids := make([]string, len(matches))
		for i, m := range matches {
			ids[i] = m.ID
		}
		r = payonce.LookupResult{State: payonce.LookupMultiple, ProviderRef: ids[0], Refs: ids,
			Message: "yookassa: more than one payment carries this operation id"}
	}
	r.Lag = p.listLag
	return r, nil
}

// pageList reads every page of a YooKassa list, calling fn for each item.
func pageList[T any](ctx context.Context, p *Provider, hc payonce.HTTPDoer, path string, filter url.Values, fn func(T) error) error {
	cursor := ""
	for page := 0; ; page++ {
		if page == maxListPages {
			return fmt.Errorf("yookassa: lookup: GET %s has more than %d items for this search; look it up by hand", path, maxListPages*listLimit)
		}
		query := url.Values{"limit": {strconv.Itoa(listLimit)}}
		for k, v := range filter {
			query[k] = v
		}
		if cursor != "" {
			query.Set("cursor", cursor)
		}
		status, body, err := p.get(ctx, hc, path, query)
		if err != nil {
			return err
		}
		if status < 200 || status >= 300 {
			return p.apiError(path, status, body)
		}
		var res listOf[T]
		if err := adapterkit.DecodeJSON(body, &res); err != nil {
			return p.unusable(path, err)
		}
		if res.Type != typeList {
			return p.unusable(path, fmt.Errorf("type is %q, want %q", res.Type, typeList))
		}
		for _, it := range res.Items {
			if err := fn(it); err != nil {
				return p.unusable(path, err)
			}
		}
		if res.NextCursor == "" {
			return nil
		}
		if len(res.Items) == 0 || res.NextCursor == cursor {
			return p.unusable(path, errors.New("list returned no progress but a next_cursor"))
		}
		cursor = res.NextCursor
	}
}

// authorizedThenReleased reports a canceled payment that had been
// authorized: the merchant canceled it or its capture window expired.
func authorizedThenReleased(pm payment) bool {
	cd := pm.CancellationDetails
	return pm.Status == statusCanceled && cd != nil &&
		(cd.Reason == reasonCanceledByMerchant || cd.Reason == reasonExpiredOnCapture)
}

// chargeState maps the payment of a charge to a lookup state.
func (p *Provider) chargeState(pm payment) (payonce.LookupResult, error) {
	r := payonce.LookupResult{ProviderRef: pm.ID, Refs: []string{pm.ID}}
	switch {
	case pm.Status == statusSucceeded, pm.Status == statusWaitingForCapture:
		r.State = payonce.LookupSucceeded
	case authorizedThenReleased(pm):
		// The charge itself succeeded (the money was held); what happened
		// to the hold afterwards is the cancel's or nobody's business.
		r.State = payonce.LookupSucceeded
	case pm.Status == statusPending:
		r.State = payonce.LookupProcessing
	case pm.Status == statusCanceled:
		r.State = payonce.LookupFailed
		r.Code = codeCanceled
		if cd := pm.CancellationDetails; cd != nil {
			r.DeclineCode = cd.Reason
			r.Message = p.scrub("yookassa: payment canceled by " + cd.Party + ": " + cd.Reason)
		}
	default:
		return payonce.LookupResult{}, fmt.Errorf("yookassa: lookup charge: payment %s has unknown status %q", p.scrub(pm.ID), p.scrub(pm.Status))
	}
	return r, nil
}

// captureState maps the payment a capture acted on to a lookup state.
func (p *Provider) captureState(pm payment) (payonce.LookupResult, error) {
	r := payonce.LookupResult{ProviderRef: pm.ID, Refs: []string{pm.ID}}
	switch pm.Status {
	case statusSucceeded:
		r.State = payonce.LookupSucceeded
	case statusWaitingForCapture, statusPending:
		// Not captured (yet): the capture did not take effect, and a resend
		// with the same key is what completes it (or is refused, for a
		// payment still pending).
		return payonce.LookupResult{State: payonce.LookupNotFound}, nil
	case statusCanceled:
		// Nothing to capture: canceled or expired.
		r.State = payonce.LookupFailed
		r.Code = codeUnexpectedStatus
		r.Message = "yookassa: payment is canceled"
		if cd := pm.CancellationDetails; cd != nil {
			r.DeclineCode = cd.Reason
		}
	default:
		return payonce.LookupResult{}, fmt.Errorf("yookassa: lookup capture: payment %s has unknown status %q", p.scrub(pm.ID), p.scrub(pm.Status))
	}
	return r, nil
}

// cancelState maps the payment a cancel acted on to a lookup state.
func (p *Provider) cancelState(pm payment) (payonce.LookupResult, error) {
	r := payonce.LookupResult{ProviderRef: pm.ID, Refs: []string{pm.ID}}
	switch pm.Status {
	case statusCanceled:
		r.State = payonce.LookupSucceeded
	case statusSucceeded:
		// Captured: a payment that moved money can no longer be canceled.
		r.State = payonce.LookupFailed
		r.Code = codeUnexpectedStatus
		r.Message = "yookassa: payment is succeeded and can no longer be canceled"
	case statusWaitingForCapture, statusPending:
		return payonce.LookupResult{State: payonce.LookupNotFound}, nil
	default:
		return payonce.LookupResult{}, fmt.Errorf("yookassa: lookup cancel: payment %s has unknown status %q", p.scrub(pm.ID), p.scrub(pm.Status))
	}
	return r, nil
}

// refundMatches reports whether rf was created by operation op: its
// description carries the marker (the adapter writes it), or its metadata
// does (should YooKassa ever return refund metadata).
func refundMatches(rf refund, op string) bool {
	if rf.Metadata[MetaOperation] == op {
		return true
	}
	marker := RefundMarker + op
	i := strings.Index(rf.Description, marker)
	if i < 0 {
		return false
	}
	// The marker ends the description or is followed by a space: "op-1"
	// must not match "op-10".
	rest := rf.Description[i+len(marker):]
	return rest == "" || rest[0] == ' '
}

func (p *Provider) lookupRefund(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.Request.PaymentRef == "" {
		return payonce.LookupResult{}, errors.New("yookassa: lookup refund: Request.PaymentRef is empty; refunds are listed by payment")
	}
	if q.OperationID == "" {
		return payonce.LookupResult{}, errors.New("yookassa: lookup refund: OperationID is empty; refunds are matched by it")
	}
	const path = "/v3/refunds"
	var matches []refund
	err := pageList(ctx, p, hc, path, url.Values{"payment_id": {q.Request.PaymentRef}}, func(rf refund) error {
		if rf.ID == "" || rf.Type != "" {
			return errors.New("list returned an item that is not a refund")
		}
		if refundMatches(rf, q.OperationID) {
			matches = append(matches, rf)
		}
		return nil
	})
	if err != nil {
		return payonce.LookupResult{}, err
	}
	switch len(matches) {
	case 0:
		return payonce.LookupResult{State: payonce.LookupNotFound, Lag: p.listLag}, nil
	case 1:
	default:
		ids := make([]string, len(matches))
		for i, rf := range matches {
			ids[i] = rf.ID
		}
		return payonce.LookupResult{State: payonce.LookupMultiple, ProviderRef: ids[0], Refs: ids, Lag: p.listLag,
			Message: "yookassa: more than one refund carries this operation id"}, nil
	}
	rf := matches[0]
	r := payonce.LookupResult{ProviderRef: rf.ID, Refs: []string{rf.ID}, Lag: p.listLag}
	switch rf.Status {
	case statusSucceeded:
		r.State = payonce.LookupSucceeded
	case statusPending:
		r.State = payonce.LookupProcessing
	case statusCanceled:
		r.State = payonce.LookupFailed
		r.Code = codeRefundCanceled
		if cd := rf.CancellationDetails; cd != nil {
			r.DeclineCode = cd.Reason
			r.Message = p.scrub("yookassa: refund canceled by " + cd.Party + ": " + cd.Reason)
		}
	default:
		return payonce.LookupResult{}, fmt.Errorf("yookassa: lookup refund: refund %s has unknown status %q", p.scrub(rf.ID), p.scrub(rf.Status))
	}
	return r, nil
}

// get sends one GET and reads at most adapterkit.MaxBodyBytes of the
// answer; a larger one is an *APIError.
func (p *Provider) get(ctx context.Context, hc payonce.HTTPDoer, path string, query url.Values) (int, []byte, error) {
	status, _, body, err := adapterkit.Get(ctx, hc, "yookassa", p.baseURL, path, query, p.setHeaders)
	if big := (*adapterkit.TooLargeError)(nil); errors.As(err, &big) {
		return 0, nil, &APIError{Method: http.MethodGet, Path: path, HTTPStatus: big.Status, Message: big.Error()}
	}
	return status, body, err
}

func (p *Provider) apiError(path string, status int, body []byte) *APIError {
	e := &APIError{Method: http.MethodGet, Path: path, HTTPStatus: status}
	if b := decodeError(body); b != nil {
		e.RequestID, e.Code, e.Message = b.ID, b.Code, p.scrub(b.Description)
	}
	return e
}

func (p *Provider) unusable(path string, err error) *APIError {
	return &APIError{Method: http.MethodGet, Path: path, Message: p.scrub("unusable answer: " + err.Error())}
}
