package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
//   - charge: every PaymentIntent of the operation, of every key
//     generation, each read by id (GET /v1/payment_intents/{id}): the
//     ledger's ProviderRef, the EarlierRefs of earlier generations, and
//     the hits of a search on metadata['payonce_op'] (the operation id is
//     the same in every generation). The search is eventually consistent
//     (its answers carry Lag = SearchLag); it is skipped, and Lag is 0,
//     when the ledger knows the PaymentIntent of an operation that never
//     changed its key. A canceled PaymentIntent's latest charge is read
//     too (GET /v1/charges/{id}) to learn whether it had been authorized.
//   - capture, cancel: GET /v1/payment_intents/{PaymentRef} and read its
//     status; it is the answer for every key generation.
//   - refund: GET /v1/refunds?payment_intent={PaymentRef}, keeping the
//     refunds whose metadata payonce_op is the operation's (consistent:
//     Lag 0), plus the known refund ids (ProviderRef, EarlierRefs) the
//     list did not show, read by id.
//
// Every object is checked to belong to the operation (payonce_op, amount,
// currency): one that does not is a Contradiction. The objects are combined
// by adapterkit.Combine: one that succeeded is success, two are "multiple",
// and an earlier generation's failure does not answer for the current key.
//
// A 404 for an object read by id means it does not exist. Any other error
// status, and any body that is not what the endpoint returns, is an error
// (*APIError): the answer is not known.
func (p *Provider) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if hc == nil {
		return payonce.LookupResult{}, errors.New("stripe: lookup: nil HTTPDoer")
	}
	switch q.Request.Kind {
	case payonce.KindCharge:
		return p.lookupCharge(ctx, hc, q)
	case payonce.KindCapture, payonce.KindCancel:
		return p.lookupActedOn(ctx, hc, q)
	case payonce.KindRefund:
		return p.lookupRefund(ctx, hc, q)
	default:
		return payonce.LookupResult{}, fmt.Errorf("stripe: lookup: unknown kind %q", string(q.Request.Kind))
	}
}

// regenerated reports whether the operation has sent under more than one
// key: objects of earlier generations may exist that the ledger never
// heard of.
func regenerated(q payonce.LookupQuery) bool {
	return q.Generation > 0 || len(q.EarlierKeys) > 0 || len(q.EarlierRefs) > 0
}

// ids is an ordered set of object ids.
type ids struct {
	list []string
	seen map[string]bool
}

func (s *ids) add(id string) {
	if id == "" || s.seen[id] {
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[id] = true
	s.list = append(s.list, id)
}

func (p *Provider) lookupCharge(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	search := q.ProviderRef == "" || regenerated(q)
	if search && q.OperationID == "" {
		return payonce.LookupResult{}, errors.New("stripe: lookup charge: OperationID is empty and no ProviderRef is known; nothing to search for")
	}
	var known ids
	known.add(q.ProviderRef)
	for _, ref := range q.EarlierRefs {
		known.add(ref)
	}
	var (
		all  ids
		hits ids
		lag  time.Duration
	)
	for _, id := range known.list {
		all.add(id)
	}
	if search {
		found, more, err := p.searchCharges(ctx, hc, q.OperationID)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		lag = p.searchLag
		if more {
			// One page holds searchLimit objects; more than that for one
			// operation is not a state to settle automatically.
			return payonce.LookupResult{State: payonce.LookupMultiple, ProviderRef: found[0], Refs: found, Lag: lag,
				Message: fmt.Sprintf("stripe: more than %d PaymentIntents carry this operation id", len(found))}, nil
		}
		for _, id := range found {
			hits.add(id)
			all.add(id)
		}
	}

	// A search hit is not trusted for its status (Stripe's search "filters
	// using a cached version of the PaymentIntent status, but returns data
	// based on the latest version", docs.stripe.com/search, Data
	// mismatches): every object is read by id, which is consistent.
	ms := make([]adapterkit.Match, 0, len(all.list))
	for _, id := range all.list {
		pi, found, err := p.getPaymentIntent(ctx, hc, id)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		if !found {
			if hits.seen[id] {
				// The search named it; "no such PaymentIntent" for it is not
				// an answer to build a "not found" on.
				return payonce.LookupResult{}, &APIError{Method: http.MethodGet, Path: "/v1/payment_intents/" + url.PathEscape(id),
					HTTPStatus: http.StatusNotFound, Message: "a PaymentIntent found by the search is missing when read by id"}
			}
			continue // a recorded reference Stripe does not know: no object
		}
		m, err := p.chargeMatch(ctx, hc, q, pi)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		ms = append(ms, m)
	}
	return adapterkit.Combine(p.Name(), ms, lag), nil
}

// chargeMatch is what one PaymentIntent, read by id, says about a charge.
func (p *Provider) chargeMatch(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery, pi paymentIntent) (adapterkit.Match, error) {
	m := adapterkit.Match{Earlier: adapterkit.IsEarlier(q, pi.Metadata[MetaKey], pi.ID)}
	if why := chargeBelongs(q.OperationID, q.Request, pi); why != "" {
		m.Result = contradicted(p, pi.ID, why)
		return m, nil
	}
	v := chargeVerdict(pi, nil)
	if v.needCharge != "" {
		ch, err := p.getCharge(ctx, hc, v.needCharge)
		if err != nil {
			return m, err
		}
		v = chargeVerdict(pi, &ch)
	}
	if v.unknown != "" {
		return m, fmt.Errorf("stripe: lookup charge: PaymentIntent %s: %s", p.scrub(pi.ID), p.scrub(v.unknown))
	}
	m.Result = v.result(p, pi.ID)
	return m, nil
}

// lookupActedOn looks up a capture or cancel: the state of the
// PaymentIntent it acts on answers for every key generation.
func (p *Provider) lookupActedOn(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	kind := q.Request.Kind
	ref := q.Request.PaymentRef
	if ref == "" {
		ref = q.ProviderRef
	}
	if ref == "" {
		return payonce.LookupResult{}, fmt.Errorf("stripe: lookup %s: Request.PaymentRef and ProviderRef are empty; the PaymentIntent id is needed", kind)
	}
	pi, found, err := p.getPaymentIntent(ctx, hc, ref)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	if !found {
		// No such PaymentIntent: the capture or cancel did not happen.
		return adapterkit.Combine(p.Name(), nil, 0), nil
	}
	if why := actedOnBelongs(q.Request, ref, pi, kind == payonce.KindCapture); why != "" {
		return adapterkit.Combine(p.Name(), []adapterkit.Match{{Result: contradicted(p, pi.ID, why)}}, 0), nil
	}
	v := cancelVerdict(pi)
	if kind == payonce.KindCapture {
		v = captureVerdict(pi)
	}
	if v.unknown != "" {
		return payonce.LookupResult{}, fmt.Errorf("stripe: lookup %s: PaymentIntent %s: %s", kind, p.scrub(pi.ID), p.scrub(v.unknown))
	}
	return adapterkit.Combine(p.Name(), []adapterkit.Match{{Result: v.result(p, pi.ID)}}, 0), nil
}

// getPaymentIntent reads one PaymentIntent; found is false on Stripe's 404
// resource_missing.
func (p *Provider) getPaymentIntent(ctx context.Context, hc payonce.HTTPDoer, id string) (paymentIntent, bool, error) {
	path := "/v1/payment_intents/" + url.PathEscape(id)
	status, header, body, found, err := p.getObject(ctx, hc, path)
	if err != nil || !found {
		return paymentIntent{}, false, err
	}
	pi, err := decodePaymentIntent(body)
	if err != nil {
		return paymentIntent{}, false, p.unusable(path, header, err)
	}
	if pi.ID != id {
		return paymentIntent{}, false, p.unusable(path, header, fmt.Errorf("asked for %s, got %s (status %d)", id, pi.ID, status))
	}
	return pi, true, nil
}

// getRefund reads one Refund; found is false on Stripe's 404
// resource_missing.
func (p *Provider) getRefund(ctx context.Context, hc payonce.HTTPDoer, id string) (refund, bool, error) {
	path := "/v1/refunds/" + url.PathEscape(id)
	status, header, body, found, err := p.getObject(ctx, hc, path)
	if err != nil || !found {
		return refund{}, false, err
	}
	rf, err := decodeRefund(body)
	if err != nil {
		return refund{}, false, p.unusable(path, header, err)
	}
	if rf.ID != id {
		return refund{}, false, p.unusable(path, header, fmt.Errorf("asked for %s, got %s (status %d)", id, rf.ID, status))
	}
	return rf, true, nil
}

// getCharge reads the Charge that decides a canceled PaymentIntent. It must
// exist: the PaymentIntent names it.
func (p *Provider) getCharge(ctx context.Context, hc payonce.HTTPDoer, id string) (charge, error) {
	path := "/v1/charges/" + url.PathEscape(id)
	status, header, body, found, err := p.getObject(ctx, hc, path)
	if err != nil {
		return charge{}, err
	}
	if !found {
		return charge{}, &APIError{Method: http.MethodGet, Path: path, HTTPStatus: http.StatusNotFound, RequestID: header.Get("Request-Id"),
			Message: "the latest charge of a canceled PaymentIntent is missing"}
	}
	ch, err := decodeCharge(body)
	if err != nil {
		return charge{}, p.unusable(path, header, err)
	}
	if ch.ID != id {
		return charge{}, p.unusable(path, header, fmt.Errorf("asked for %s, got %s (status %d)", id, ch.ID, status))
	}
	return ch, nil
}

// getObject reads one object by id: found is false on Stripe's own 404
// resource_missing; any other non-2xx answer is an *APIError.
func (p *Provider) getObject(ctx context.Context, hc payonce.HTTPDoer, path string) (int, http.Header, []byte, bool, error) {
	status, header, body, err := p.get(ctx, hc, path, nil)
	if err != nil {
		return 0, nil, nil, false, err
	}
	if status == http.StatusNotFound {
		// Only Stripe's own "no such object" counts: a 404 page from a proxy
		// or a wrong BaseURL says nothing about the object.
		if e := decodeError(body); e != nil && e.Code == codeResourceMissing {
			return status, header, nil, false, nil
		}
	}
	if status < 200 || status >= 300 {
		return 0, nil, nil, false, p.apiError(path, status, header, body)
	}
	return status, header, body, true, nil
}

// searchQuery is the search for PaymentIntents created by operation op.
// Stripe's query language quotes strings with ' and escapes a quote inside
// them with a backslash; the backslash itself is escaped too.
func searchQuery(op string) string {
	esc := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(op)
	return "metadata['" + MetaOperation + "']:'" + esc + "'"
}

// searchCharges returns the ids of the PaymentIntents the search finds for
// op (at most one page), and whether there are more.
func (p *Provider) searchCharges(ctx context.Context, hc payonce.HTTPDoer, op string) ([]string, bool, error) {
	const path = "/v1/payment_intents/search"
	query := url.Values{"query": {searchQuery(op)}, "limit": {strconv.Itoa(searchLimit)}}
	status, header, body, err := p.get(ctx, hc, path, query)
	if err != nil {
		return nil, false, err
	}
	if status < 200 || status >= 300 {
		return nil, false, p.apiError(path, status, header, body)
	}
	var res listOf[paymentIntent]
	if err := adapterkit.DecodeJSON(body, &res); err != nil {
		return nil, false, p.unusable(path, header, err)
	}
	if res.Object != objSearchResult {
		return nil, false, p.unusable(path, header, fmt.Errorf("object is %q, want %q", res.Object, objSearchResult))
	}
	found := make([]string, 0, len(res.Data))
	for _, pi := range res.Data {
		if pi.Object != objPaymentIntent || pi.ID == "" {
			return nil, false, p.unusable(path, header, fmt.Errorf("search returned a %q without the expected id", pi.Object))
		}
		// Every hit counts, even one whose metadata does not echo the
		// operation: a hit dropped here would turn into "not found", and
		// "not found" is the answer that leads to a resend. Its read by id
		// decides what it is.
		found = append(found, pi.ID)
	}
	if len(found) == 0 && res.HasMore {
		return nil, false, p.unusable(path, header, errors.New("search returned no objects but has_more"))
	}
	return found, res.HasMore, nil
}

// lookupRefund finds the operation's refunds among the PaymentIntent's
// refunds. The list is consistent: Stripe's list APIs "aren't subject to
// the availability delays" of search (docs.stripe.com/search, Data
// freshness), so a refund the list does not show does not exist (Lag 0),
// and its items carry the refunds' current state. The operation id is the
// same in every key generation, so the list finds every generation's
// refunds; known refund ids the list did not show are read by id (and then
// must belong to the operation).
func (p *Provider) lookupRefund(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.Request.PaymentRef == "" {
		return payonce.LookupResult{}, errors.New("stripe: lookup refund: Request.PaymentRef is empty; refunds are listed by PaymentIntent")
	}
	if q.OperationID == "" {
		return payonce.LookupResult{}, errors.New("stripe: lookup refund: OperationID is empty; refunds are matched by it")
	}
	matches, listed, err := p.listRefunds(ctx, hc, q.Request.PaymentRef, q.OperationID)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	var known ids
	known.add(q.ProviderRef)
	for _, ref := range q.EarlierRefs {
		known.add(ref)
	}
	for _, id := range known.list {
		if listed[id] {
			continue
		}
		rf, found, err := p.getRefund(ctx, hc, id)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		if found {
			matches = append(matches, rf)
		}
	}

	ms := make([]adapterkit.Match, 0, len(matches))
	for _, rf := range matches {
		m := adapterkit.Match{Earlier: adapterkit.IsEarlier(q, rf.Metadata[MetaKey], rf.ID)}
		if why := refundBelongs(q.OperationID, q.Request, rf); why != "" {
			m.Result = contradicted(p, rf.ID, why)
		} else {
			v := refundVerdict(rf)
			if v.unknown != "" {
				return payonce.LookupResult{}, fmt.Errorf("stripe: lookup refund: refund %s: %s", p.scrub(rf.ID), p.scrub(v.unknown))
			}
			m.Result = v.result(p, rf.ID)
		}
		ms = append(ms, m)
	}
	return adapterkit.Combine(p.Name(), ms, 0), nil
}

// listRefunds pages through the refunds of PaymentIntent pi and returns
// those whose payonce_op is op, and the ids of all refunds listed.
func (p *Provider) listRefunds(ctx context.Context, hc payonce.HTTPDoer, pi, op string) ([]refund, map[string]bool, error) {
	const path = "/v1/refunds"
	var matches []refund
	listed := map[string]bool{}
	after := ""
	for page := 0; ; page++ {
		if page == maxRefundPages {
			return nil, nil, fmt.Errorf("stripe: lookup refund: PaymentIntent has more than %d refunds; look it up by hand", maxRefundPages*100)
		}
		query := url.Values{"payment_intent": {pi}, "limit": {"100"}}
		if after != "" {
			query.Set("starting_after", after)
		}
		status, header, body, err := p.get(ctx, hc, path, query)
		if err != nil {
			return nil, nil, err
		}
		if status < 200 || status >= 300 {
			return nil, nil, p.apiError(path, status, header, body)
		}
		var res listOf[refund]
		if err := adapterkit.DecodeJSON(body, &res); err != nil {
			return nil, nil, p.unusable(path, header, err)
		}
		if res.Object != objList {
			return nil, nil, p.unusable(path, header, fmt.Errorf("object is %q, want %q", res.Object, objList))
		}
		for _, rf := range res.Data {
			if rf.Object != objRefund || rf.ID == "" {
				return nil, nil, p.unusable(path, header, fmt.Errorf("list returned a %q without the expected id", rf.Object))
			}
			listed[rf.ID] = true
			if rf.Metadata[MetaOperation] == op {
				matches = append(matches, rf)
			}
		}
		if !res.HasMore {
			return matches, listed, nil
		}
		if len(res.Data) == 0 {
			return nil, nil, p.unusable(path, header, errors.New("list returned no objects but has_more"))
		}
		after = res.Data[len(res.Data)-1].ID
	}
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
