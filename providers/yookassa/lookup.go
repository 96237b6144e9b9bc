package yookassa

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// payments collects the payments a lookup reads by id.
func (p *Provider) payments(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) adapterkit.Objects[payment] {
	return adapterkit.Objects[payment]{Provider: p.Name(),
		Get: func(id string) (payment, bool, error) { return p.getPayment(ctx, hc, id) },
		Missing: func(id string) error {
			return p.unusable("/v3/payments/{id}", fmt.Errorf("payment %s is in the list but GET by id answers not_found", id))
		},
		Match: func(pm payment) (adapterkit.Match, error) { return p.paymentMatch(q, pm) },
	}
}

// lookupCharge reads the charge's payments by id (the ledger's reference
// and every earlier generation's) and, unless the ledger knows the payment
// of a never-resent operation, searches the payments list for the others.
func (p *Provider) lookupCharge(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if search, _ := adapterkit.NeedsSearch(p.Name(), q); search && q.OperationID != "" && q.Since.IsZero() {
		return payonce.LookupResult{}, errors.New("yookassa: lookup charge: LookupQuery.Since is zero; the payments list is searched from the first attempt's start")
	}
	objs := p.payments(ctx, hc, q)
	return objs.Charge(q, func() ([]string, error) { return p.searchPayments(ctx, hc, q) }, p.listLag)
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
// one payment whatever the key generation: it answers for every
// generation, so it is never counted as an earlier one.
func (p *Provider) lookupActedOn(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	ref := adapterkit.ActedOn(q)
	if ref == "" {
		return payonce.LookupResult{}, fmt.Errorf("yookassa: lookup %s: Request.PaymentRef and ProviderRef are empty; the payment id is needed", q.Request.Kind)
	}
	if q.Request.PaymentRef == "" {
		q.Request.PaymentRef = ref
	}
	objs := p.payments(ctx, hc, q)
	objs.Match = func(pm payment) (adapterkit.Match, error) {
		m, err := p.paymentMatch(q, pm)
		m.Earlier = false
		return m, err
	}
	// No such payment: the capture or cancel did not happen. A read by id
	// is consistent: Lag 0.
	if err := objs.Read(false, ref); err != nil {
		return payonce.LookupResult{}, err
	}
	return objs.Result(0), nil
}

// getPayment reads one payment; found is false on YooKassa's 404 not_found.
func (p *Provider) getPayment(ctx context.Context, hc payonce.HTTPDoer, id string) (payment, bool, error) {
	return getByID(ctx, p, hc, "/v3/payments/"+url.PathEscape(id), decodePayment)
}

// getRefund reads one refund; found is false on YooKassa's 404 not_found.
func (p *Provider) getRefund(ctx context.Context, hc payonce.HTTPDoer, id string) (refund, bool, error) {
	return getByID(ctx, p, hc, "/v3/refunds/"+url.PathEscape(id), decodeRefund)
}

// getByID reads one object; found is false on YooKassa's own 404
// not_found.
func getByID[T any](ctx context.Context, p *Provider, hc payonce.HTTPDoer, path string, decode func([]byte) (T, error)) (T, bool, error) {
	var zero T
	_, _, body, found, err := p.getObject(ctx, hc, path)
	if err != nil || !found {
		return zero, false, err
	}
	obj, err := decode(body)
	if err != nil {
		return zero, false, p.unusable(path, err)
	}
	return obj, true, nil
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
	objs := adapterkit.Objects[refund]{Provider: p.Name(),
		Get: func(id string) (refund, bool, error) { return p.getRefund(ctx, hc, id) },
		Missing: func(id string) error {
			return p.unusable("/v3/refunds/{id}", fmt.Errorf("refund %s is in the list but GET by id answers not_found", id))
		},
		Match: func(rf refund) (adapterkit.Match, error) {
			_, key := refundMarks(rf)
			earlier := adapterkit.IsEarlier(q, key, rf.ID)
			why, err := refundContradiction(q.Request, q.OperationID, rf)
			if err != nil {
				return adapterkit.Match{}, p.unusable("/v3/refunds/{id}", err)
			}
			if why != "" {
				return adapterkit.Match{Earlier: earlier, Result: p.contradiction(rf.ID, why)}, nil
			}
			r, err := p.refundState(rf).Result("yookassa", rf.ID)
			return adapterkit.Match{Result: r, Earlier: earlier}, err
		},
	}
	if err := objs.ReadAll(adapterkit.Known(q), hits); err != nil {
		return payonce.LookupResult{}, err
	}
	// The refunds list's consistency is not documented: ListLag.
	return objs.Result(p.listLag), nil
}

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
	return adapterkit.Lookups{Provider: p.Name(), Charge: p.lookupCharge, Capture: p.lookupActedOn,
		Cancel: p.lookupActedOn, Refund: p.lookupRefund}.Lookup(ctx, hc, q)
}
