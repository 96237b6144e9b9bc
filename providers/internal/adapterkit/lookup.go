package adapterkit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/payonce/payonce"
)

// LookupFunc looks up an operation of one kind.
type LookupFunc func(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error)

// Lookups is an adapter's Lookup, by operation kind: each field looks up
// the operations of its kind; a nil field means the adapter has no lookup
// for that kind (an error).
type Lookups struct {
	Provider                        string
	Charge, Capture, Cancel, Refund LookupFunc
}

// Lookup refuses a nil HTTPDoer, then calls the function for
// q.Request.Kind.
func (l Lookups) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if hc == nil {
		return payonce.LookupResult{}, errors.New(l.Provider + ": lookup: nil HTTPDoer")
	}
	var f LookupFunc
	switch q.Request.Kind {
	case payonce.KindCharge:
		f = l.Charge
	case payonce.KindCapture:
		f = l.Capture
	case payonce.KindCancel:
		f = l.Cancel
	case payonce.KindRefund:
		f = l.Refund
	}
	if f == nil {
		return payonce.LookupResult{}, fmt.Errorf("%s: lookup: unknown kind %q", l.Provider, string(q.Request.Kind))
	}
	return f(ctx, hc, q)
}

// Resent reports an operation that has been sent under more than one key:
// objects of earlier generations may exist that the ledger never heard of,
// so a lookup that knows the operation's object by id must search too.
func Resent(q payonce.LookupQuery) bool {
	return q.Generation > 0 || len(q.EarlierKeys) > 0 || len(q.EarlierRefs) > 0
}

// NeedsSearch reports whether a charge lookup must search by the
// operation id: the ledger knows no object for it, or the operation was
// resent under a new key (Resent), so that objects of every generation
// are found, or the lookup is an audit's (q.Audit), which must see a
// duplicate made outside payonce too. It is an error when it must and q
// has no OperationID.
func NeedsSearch(provider string, q payonce.LookupQuery) (bool, error) {
	search := q.ProviderRef == "" || Resent(q) || q.Audit
	if search && q.OperationID == "" {
		return true, errors.New(provider + ": lookup charge: OperationID is empty and no ProviderRef is known; nothing to search for")
	}
	return search, nil
}

// Known is the ids a lookup knows from the ledger: q.ProviderRef, then
// every earlier generation's reference (q.EarlierRefs). Empty ids are
// left to Objects.Read, which skips them.
func Known(q payonce.LookupQuery) []string {
	return append([]string{q.ProviderRef}, q.EarlierRefs...)
}

// ActedOn is the id of the payment a capture or cancel acts on:
// q.Request.PaymentRef, else q.ProviderRef; "" when neither is known.
func ActedOn(q payonce.LookupQuery) string {
	if q.Request.PaymentRef != "" {
		return q.Request.PaymentRef
	}
	return q.ProviderRef
}

// Objects collects the provider objects (of type T) that one lookup
// found, each counted once, and turns them into the lookup's answer with
// Combine: the one place where 0 objects become "not found", one becomes
// its own state and several become "multiple". Every adapter's lookup ends
// in Result, so the counting and Lag are the same everywhere.
//
// The zero value counts objects given to Add; Read also needs Get, Missing
// and Match.
type Objects[T any] struct {
	// Provider names the adapter in messages ("stripe").
	Provider string
	// Get reads one object by id, which is consistent; found is false when
	// the provider itself says there is no such object.
	Get func(id string) (obj T, found bool, err error)
	// Missing is the error for an id that a search or list named but that
	// Get does not find: a "not found" is never built on it.
	Missing func(id string) error
	// Match is what one object says about the operation (see Match); an
	// error means the answer is not known.
	Match func(T) (Match, error)

	ms   []Match
	seen map[string]bool
}

// Read reads each id with Get and counts what it says, skipping empty ids
// and ids already read or added. listed says the ids come from a search or
// a list: one that Get does not find is then the Missing error; otherwise
// (an id from the ledger) it is simply no object.
func (o *Objects[T]) Read(listed bool, ids ...string) error {
	for _, id := range ids {
		if id == "" || o.seen[id] {
			continue
		}
		o.mark(id)
		obj, found, err := o.Get(id)
		switch {
		case err != nil:
			return err
		case !found && listed:
			return o.Missing(id)
		case !found:
			continue
		}
		if err := o.Add(id, obj); err != nil {
			return err
		}
	}
	return nil
}

// ReadAll reads known (the ledger's ids), then listed (a search's or
// list's hits), each once; an id is "listed" (see Read) when it is among
// listed, wherever it came first.
func (o *Objects[T]) ReadAll(known, listed []string) error {
	for _, id := range append(slices.Clip(known), listed...) {
		if err := o.Read(slices.Contains(listed, id), id); err != nil {
			return err
		}
	}
	return nil
}

// Add counts obj (id id), which the caller read in a way that may be
// trusted for its state: by id, or from a list the provider documents as
// consistent. Read then skips id.
func (o *Objects[T]) Add(id string, obj T) error {
	o.mark(id)
	m, err := o.Match(obj)
	if err != nil {
		return err
	}
	o.ms = append(o.ms, m)
	return nil
}

func (o *Objects[T]) mark(id string) {
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	o.seen[id] = true
}

// KnownThenSearch reads the ledger's ids (Known(q)) and then, when search
// is not nil, the ids it finds, as listed ids (Read); its answer carries
// lag when it searched (a hit may still be missing from the search), and
// 0 when every object was read by id.
func (o *Objects[T]) KnownThenSearch(q payonce.LookupQuery, search func() ([]string, error), lag time.Duration) (payonce.LookupResult, error) {
	if err := o.Read(false, Known(q)...); err != nil {
		return payonce.LookupResult{}, err
	}
	if search == nil {
		return o.Result(0), nil
	}
	hits, err := search()
	if err != nil {
		return payonce.LookupResult{}, err
	}
	if err := o.Read(true, hits...); err != nil {
		return payonce.LookupResult{}, err
	}
	return o.Result(lag), nil
}

// Charge is a charge lookup: it reads the ledger's ids and, when the
// operation must be searched for (NeedsSearch), the ids search finds
// (KnownThenSearch, with lag).
func (o *Objects[T]) Charge(q payonce.LookupQuery, search func() ([]string, error), lag time.Duration) (payonce.LookupResult, error) {
	need, err := NeedsSearch(o.Provider, q)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	if !need {
		search = nil
	}
	return o.KnownThenSearch(q, search, lag)
}

// Result combines every object counted (Combine) into the lookup's answer,
// with Lag set to lag.
//
// lag is how long a "not found" from this lookup may be premature, which
// is a fact of the provider and of what the lookup read, so the adapter
// passes it:
//
//   - 0 when every object was read by id or from a list the provider
//     documents as consistent (Stripe's refund list, a PaymentIntent read
//     by id): "not found" is final at once;
//   - the search's or list's lag when one was read whose consistency is
//     eventual or undocumented (Stripe's search: SearchLag; YooKassa's
//     lists: ListLag);
//   - the time an attempt still running needs to finish, where such an
//     attempt can still create the object and free the key (Checkout.com
//     caches only 2xx answers: SettleLag, on every lookup that searched or
//     read a payment's actions).
func (o *Objects[T]) Result(lag time.Duration) payonce.LookupResult {
	return Combine(o.Provider, o.ms, lag)
}
