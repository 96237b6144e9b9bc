package checkout

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

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
//   - charge: GET /payments/{id} for ProviderRef and for every earlier key
//     generation's reference (q.EarlierRefs); and, when the ledger knows no
//     payment or the operation was resent under a new key,
//     GET /payments?reference={operation id} (every generation's payments
//     carry that reference), whose hits are each read again by
//     GET /payments/{id} before they count.
//   - capture, cancel, refund: GET /payments/{PaymentRef}/actions, keeping
//     the Capture, Void or Refund actions whose reference is the
//     operation's (or whose id is ProviderRef or an earlier generation's
//     reference). The actions list is itself a read by the payment's id.
//
// A list hit is never trusted for status: only the object read by id is.
// Every object read is checked to belong to the request (reference and
// payonce_op, amount, currency where the object carries them): one that
// does not is reported as a Contradiction, never as succeeded or failed.
// The objects of every key generation are combined by adapterkit.Combine:
// one that succeeded is success, two are LookupMultiple, and an earlier
// generation's failure does not answer for the current key (the
// generation of an object is its payonce_key metadata or its id among
// q.EarlierRefs: adapterkit.IsEarlier).
//
// Results found by reference or among actions carry Lag = SettleLag: their
// "not found" is believed only once that long has passed since the last
// attempt (see Config.SettleLag). A 404 from Checkout.com (Cko-Request-Id
// set, not an HTML page) for a payment read by id is "no such payment". Any
// other error status, and any body that is not what the endpoint returns,
// is an error (*APIError).
func (p *Provider) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if hc == nil {
		return payonce.LookupResult{}, errors.New("checkout: lookup: nil HTTPDoer")
	}
	switch q.Request.Kind {
	case payonce.KindCharge:
		return p.lookupCharge(ctx, hc, q)
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		return p.lookupAction(ctx, hc, q)
	default:
		return payonce.LookupResult{}, fmt.Errorf("checkout: lookup: unknown kind %q", string(q.Request.Kind))
	}
}

// resent reports an operation that has been sent under more than one key.
func resent(q payonce.LookupQuery) bool {
	return q.Generation > 0 || len(q.EarlierKeys) > 0 || len(q.EarlierRefs) > 0
}

// lookupCharge reads the charge's payments by id (the ledger's reference
// and every earlier generation's) and, unless the ledger knows the payment
// of a never-resent operation, lists the payments carrying the operation's
// reference and reads each of them by id.
func (p *Provider) lookupCharge(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	search := q.ProviderRef == "" || resent(q)
	if search && q.OperationID == "" {
		return payonce.LookupResult{}, errors.New("checkout: lookup charge: OperationID is empty and no ProviderRef is known; nothing to search for")
	}
	var ms []adapterkit.Match
	seen := map[string]bool{}
	read := func(id string, listed bool) error {
		if id == "" || seen[id] {
			return nil
		}
		seen[id] = true
		pm, found, err := p.getPayment(ctx, hc, id)
		switch {
		case err != nil:
			return err
		case !found && listed:
			return &APIError{Method: http.MethodGet, Path: "/payments/{id}",
				Message: p.scrub("payment " + id + " is listed by reference but GET by id answers 404")}
		case !found:
			return nil
		}
		m, err := p.chargeMatch(ctx, hc, q, pm)
		if err != nil {
			return err
		}
		ms = append(ms, m)
		return nil
	}
	for _, id := range append([]string{q.ProviderRef}, q.EarlierRefs...) {
		if err := read(id, false); err != nil {
			return payonce.LookupResult{}, err
		}
	}
	var lag time.Duration
	if search {
		lag = p.settleLag
		hits, err := p.searchPayments(ctx, hc, q.OperationID)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		for _, id := range hits {
			if err := read(id, true); err != nil {
				return payonce.LookupResult{}, err
			}
		}
	}
	return adapterkit.Combine(p.Name(), ms, lag), nil
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

// searchPayments lists GET /payments?reference={op} and returns the ids of
// the payments whose reference (or payonce_op metadata) is op.
func (p *Provider) searchPayments(ctx context.Context, hc payonce.HTTPDoer, op string) ([]string, error) {
	const path = "/payments"
	var hits []string
	for page, skip := 0, 0; ; page++ {
		if page == maxListPages {
			return nil, fmt.Errorf("checkout: lookup charge: more than %d payments carry this reference; look it up by hand", maxListPages*listLimit)
		}
		query := url.Values{"reference": {op}, "limit": {strconv.Itoa(listLimit)}, "skip": {strconv.Itoa(skip)}}
		status, header, body, err := p.get(ctx, hc, path, query)
		if err != nil {
			return nil, err
		}
		if status < 200 || status >= 300 {
			return nil, p.apiError(path, status, header, body)
		}
		var res paymentList
		if err := adapterkit.DecodeJSON(body, &res); err != nil {
			return nil, p.unusable(path, header, err)
		}
		if res.TotalCount == nil {
			return nil, p.unusable(path, header, errors.New("answer has no total_count: not a payment list"))
		}
		for _, pm := range res.Data {
			if pm.ID == "" {
				return nil, p.unusable(path, header, errors.New("list returned a payment without an id"))
			}
			if pm.Reference == op || opOf(pm.Metadata, "") == op {
				hits = append(hits, pm.ID)
			}
		}
		skip += len(res.Data)
		if skip >= *res.TotalCount {
			return hits, nil
		}
		if len(res.Data) == 0 {
			return nil, p.unusable(path, header, errors.New("list returned no payments but total_count says there are more"))
		}
	}
}

// chargeMatch is what one payment, read by id, says about the charge. A
// declined payment's code is read from its Authorization action; if that
// read fails the decline is still certain and is reported without the
// code. A Canceled or Expired payment without an approved flag is decided
// by its actions: an approved Authorization means it was authorized, then
// released.
func (p *Provider) chargeMatch(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery, pm payment) (adapterkit.Match, error) {
	m := adapterkit.Match{Earlier: adapterkit.IsEarlier(q, keyOf(pm.Metadata), pm.ID)}
	if why := paymentContradiction(q.Request, q.OperationID, pm); why != "" {
		why = p.scrub(why)
		m.Result = payonce.LookupResult{ProviderRef: pm.ID, Refs: []string{pm.ID}, Contradiction: why, Message: "checkout: " + why}
		return m, nil
	}
	st := p.chargeState(pm)
	if st.Verdict == stUnknown && pm.Approved == nil && (pm.Status == statusCanceled || pm.Status == statusExpired) {
		acts, err := p.actions(ctx, hc, pm.ID)
		if err != nil && !errors.Is(err, errNoPayment) {
			return m, err
		}
		approved := false
		for _, a := range acts {
			approved = approved || (a.Type == actionAuthorization && a.Approved != nil && *a.Approved)
		}
		pm.Approved = &approved
		st = p.chargeState(pm)
	}
	if st.Verdict == stFailed && st.Code == codeDeclined && st.Decline == "" {
		if acts, err := p.actions(ctx, hc, pm.ID); err == nil {
			for _, a := range acts {
				if a.Type == actionAuthorization && (a.Approved == nil || !*a.Approved) {
					st.Decline, st.Message = p.scrub(a.ResponseCode), p.scrub(a.ResponseSummary)
					break
				}
			}
		}
	}
	r, err := st.Result("checkout", pm.ID)
	m.Result = r
	return m, err
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
	var ms []adapterkit.Match
	for _, a := range acts {
		if a.Type != want {
			continue
		}
		mine := (q.OperationID != "" && (a.Reference == q.OperationID || opOf(a.Metadata, "") == q.OperationID)) ||
			(q.ProviderRef != "" && a.ID == q.ProviderRef) || slices.Contains(q.EarlierRefs, a.ID)
		if !mine {
			continue
		}
		m := adapterkit.Match{Earlier: adapterkit.IsEarlier(q, keyOf(a.Metadata), a.ID)}
		if why := actionContradiction(q.Request, q.OperationID, a); why != "" {
			why = p.scrub(why)
			m.Result = payonce.LookupResult{ProviderRef: a.ID, Refs: []string{a.ID}, Contradiction: why, Message: "checkout: " + why}
		} else if m.Result, err = p.actionState(a).Result("checkout", a.ID); err != nil {
			return payonce.LookupResult{}, err
		}
		ms = append(ms, m)
	}
	return adapterkit.Combine(p.Name(), ms, p.settleLag), nil
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
