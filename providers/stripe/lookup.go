package stripe

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

// maxRefundPages bounds the refund list pages one lookup reads (100 refunds
// each); a PaymentIntent with more refunds than that is reported as an
// error rather than guessed about.
const maxRefundPages = 50

// searchLimit is the page size of a search; one page tells 0, 1 or "more".
const searchLimit = 10

// lookupCharge finds the charge's PaymentIntents and reads each by id.
//
// The ledger's ids (ProviderRef, EarlierRefs) are always read. When the
// ledger does not know them all (adapterkit.NeedsSearch: no ProviderRef,
// or the operation was resent under a new key), the PaymentIntents created
// in the attempts' time window are listed (listCharges): Stripe's list
// endpoints "aren't subject to the availability delays" of search
// (https://docs.stripe.com/search, Data freshness), so a window listed to
// its end proves absence at once: Lag 0. Only what the list cannot cover
// (Since unknown, or more than MaxListPages pages in the window) falls
// back to the search on metadata['payonce_op'], whose answers carry
// SearchLag; with SearchDisabled it is an error instead, never "not
// found".
func (p *Provider) lookupCharge(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	find, err := adapterkit.NeedsSearch(p.Name(), q)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	var (
		hits []string
		lag  time.Duration
	)
	if find {
		listed, complete, why, err := p.listCharges(ctx, hc, q)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		hits = listed
		if !complete {
			if p.searchDisabled {
				// Without search nothing else can prove that no
				// PaymentIntent exists: "not found" here could lead to a
				// second charge once the key is gone.
				return payonce.LookupResult{}, fmt.Errorf("stripe: lookup charge: %s and search is disabled (Config.SearchDisabled): the answer is not known; settle it by webhook or by hand", why)
			}
			found, more, err := p.searchCharges(ctx, hc, q.OperationID)
			if err != nil {
				return payonce.LookupResult{}, err
			}
			// The search decides "not found": it may be SearchLag behind.
			lag = p.searchLag
			if more {
				// One page holds searchLimit objects; more than that for one
				// operation is not a state to settle automatically.
				return payonce.LookupResult{State: payonce.LookupMultiple, ProviderRef: found[0], Refs: found, Lag: lag,
					Message: fmt.Sprintf("stripe: more than %d PaymentIntents carry this operation id", len(found))}, nil
			}
			for _, id := range found {
				if !slices.Contains(hits, id) {
					hits = append(hits, id)
				}
			}
		}
	}

	// A list or search hit is not trusted for its status (Stripe's search
	// "filters using a cached version of the PaymentIntent status, but
	// returns data based on the latest version", docs.stripe.com/search,
	// Data mismatches): every object is read by id, which is consistent. A
	// recorded reference Stripe does not know is no object; a listed or
	// searched hit missing when read by id is not an answer to build a
	// "not found" on.
	objs := adapterkit.Objects[paymentIntent]{Provider: p.Name(),
		Get: func(id string) (paymentIntent, bool, error) { return p.getPaymentIntent(ctx, hc, id) },
		Missing: func(id string) error {
			return p.apiError(adapterkit.Fail("/v1/payment_intents/"+url.PathEscape(id), http.StatusNotFound, nil,
				"a PaymentIntent found by the list or search is missing when read by id"))
		},
		Match: func(pi paymentIntent) (adapterkit.Match, error) { return p.chargeMatch(ctx, hc, q, pi) },
	}
	if err := objs.ReadAll(adapterkit.Known(q), hits); err != nil {
		return payonce.LookupResult{}, err
	}
	return objs.Result(lag), nil
}

// listPageSize is the largest page Stripe's list endpoints return: "Limit
// can range between 1 and 100" (https://docs.stripe.com/api/pagination,
// Parameters: limit).
const listPageSize = 100

// listWindow is the creation-time window (Unix seconds, both ends
// included) in which the PaymentIntents of q's attempts were created:
// from Since minus LookupMargin to now plus LookupMargin. Stripe's created
// is whole seconds by Stripe's clock; Since and now are this host's, so
// the margin covers the skew between them (an object created slightly
// "before" Since by Stripe's clock is still listed). The end is now, not
// open: PaymentIntents created after the lookup began are not ours to
// page through. A Since ahead of now (another host's clock) moves the end
// so that the window is never empty by construction.
func (p *Provider) listWindow(since time.Time) (gte, lte int64) {
	end := p.now()
	if since.After(end) {
		end = since
	}
	gte = since.Add(-p.lookupMargin).Unix()
	// Rounded up: the whole second that holds end+margin is inside.
	lte = end.Add(p.lookupMargin + time.Second - 1).Unix()
	return gte, lte
}

// listCharges lists the PaymentIntents created in q's window
// (GET /v1/payment_intents with created[gte] and created[lte], 100 a
// page, newest first, paged with starting_after while has_more:
// https://docs.stripe.com/api/payment_intents/list and
// https://docs.stripe.com/api/pagination) and returns the ids of those
// payonce wrote for the operation, of any key generation (chargeListed).
// complete reports that the window was listed to its end; when it is
// false, why says what the list could not cover, and the ids are those of
// the pages read.
//
// Stripe's lists are consistent ("aren't subject to the availability
// delays" of search: https://docs.stripe.com/search, Data freshness), so
// a complete list that shows no PaymentIntent of the operation proves
// there is none (Lag 0). The pages are bounded (MaxListPages): each is a
// read request against Stripe's rate limits (live mode: 100 read
// operations per second, 25 per endpoint unless noted:
// https://docs.stripe.com/rate-limits, Rate limiter); past the bound the
// list proves nothing and the caller falls back to search.
func (p *Provider) listCharges(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (hits []string, complete bool, why string, err error) {
	if p.listDisabled {
		return nil, false, "lists are disabled (Config.ListDisabled)", nil
	}
	if q.Since.IsZero() {
		return nil, false, "LookupQuery.Since is unknown, so no creation-time window can be listed", nil
	}
	if until := p.denseUntil.Load(); p.now().UnixNano() < until {
		return nil, false, "a lookup's window held more PaymentIntents than MaxListPages pages moments ago", nil
	}
	gte, lte := p.listWindow(q.Since)
	after := ""
	for range p.maxListPages {
		query := url.Values{
			"created[gte]": {strconv.FormatInt(gte, 10)},
			"created[lte]": {strconv.FormatInt(lte, 10)},
			"limit":        {strconv.Itoa(listPageSize)},
		}
		if after != "" {
			query.Set("starting_after", after)
		}
		res, err := getList[paymentIntent](ctx, p, hc, "/v1/payment_intents", query, objList, objPaymentIntent, "list")
		if err != nil {
			var ae *APIError
			if ctx.Err() != nil || errors.As(err, &ae) && ae.HTTPStatus != http.StatusTooManyRequests && ae.HTTPStatus < 500 {
				// The lookup's time is up, or Stripe refused the list or
				// answered with something that is not one: an error that
				// a search would not mend, and that must be seen.
				return nil, false, "", err
			}
			// A page that failed for a passing reason (5xx, 429, the
			// network) proves nothing, and it is no reason to fail the
			// lookup: the search answers the same question (with its
			// lag), as it did before lists were used. Each page is one
			// more request that can fail; without this a lookup that
			// needs several pages would fail more often than one search.
			return hits, false, fmt.Sprintf("listing the window failed (%v)", err), nil
		}
		for _, pi := range res.Data {
			if chargeListed(q, pi) && !slices.Contains(hits, pi.ID) {
				hits = append(hits, pi.ID)
			}
		}
		if !res.HasMore {
			return hits, true, "", nil
		}
		after = res.Data[len(res.Data)-1].ID
	}
	// The account creates PaymentIntents faster than MaxListPages pages
	// cover: the next lookups' windows will overflow too. Listing them
	// would only add reads before the search that decides anyway, and
	// lookups come in bursts when Stripe is slow, when every extra read
	// counts against its rate limits and the circuit breaker; so for
	// denseFor lookups go straight to the search.
	p.denseUntil.Store(p.now().Add(denseFor).UnixNano())
	return hits, false, fmt.Sprintf("more than %d PaymentIntents were created in the lookup's window (%d pages of %d)",
		p.maxListPages*listPageSize, p.maxListPages, listPageSize), nil
}

// denseFor is how long lookups skip the list after a window overflowed
// MaxListPages: long enough that a burst of lookups pays the extra reads
// once, short enough that a quieter hour lists again.
const denseFor = 5 * time.Minute

// chargeListed reports whether a listed PaymentIntent is one payonce may
// have written for q's operation: its payonce_op is the operation id
// (the same in every key generation), or its payonce_key is one of the
// operation's keys. The list holds every PaymentIntent of the account, so
// it must be filtered; what is kept is read by id, and chargeBelongs then
// checks it (a PaymentIntent with one of our keys but another operation
// id is a contradiction, for review, not something to drop).
func chargeListed(q payonce.LookupQuery, pi paymentIntent) bool {
	if op := pi.Metadata.get(MetaOperation); op != "" && op == q.OperationID {
		return true
	}
	key := pi.Metadata.get(MetaKey)
	return key != "" && (key == q.Key || slices.Contains(q.EarlierKeys, key))
}

// chargeMatch is what one PaymentIntent, read by id, says about a charge.
func (p *Provider) chargeMatch(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery, pi paymentIntent) (adapterkit.Match, error) {
	m := adapterkit.Match{Earlier: adapterkit.IsEarlier(q, pi.Metadata.get(MetaKey), pi.ID)}
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
// PaymentIntent it acts on answers for every key generation (so it is
// never counted as an earlier generation's).
func (p *Provider) lookupActedOn(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	kind := q.Request.Kind
	ref := adapterkit.ActedOn(q)
	if ref == "" {
		return payonce.LookupResult{}, fmt.Errorf("stripe: lookup %s: Request.PaymentRef and ProviderRef are empty; the PaymentIntent id is needed", kind)
	}
	pi, found, err := p.getPaymentIntent(ctx, hc, ref)
	objs := adapterkit.Objects[paymentIntent]{Provider: p.Name(), Match: func(pi paymentIntent) (adapterkit.Match, error) {
		if why := actedOnBelongs(q.Request, ref, pi, kind == payonce.KindCapture); why != "" {
			return adapterkit.Match{Result: contradicted(p, pi.ID, why)}, nil
		}
		v := cancelVerdict(pi)
		if kind == payonce.KindCapture {
			v = captureVerdict(pi)
		}
		if v.unknown != "" {
			return adapterkit.Match{}, fmt.Errorf("stripe: lookup %s: PaymentIntent %s: %s", kind, p.scrub(pi.ID), p.scrub(v.unknown))
		}
		return adapterkit.Match{Result: v.result(p, pi.ID)}, nil
	}}
	switch {
	case err != nil:
		return payonce.LookupResult{}, err
	case found:
		if err := objs.Add(pi.ID, pi); err != nil {
			return payonce.LookupResult{}, err
		}
	}
	// Not found: no such PaymentIntent, so the capture or cancel did not
	// happen. A read by id is consistent: Lag 0.
	return objs.Result(0), nil
}

// getPaymentIntent reads one PaymentIntent; found is false on Stripe's 404
// resource_missing.
func (p *Provider) getPaymentIntent(ctx context.Context, hc payonce.HTTPDoer, id string) (paymentIntent, bool, error) {
	return getByID(ctx, p, hc, "/v1/payment_intents/", id, decodePaymentIntent)
}

// getRefund reads one Refund; found is false on Stripe's 404
// resource_missing.
func (p *Provider) getRefund(ctx context.Context, hc payonce.HTTPDoer, id string) (refund, bool, error) {
	return getByID(ctx, p, hc, "/v1/refunds/", id, decodeRefund)
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
		return charge{}, p.apiError(adapterkit.Fail(path, http.StatusNotFound, header, "the latest charge of a canceled PaymentIntent is missing"))
	}
	return checkID(p, path, id, status, header, body, decodeCharge)
}

// getByID reads the object id under prefix ("/v1/refunds/"); found is
// false on Stripe's own 404 resource_missing.
func getByID[T object](ctx context.Context, p *Provider, hc payonce.HTTPDoer, prefix, id string, decode func([]byte) (T, error)) (T, bool, error) {
	path := prefix + url.PathEscape(id)
	status, header, body, found, err := p.getObject(ctx, hc, path)
	if err != nil || !found {
		var zero T
		return zero, false, err
	}
	obj, err := checkID(p, path, id, status, header, body, decode)
	return obj, err == nil, err
}

// checkID decodes an object read by id and checks that it is the one
// asked for.
func checkID[T object](p *Provider, path, id string, status int, header http.Header, body []byte, decode func([]byte) (T, error)) (T, error) {
	var zero T
	obj, err := decode(body)
	if err != nil {
		return zero, p.unusable(path, header, err)
	}
	if got := obj.objectID(); got != id {
		return zero, p.unusable(path, header, fmt.Errorf("asked for %s, got %s (status %d)", id, got, status))
	}
	return obj, nil
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
	query := url.Values{"query": {searchQuery(op)}, "limit": {strconv.Itoa(searchLimit)}}
	res, err := getList[paymentIntent](ctx, p, hc, "/v1/payment_intents/search", query, objSearchResult, objPaymentIntent, "search")
	if err != nil {
		return nil, false, err
	}
	found := make([]string, 0, len(res.Data))
	for _, pi := range res.Data {
		// Every hit counts, even one whose metadata does not echo the
		// operation: a hit dropped here would turn into "not found", and
		// "not found" is the answer that leads to a resend. Its read by id
		// decides what it is.
		found = append(found, pi.ID)
	}
	return found, res.HasMore, nil
}

// getList reads one page of a Stripe list or search: an object of type want
// ("list", "search_result") whose items are objects of type item, each
// with an id, and that holds some when it says it has more. what names
// the endpoint in the error of an unusable answer ("search", "list").
func getList[T object](ctx context.Context, p *Provider, hc payonce.HTTPDoer, path string, query url.Values, want, item, what string) (listOf[T], error) {
	var res listOf[T]
	header, err := adapterkit.GetJSON(ctx, hc, p.Name(), p.baseURL, path, query, p.setHeaders, &res)
	if err != nil {
		return res, p.apiError(err)
	}
	if res.Object != want {
		return res, p.unusable(path, header, fmt.Errorf("object is %q, want %q", res.Object, want))
	}
	for _, v := range res.Data {
		if v.objectType() != item || v.objectID() == "" {
			return res, p.unusable(path, header, fmt.Errorf("%s returned a %q without the expected id", what, v.objectType()))
		}
	}
	if len(res.Data) == 0 && res.HasMore {
		return res, p.unusable(path, header, fmt.Errorf("%s returned no objects but has_more", what))
	}
	return res, nil
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
	seen := map[string]bool{}
	for _, id := range adapterkit.Known(q) {
		if id == "" || listed[id] || seen[id] {
			continue
		}
		seen[id] = true
		rf, found, err := p.getRefund(ctx, hc, id)
		if err != nil {
			return payonce.LookupResult{}, err
		}
		if found {
			matches = append(matches, rf)
		}
	}

	objs := adapterkit.Objects[refund]{Provider: p.Name(), Match: func(rf refund) (adapterkit.Match, error) {
		m := adapterkit.Match{Earlier: adapterkit.IsEarlier(q, rf.Metadata.get(MetaKey), rf.ID)}
		if why := refundBelongs(q.OperationID, q.Request, rf); why != "" {
			m.Result = contradicted(p, rf.ID, why)
			return m, nil
		}
		v := refundVerdict(rf)
		if v.unknown != "" {
			return m, fmt.Errorf("stripe: lookup refund: refund %s: %s", p.scrub(rf.ID), p.scrub(v.unknown))
		}
		m.Result = v.result(p, rf.ID)
		return m, nil
	}}
	for _, rf := range matches {
		if err := objs.Add(rf.ID, rf); err != nil {
			return payonce.LookupResult{}, err
		}
	}
	return objs.Result(0), nil
}

// listRefunds pages through the refunds of PaymentIntent pi and returns
// those whose payonce_op is op, and the ids of all refunds listed.
func (p *Provider) listRefunds(ctx context.Context, hc payonce.HTTPDoer, pi, op string) ([]refund, map[string]bool, error) {
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
		res, err := getList[refund](ctx, p, hc, "/v1/refunds", query, objList, objRefund, "list")
		if err != nil {
			return nil, nil, err
		}
		for _, rf := range res.Data {
			listed[rf.ID] = true
			if rf.Metadata.get(MetaOperation) == op {
				matches = append(matches, rf)
			}
		}
		if !res.HasMore {
			return matches, listed, nil
		}
		after = res.Data[len(res.Data)-1].ID
	}
}

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
	return adapterkit.Lookups{Provider: p.Name(), Charge: p.lookupCharge, Capture: p.lookupActedOn,
		Cancel: p.lookupActedOn, Refund: p.lookupRefund}.Lookup(ctx, hc, q)
}
