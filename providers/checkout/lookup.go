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

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// lookupCharge reads the charge's payments by id (the ledger's reference
// and every earlier generation's) and, unless the ledger knows the payment
// of a never-resent operation, lists the payments carrying the operation's
// reference and reads each of them by id.
func (p *Provider) lookupCharge(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	objs := adapterkit.Objects[payment]{Provider: p.Name(),
		Get: func(id string) (payment, bool, error) { return p.getPayment(ctx, hc, id) },
		Missing: func(id string) error {
			return p.apiError(adapterkit.Fail("/payments/{id}", 0, nil, "payment "+id+" is listed by reference but GET by id answers 404"))
		},
		Match: func(pm payment) (adapterkit.Match, error) { return p.chargeMatch(ctx, hc, q, pm) },
	}
	// A search's "not found" is believed only after SettleLag: an attempt
	// still running may yet create the payment (see Config.SettleLag).
	return objs.Charge(q, func() ([]string, error) { return p.searchPayments(ctx, hc, q.OperationID) }, p.settleLag)
}

// getPayment reads one payment; found is false on Checkout.com's 404.
func (p *Provider) getPayment(ctx context.Context, hc payonce.HTTPDoer, id string) (payment, bool, error) {
	path := "/payments/" + url.PathEscape(id)
	_, header, body, found, err := p.getObject(ctx, hc, path)
	if err != nil || !found {
		return payment{}, false, err
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

// listLimit is the page size of GET /payments?reference=.
const listLimit = 100

// maxListPages bounds the pages one reference lookup reads.
const maxListPages = 10

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
		var res paymentList
		header, err := adapterkit.GetJSON(ctx, hc, p.Name(), p.baseURL, path, query, p.setHeaders, &res)
		if err != nil {
			return nil, p.apiError(err)
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
	if st.Verdict == adapterkit.VerdictUnknown && pm.Approved == nil && (pm.Status == statusCanceled || pm.Status == statusExpired) {
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
	if st.Verdict == adapterkit.VerdictFailed && st.Code == codeDeclined && st.Decline == "" {
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

// lookupAction finds the operation's action among the payment's actions
// (itself a read by the payment's id). Every answer carries SettleLag,
// even "no such payment": an attempt still running may yet create the
// action, and end in a 5xx that frees the key (see Config.SettleLag).
func (p *Provider) lookupAction(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if q.Request.PaymentRef == "" {
		return payonce.LookupResult{}, fmt.Errorf("checkout: lookup %s: Request.PaymentRef is empty; actions are listed by payment", q.Request.Kind)
	}
	if q.OperationID == "" && q.ProviderRef == "" {
		return payonce.LookupResult{}, fmt.Errorf("checkout: lookup %s: OperationID and ProviderRef are empty; actions are matched by them", q.Request.Kind)
	}
	objs := adapterkit.Objects[action]{Provider: p.Name(), Match: func(a action) (adapterkit.Match, error) {
		m := adapterkit.Match{Earlier: adapterkit.IsEarlier(q, keyOf(a.Metadata), a.ID)}
		if why := actionContradiction(q.Request, q.OperationID, a); why != "" {
			why = p.scrub(why)
			m.Result = payonce.LookupResult{ProviderRef: a.ID, Refs: []string{a.ID}, Contradiction: why, Message: "checkout: " + why}
			return m, nil
		}
		var err error
		m.Result, err = p.actionState(a).Result("checkout", a.ID)
		return m, err
	}}
	acts, err := p.actions(ctx, hc, q.Request.PaymentRef)
	if errors.Is(err, errNoPayment) {
		// No such payment: no action on it either.
		return objs.Result(p.settleLag), nil
	}
	if err != nil {
		return payonce.LookupResult{}, err
	}
	want := actionType(q.Request.Kind)
	for _, a := range acts {
		if a.Type != want {
			continue
		}
		mine := (q.OperationID != "" && (a.Reference == q.OperationID || opOf(a.Metadata, "") == q.OperationID)) ||
			(q.ProviderRef != "" && a.ID == q.ProviderRef) || slices.Contains(q.EarlierRefs, a.ID)
		if !mine {
			continue
		}
		if err := objs.Add(a.ID, a); err != nil {
			return payonce.LookupResult{}, err
		}
	}
	return objs.Result(p.settleLag), nil
}

var errNoPayment = errors.New("checkout: no such payment")

// actions reads GET /payments/{id}/actions (a bare JSON array); errNoPayment
// on Checkout.com's 404.
func (p *Provider) actions(ctx context.Context, hc payonce.HTTPDoer, id string) ([]action, error) {
	path := "/payments/" + url.PathEscape(id) + "/actions"
	_, header, body, found, err := p.getObject(ctx, hc, path)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, errNoPayment
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
	return adapterkit.Lookups{Provider: p.Name(), Charge: p.lookupCharge, Capture: p.lookupAction,
		Cancel: p.lookupAction, Refund: p.lookupAction}.Lookup(ctx, hc, q)
}
