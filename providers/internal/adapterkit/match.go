package adapterkit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/payonce/payonce"
)

// Match is one provider object that a lookup found for an operation, read
// by id (never trusted from a search or list hit alone), with the state it
// stands for.
type Match struct {
	// Result is what the object alone says: its State, ProviderRef, Code,
	// DeclineCode, Message and Contradiction.
	Result payonce.LookupResult
	// Earlier reports that the object was created under an earlier key
	// generation of the operation (its key is one of the query's
	// EarlierKeys, or its id one of the EarlierRefs).
	Earlier bool
}

// IsEarlier reports whether an object carrying key (as payonce wrote it in
// the object's metadata; empty when the provider does not echo it) and id
// belongs to an earlier key generation of the operation that q looks up.
func IsEarlier(q payonce.LookupQuery, key, id string) bool {
	if key != "" && key != q.Key && slices.Contains(q.EarlierKeys, key) {
		return true
	}
	return id != "" && slices.Contains(q.EarlierRefs, id)
}

// Combine turns every object found for one operation, across all its key
// generations, into one lookup answer. It is the one copy of the rule every
// adapter applies:
//
//   - no object: not found;
//   - an object that contradicts the operation (another amount, currency or
//     operation id): that contradiction, for an operator;
//   - two or more objects that succeeded: multiple (money moved more than
//     once);
//   - exactly one that succeeded: succeeded, whatever the others say (one
//     payment went through);
//   - otherwise one still processing, of any generation: processing (money
//     may still move);
//   - otherwise a current generation's object that failed: failed;
//   - only earlier generations' objects, all failed: not found for the
//     current key, which a resend under it may still create.
//
// lag is set on every answer: it matters only for "not found", which the
// client believes only once lag has passed since the last attempt.
func Combine(provider string, ms []Match, lag time.Duration) payonce.LookupResult {
	refs := make([]string, 0, len(ms))
	var succeeded, processing, failed []payonce.LookupResult
	for _, m := range ms {
		r := m.Result
		refs = append(refs, r.ProviderRef)
		if r.Contradiction != "" {
			r.Refs, r.Lag = []string{r.ProviderRef}, lag
			return r
		}
		switch r.State {
		case payonce.LookupSucceeded:
			succeeded = append(succeeded, r)
		case payonce.LookupProcessing:
			processing = append(processing, r)
		case payonce.LookupFailed:
			if !m.Earlier {
				failed = append(failed, r)
			}
		}
	}
	var out payonce.LookupResult
	switch {
	case len(succeeded) > 1:
		ids := make([]string, len(succeeded))
		for i, r := range succeeded {
			ids[i] = r.ProviderRef
		}
		out = payonce.LookupResult{State: payonce.LookupMultiple, ProviderRef: ids[0],
			Message: fmt.Sprintf("%s: %d objects that succeeded carry this operation id: %s", provider, len(ids), strings.Join(ids, ", "))}
	case len(succeeded) == 1:
		out = succeeded[0]
	case len(processing) > 0:
		out = processing[0]
	case len(failed) > 0:
		out = failed[0]
	default:
		out = payonce.LookupResult{State: payonce.LookupNotFound}
		refs = refs[:0]
	}
	out.Refs = nil
	if len(refs) > 0 {
		out.Refs = refs
	}
	out.Lag = lag
	return out
}

// Belongs checks that an object the provider returned is the one this
// operation asked for: it carries the operation id (opID, as payonce wrote
// it; pass "" for an object the operation did not create, such as the
// payment a capture acts on), and the amount and
// currency requested (amount 0 or an empty currency in the request means
// "not fixed by the request": a full capture or refund). The answer is a
// Contradiction text, empty when the object belongs.
func Belongs(r payonce.Request, operationID, gotOpID string, gotAmount int64, gotCurrency string) string {
	var why []string
	if gotOpID != "" && operationID != "" && gotOpID != operationID {
		why = append(why, fmt.Sprintf("operation id %q, not %q", gotOpID, operationID))
	}
	if r.Amount > 0 && gotAmount != r.Amount {
		why = append(why, fmt.Sprintf("amount %d, not %d", gotAmount, r.Amount))
	}
	if r.Currency != "" && gotCurrency != "" && !strings.EqualFold(gotCurrency, r.Currency) {
		why = append(why, fmt.Sprintf("currency %q, not %q", gotCurrency, r.Currency))
	}
	if len(why) == 0 {
		return ""
	}
	return "the provider's object has " + strings.Join(why, ", ")
}
