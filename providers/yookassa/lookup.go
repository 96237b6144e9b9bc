package yookassa

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

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
//   - charge: GET /v3/payments/{id} for ProviderRef and for every earlier
//     key generation's reference (q.EarlierRefs); and, when the ledger
//     knows no payment or the operation was resent under a new key, the
//     payments list from Since minus LookupMargin, paged with its cursor,
//     whose hits (metadata payonce_op = the operation id) are each read
//     again by id before they count (Lag = ListLag).
//   - capture, cancel: GET /v3/payments/{PaymentRef} and read its status.
//   - refund: GET /v3/refunds?payment_id={PaymentRef}, paged, keeping the
//     refunds whose description carries RefundMarker + the operation id (or
//     whose metadata payonce_op is it), each read again by
//     GET /v3/refunds/{id}, plus ProviderRef and q.EarlierRefs by id
//     (Lag = ListLag).
//
// A list hit is never trusted for status: only the object read by id is.
// Every object read is checked to belong to the request (operation id,
// amount in minor units, currency, payment): one that does not is reported
// as a Contradiction, never as succeeded or failed. The objects of every
// key generation are combined by adapterkit.Combine: one that succeeded is
// success, two are LookupMultiple, and an earlier generation's failure does
// not answer for the current key (the generation of an object is its
// payonce_key metadata, or for a refund the payonce_key marker of its
// description; see adapterkit.IsEarlier).
//
// A 404 not_found for an object read by id is "no such object". Any other
// error status, and any body that is not what the endpoint returns, is an
// error (*APIError): the answer is not known.
func (p *Provider) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if hc == nil {
		return payonce.LookupResult{}, errors.New("yookassa: lookup: nil HTTPDoer")
	}
	switch q.Request.Kind {
	case payonce.KindCharge:
		return p.lookupCharge(ctx, hc, q)
	case payonce.KindCapture, payonce.KindCancel:
		return p.lookupActedOn(ctx, hc, q)
	case payonce.KindRefund:
		return p.lookupRefund(ctx, hc, q)
	default:
		return payonce.LookupResult{}, fmt.Errorf("yookassa: lookup: unknown kind %q", string(q.Request.Kind))
	}
}

// resent reports an operation that has been sent under more than one key.
func resent(q payonce.LookupQuery) bool {
	return q.Generation > 0 || len(q.EarlierKeys) > 0 || len(q.EarlierRefs) > 0
}

// matcher collects the objects a lookup found, each once.
type matcher struct {
	ms   []adapterkit.Match
	seen map[string]bool
}

func (m *matcher) done(id string) bool {
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	d := m.seen[id]
	m.seen[id] = true
	return d
}

// lookupCharge reads the charge's payments by id (the ledger's reference
// and every earlier generation's) and, unless the ledger knows the payment
// of a never-resent operation, searches the payments list for the others.
func (p *Provider) lookupCharge(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	search := q.ProviderRef == "" || resent(q)
	if search {
		if q.OperationID == "" {
			return payonce.LookupResult{}, errors.New("yookassa: lookup charge: OperationID is empty and no ProviderRef is known; nothing to search for")
		}
		if q.Since.IsZero() {
			return payonce.LookupResult{}, errors.New("yookassa: lookup charge: LookupQuery.Since is zero; the payments list is searched from the first attempt's start")
		}
	}
	var m matcher
	read := func(id string, listed bool) error {
		if id == "" || m.done(id) {
			return nil
		}
		pm, found, err := p.getPayment(ctx, hc, id)
		switch {
		case err != nil:
			return err
		case !found && listed:
			return p.unusable("/v3/payments/{id}", fmt.Errorf("payment %s is in the list but GET by id answers not_found", id))
		case !found:
			return nil
		}
		match, err := p.paymentMatch(q, pm)
		if err != nil {
			return err
		}
		m.ms = append(m.ms, match)
		return nil
	}
	for _, id := range append([]string{q.ProviderRef}, q.EarlierRefs...) {
		if err := read(id, false); err != nil {
			return payonce.LookupResult{}, err
		}
	}
	var lag time.Duration
	if search {
		lag = p.listLag
		hits, err := p.searchPayments(ctx, hc, q)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		for _, id := range hits {
			if err := read(id, true); err != nil {
				return payonce.LookupResult{}, err
			}
		}
	}
	return adapterkit.Combine(p.Name(), m.ms, lag), nil
}

// searchPayments pages through the payments created since the first
// attempt (minus LookupMargin) and returns the ids of those carrying the
// operation id, of any key generation.
func (p *Provider) searchPayments(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) ([]string, error) {
	const path = "/v3/payments"
	from := q.Since.Add(-p.lookupMargin).UTC().Format("2006-01-02T15:04:05.000Z")
	var hits []string
	err := pageList(ctx, p, hc, path, url.Values{"created_at.gte": {from}}, func(pm payment) error {
		if pm.ID == "" || pm.Type != "" {
			return errors.New("list returned an item that is not a payment")
		}
		if pm.Metadata[MetaOperation] == q.OperationID {
			hits = append(hits, pm.ID)
		}
		return nil
	})
	return hits, err
}

// paymentMatch is what one payment, read by id, says about the operation.
func (p *Provider) paymentMatch(q payonce.LookupQuery, pm payment) (adapterkit.Match, error) {
	earlier := adapterkit.IsEarlier(q, pm.Metadata[MetaKey], pm.ID)
	why, err := paymentContradiction(q.Request, q.OperationID, pm)
	if err != nil {
		return adapterkit.Match{}, p.unusable("/v3/payments/{id}", err)
	}
	if why != "" {
		return adapterkit.Match{Earlier: earlier, Result: p.contradiction(pm.ID, why)}, nil
	}
	r, err := p.paymentState(q.Request.Kind, pm).Result("yookassa", pm.ID)
	return adapterkit.Match{Result: r, Earlier: earlier}, err
}

func (p *Provider) contradiction(id, why string) payonce.LookupResult {
	why = p.scrub(why)
	return payonce.LookupResult{ProviderRef: id, Refs: []string{id}, Contradiction: why, Message: "yookassa: " + why}
}

// lookupActedOn reads the payment a capture or cancel acted on. There is
// one payment whatever the key generation, so nothing is combined.
func (p *Provider) lookupActedOn(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
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
	if q.Request.PaymentRef == "" {
		q.Request.PaymentRef = ref
	}
	m, err := p.paymentMatch(q, pm)
	return m.Result, err
}

// getPayment reads one payment; found is false on YooKassa's 404 not_found.
func (p *Provider) getPayment(ctx context.Context, hc payonce.HTTPDoer, id string) (payment, bool, error) {
	path := "/v3/payments/" + url.PathEscape(id)
	body, found, err := p.getByID(ctx, hc, path)
	if err != nil || !found {
		return payment{}, found, err
	}
	pm, err := decodePayment(body)
	if err != nil {
		return payment{}, false, p.unusable(path, err)
	}
	return pm, true, nil
}

// getRefund reads one refund; found is false on YooKassa's 404 not_found.
func (p *Provider) getRefund(ctx context.Context, hc payonce.HTTPDoer, id string) (refund, bool, error) {
	path := "/v3/refunds/" + url.PathEscape(id)
	body, found, err := p.getByID(ctx, hc, path)
	if err != nil || !found {
		return refund{}, found, err
	}
	rf, err := decodeRefund(body)
	if err != nil {
		return refund{}, false, p.unusable(path, err)
	}
	return rf, true, nil
}

// getByID sends one GET of an object; found is false on YooKassa's own 404
// not_found (a 404 page from a proxy or a wrong BaseURL says nothing).
func (p *Provider) getByID(ctx context.Context, hc payonce.HTTPDoer, path string) ([]byte, bool, error) {
	status, body, err := p.get(ctx, hc, path, nil)
	if err != nil {
		return nil, false, err
	}
	if status == http.StatusNotFound {
		if e := decodeError(body); e != nil && e.Code == codeNotFound {
			return nil, false, nil
		}
	}
	if status < 200 || status >= 300 {
		return nil, false, p.apiError(path, status, body)
	}
	return body, true, nil
}

// lookupRefund lists the payment's refunds, keeps those marked with the
// operation id (any key generation), reads each of them, ProviderRef and
// every earlier generation's reference by id, and combines them.
func (p *Provider) lookupRefund(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.Request.PaymentRef == "" {
		return payonce.LookupResult{}, errors.New("yookassa: lookup refund: Request.PaymentRef is empty; refunds are listed by payment")
	}
	if q.OperationID == "" {
		return payonce.LookupResult{}, errors.New("yookassa: lookup refund: OperationID is empty; refunds are matched by it")
	}
	const path = "/v3/refunds"
	var hits []string
	err := pageList(ctx, p, hc, path, url.Values{"payment_id": {q.Request.PaymentRef}}, func(rf refund) error {
		if rf.ID == "" || rf.Type != "" {
			return errors.New("list returned an item that is not a refund")
		}
		if op, _ := refundMarks(rf); op == q.OperationID {
			hits = append(hits, rf.ID)
		}
		return nil
	})
	if err != nil {
		return payonce.LookupResult{}, err
	}
	var m matcher
	read := func(id string, listed bool) error {
		if id == "" || m.done(id) {
			return nil
		}
		rf, found, err := p.getRefund(ctx, hc, id)
		switch {
		case err != nil:
			return err
		case !found && listed:
			return p.unusable("/v3/refunds/{id}", fmt.Errorf("refund %s is in the list but GET by id answers not_found", id))
		case !found:
			return nil
		}
		_, key := refundMarks(rf)
		earlier := adapterkit.IsEarlier(q, key, rf.ID)
		why, err := refundContradiction(q.Request, q.OperationID, rf)
		if err != nil {
			return p.unusable("/v3/refunds/{id}", err)
		}
		if why != "" {
			m.ms = append(m.ms, adapterkit.Match{Earlier: earlier, Result: p.contradiction(rf.ID, why)})
			return nil
		}
		r, err := p.refundState(rf).Result("yookassa", rf.ID)
		if err != nil {
			return err
		}
		m.ms = append(m.ms, adapterkit.Match{Result: r, Earlier: earlier})
		return nil
	}
	for _, id := range append(append([]string{q.ProviderRef}, q.EarlierRefs...), hits...) {
		if err := read(id, slices.Contains(hits, id)); err != nil {
			return payonce.LookupResult{}, err
		}
	}
	return adapterkit.Combine(p.Name(), m.ms, p.listLag), nil
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
