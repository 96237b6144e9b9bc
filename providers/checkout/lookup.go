package checkout

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

// listLimit is the page size of GET /payments?reference=.
const listLimit = 100

// maxListPages bounds the pages one reference lookup reads.
const maxListPages = 10

// APIError is a Checkout.com answer that a lookup could not use (an error
// status, or a body that is not what the endpoint returns). It never holds
// request headers or the secret key.
type APIError struct {
	// Method and Path are the request's, without the query.
	Method string
	Path   string
	// HTTPStatus is 0 when the status was 2xx but the body unusable.
	HTTPStatus int
	// RequestID is the Cko-Request-Id header (or the body's request_id).
	RequestID string
	// Code is the error_type and Message the error_codes, when Checkout.com
	// sent them; Message may also describe an unusable body.
	Code    string
	Message string
}

// Error describes the failed lookup request.
func (e *APIError) Error() string {
	return adapterkit.ErrorText("checkout", e.Method, e.Path, e.HTTPStatus, "request", e.RequestID, e.Code, e.Message)
}

// Temporary reports whether asking again later may give an answer: a 429,
// a 5xx, or an unusable 2xx body.
func (e *APIError) Temporary() bool { return adapterkit.Temporary(e.HTTPStatus) }

// Lookup asks Checkout.com, with GETs only, what became of an operation:
//
//   - charge: GET /payments/{ProviderRef} when the ledger knows the
//     payment, else GET /payments?reference={operation id}, keeping the
//     payments whose reference (or metadata payonce_op) is the operation's.
//   - capture, cancel, refund: GET /payments/{PaymentRef}/actions, keeping
//     the Capture, Void or Refund actions whose reference is the
//     operation's (or whose id is the ProviderRef the ledger holds).
//
// Results found by reference or among actions carry Lag = SettleLag: their
// "not found" is believed only once that long has passed since the last
// attempt (see Config.SettleLag). A 404 from Checkout.com (Cko-Request-Id
// set, not an HTML page) for a payment read by id is LookupNotFound. Any
// other error status, and any body that is not what the endpoint returns,
// is an error (*APIError).
func (p *Provider) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if hc == nil {
		return payonce.LookupResult{}, errors.New("checkout: lookup: nil HTTPDoer")
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
			return p.chargeState(ctx, hc, pm)
		}
		return p.searchCharge(ctx, hc, q.OperationID)
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		return p.lookupAction(ctx, hc, q)
	default:
		return payonce.LookupResult{}, fmt.Errorf("checkout: lookup: unknown kind %q", string(q.Request.Kind))
	}
}

// getPayment reads one payment; found is false on Checkout.com's 404.
func (p *Provider) getPayment(ctx context.Context, hc payonce.HTTPDoer, id string) (payment, bool, error) {
	path := "/payments/" + url.PathEscape(id)
	status, header, body, err := p.get(ctx, hc, path, nil)
	if err != nil {
		return payment{}, false, err
	}
	if status == http.StatusNotFound && ckoNotFound(header, body) {
		return payment{}, false, nil
	}
	if status < 200 || status >= 300 {
		return payment{}, false, p.apiError(path, status, header, body)
	}
	pm, err := decodePayment(body)
	if err != nil {
		return payment{}, false, p.unusable(path, header, err)
	}
	return pm, true, nil
}

// ckoNotFound tells Checkout.com's own 404 (empty or JSON body, with a
// Cko-Request-Id) from a proxy's or a wrong BaseURL's, which proves nothing.
func ckoNotFound(header http.Header, body []byte) bool {
	if header.Get("Cko-Request-Id") == "" {
		return false
	}
	b := strings.TrimSpace(string(body))
	return b == "" || strings.HasPrefix(b, "{")
}

func (p *Provider) searchCharge(ctx context.Context, hc payonce.HTTPDoer, op string) (payonce.LookupResult, error) {
	if op == "" {
		return payonce.LookupResult{}, errors.New("checkout: lookup charge: OperationID is empty and no ProviderRef is known; nothing to search for")
	}
	const path = "/payments"
	var matches []payment
	for page, skip := 0, 0; ; page++ {
		if page == maxListPages {
			return payonce.LookupResult{}, fmt.Errorf("checkout: lookup charge: more than %d payments carry this reference; look it up by hand", maxListPages*listLimit)
		}
		query := url.Values{"reference": {op}, "limit": {strconv.Itoa(listLimit)}, "skip": {strconv.Itoa(skip)}}
		status, header, body, err := p.get(ctx, hc, path, query)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		if status < 200 || status >= 300 {
			return payonce.LookupResult{}, p.apiError(path, status, header, body)
		}
		var res paymentList
		if err := adapterkit.DecodeJSON(body, &res); err != nil {
			return payonce.LookupResult{}, p.unusable(path, header, err)
		}
		if res.TotalCount == nil {
			return payonce.LookupResult{}, p.unusable(path, header, errors.New("answer has no total_count: not a payment list"))
		}
		for _, pm := range res.Data {
			if pm.ID == "" {
				return payonce.LookupResult{}, p.unusable(path, header, errors.New("list returned a payment without an id"))
			}
			if pm.Reference == op || fmt.Sprint(pm.Metadata[MetaOperation]) == op {
				matches = append(matches, pm)
			}
		}
		skip += len(res.Data)
		if skip >= *res.TotalCount {
			break
		}
		if len(res.Data) == 0 {
			return payonce.LookupResult{}, p.unusable(path, header, errors.New("list returned no payments but total_count says there are more"))
		}
	}

	var r payonce.LookupResult
	switch len(matches) {
	case 0:
		r = payonce.LookupResult{State: payonce.LookupNotFound}
	case 1:
		var err error
		r, err = p.chargeState(ctx, hc, matches[0])
		if err != nil {
			return payonce.LookupResult{}, err
		}
	default:
		ids := make([]string, len(matches))
		for i, m := range matches {
			ids[i] = m.ID
		}
		r = payonce.LookupResult{State: payonce.LookupMultiple, ProviderRef: ids[0], Refs: ids,
			Message: "checkout: more than one payment carries this operation's reference"}
	}
	r.Lag = p.settleLag
	return r, nil
}

// chargeState maps the payment of a charge to a lookup state. For a
// declined payment it reads the authorization action for the decline code;
// if that read fails the decline is still certain and is reported without
// the code.
func (p *Provider) chargeState(ctx context.Context, hc payonce.HTTPDoer, pm payment) (payonce.LookupResult, error) {
	r := payonce.LookupResult{ProviderRef: pm.ID, Refs: []string{pm.ID}}
	switch {
	case pm.Status == statusPending:
		r.State = payonce.LookupProcessing
	case isAuthorized(pm.Status) && pm.approved(), (pm.Status == statusCanceled || pm.Status == statusExpired) && pm.approved():
		// Approved: the money was taken or held. A later void, refund or
		// expiry is another operation's business.
		r.State = payonce.LookupSucceeded
	case pm.Status == statusDeclined || (isFinalFailure(pm.Status) && !pm.approved()):
		r.State = payonce.LookupFailed
		r.Code = codeDeclined
		if acts, err := p.actions(ctx, hc, pm.ID); err == nil {
			for _, a := range acts {
				if a.Type == actionAuthorization && (a.Approved == nil || !*a.Approved) {
					r.DeclineCode, r.Message = p.scrub(a.ResponseCode), p.scrub(a.ResponseSummary)
					break
				}
			}
		}
	default:
		return payonce.LookupResult{}, fmt.Errorf("checkout: lookup charge: payment %s has status %q (approved %t), which a charge does not end in",
			p.scrub(pm.ID), p.scrub(pm.Status), pm.approved())
	}
	return r, nil
}

// actionType is the action a capture, cancel or refund creates.
func actionType(k payonce.Kind) string {
	switch k {
	case payonce.KindCapture:
		return actionCapture
	case payonce.KindCancel:
		return actionVoid
	}
	return actionRefund
}

func (p *Provider) lookupAction(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.Request.PaymentRef == "" {
		return payonce.LookupResult{}, fmt.Errorf("checkout: lookup %s: Request.PaymentRef is empty; actions are listed by payment", q.Request.Kind)
	}
	if q.OperationID == "" && q.ProviderRef == "" {
		return payonce.LookupResult{}, fmt.Errorf("checkout: lookup %s: OperationID and ProviderRef are empty; actions are matched by them", q.Request.Kind)
	}
	acts, err := p.actions(ctx, hc, q.Request.PaymentRef)
	if errors.Is(err, errNoPayment) {
		// No such payment: no action on it either.
		return payonce.LookupResult{State: payonce.LookupNotFound, Lag: p.settleLag}, nil
	}
	if err != nil {
		return payonce.LookupResult{}, err
	}
	want := actionType(q.Request.Kind)
	var matches []action
	for _, a := range acts {
		if a.Type != want {
			continue
		}
		if (q.OperationID != "" && a.Reference == q.OperationID) || (q.ProviderRef != "" && a.ID == q.ProviderRef) ||
			(q.OperationID != "" && fmt.Sprint(a.Metadata[MetaOperation]) == q.OperationID) {
			matches = append(matches, a)
		}
	}
	switch len(matches) {
	case 0:
		return payonce.LookupResult{State: payonce.LookupNotFound, Lag: p.settleLag}, nil
	case 1:
	default:
		ids := make([]string, len(matches))
		for i, a := range matches {
			ids[i] = a.ID
		}
		return payonce.LookupResult{State: payonce.LookupMultiple, ProviderRef: ids[0], Refs: ids, Lag: p.settleLag,
			Message: "checkout: more than one " + want + " action carries this operation's reference"}, nil
	}
	a := matches[0]
	r := payonce.LookupResult{ProviderRef: a.ID, Refs: []string{a.ID}, Lag: p.settleLag}
	switch {
	case a.Approved == nil:
		// Listed but not decided yet.
		r.State = payonce.LookupProcessing
	case *a.Approved:
		r.State = payonce.LookupSucceeded
	default:
		r.State = payonce.LookupFailed
		r.Code = codeActionDeclined
		r.DeclineCode = p.scrub(a.ResponseCode)
		r.Message = p.scrub(a.ResponseSummary)
	}
	return r, nil
}

var errNoPayment = errors.New("checkout: no such payment")

// actions reads GET /payments/{id}/actions (a bare JSON array); errNoPayment
// on Checkout.com's 404.
func (p *Provider) actions(ctx context.Context, hc payonce.HTTPDoer, id string) ([]action, error) {
	path := "/payments/" + url.PathEscape(id) + "/actions"
	status, header, body, err := p.get(ctx, hc, path, nil)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound && ckoNotFound(header, body) {
		return nil, errNoPayment
	}
	if status < 200 || status >= 300 {
		return nil, p.apiError(path, status, header, body)
	}
	var acts []action
	if err := adapterkit.DecodeJSON(body, &acts); err != nil {
		return nil, p.unusable(path, header, err)
	}
	if acts == nil {
		return nil, p.unusable(path, header, errors.New("answer is not a list of actions"))
	}
	for _, a := range acts {
		if a.ID == "" || a.Type == "" {
			return nil, p.unusable(path, header, errors.New("an action has no id or type"))
		}
	}
	return acts, nil
}

// get sends one GET and reads at most adapterkit.MaxBodyBytes of the
// answer; a larger one is an *APIError.
func (p *Provider) get(ctx context.Context, hc payonce.HTTPDoer, path string, query url.Values) (int, http.Header, []byte, error) {
	status, header, body, err := adapterkit.Get(ctx, hc, "checkout", p.baseURL, path, query, p.setHeaders)
	if big := (*adapterkit.TooLargeError)(nil); errors.As(err, &big) {
		return 0, nil, nil, &APIError{Method: http.MethodGet, Path: path, HTTPStatus: big.Status,
			RequestID: big.Header.Get("Cko-Request-Id"), Message: big.Error()}
	}
	return status, header, body, err
}

func (p *Provider) apiError(path string, status int, header http.Header, body []byte) *APIError {
	e := &APIError{Method: http.MethodGet, Path: path, HTTPStatus: status, RequestID: header.Get("Cko-Request-Id")}
	if b := decodeError(body); b != nil {
		e.Code, e.Message = p.scrub(b.ErrorType), p.scrub(b.message())
		if e.RequestID == "" {
			e.RequestID = b.RequestID
		}
	}
	return e
}

func (p *Provider) unusable(path string, header http.Header, err error) *APIError {
	return &APIError{Method: http.MethodGet, Path: path, RequestID: header.Get("Cko-Request-Id"),
		Message: p.scrub("unusable answer: " + err.Error())}
}
