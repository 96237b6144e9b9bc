package stripe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/stripe"
)

// Keys of a charge resent under generation 1 after an operator's approval:
// the objects of generation 0 carry key0, the current ones key1; both carry
// the same operation id.
const (
	key0 = opKey
	key1 = "7c1e0f2a-9b8d-5c6e-a4f3-1b2c3d4e5f60"
)

// regenQuery is the lookup of kind at generation 1.
func regenQuery(kind payonce.Kind, providerRef string, earlierRefs ...string) payonce.LookupQuery {
	q := lookupQuery(kind, "pi_1", providerRef)
	q.Key, q.Generation, q.EarlierKeys, q.EarlierRefs = key1, 1, []string{key0}, earlierRefs
	return q
}

// gen is a PaymentIntent of the charge created under key.
func gen(id, status, key string, kv ...any) string {
	if status == "succeeded" {
		kv = append(kv, "amount_received", 1999)
	}
	return piObj(id, status, append(kv, "metadata", md(key))...)
}

// After a resend under a new key, the lookup sees every generation's
// PaymentIntents: one that succeeded, of any generation, is the charge; two
// are a duplicate; an earlier generation's failure does not answer for the
// current key, whose resend may still create the payment.
func TestLookupChargeGenerations(t *testing.T) {
	t.Parallel()
	declined := map[string]string{"code": "card_declined", "decline_code": "do_not_honor"}
	for _, tc := range []struct {
		name        string
		providerRef string
		earlierRefs []string
		hits        []string // the search's answer
		byID        map[string]string
		state       payonce.LookupState
		ref         string
		refs        []string
	}{
		{name: "earlier failed, nothing current",
			hits:  []string{gen("pi_0", "requires_payment_method", key0, "last_payment_error", declined)},
			state: payonce.LookupNotFound},
		{name: "earlier succeeded",
			hits:  []string{gen("pi_0", "succeeded", key0)},
			state: payonce.LookupSucceeded, ref: "pi_0", refs: []string{"pi_0"}},
		{name: "earlier succeeded, current failed",
			hits:  []string{gen("pi_1", "requires_payment_method", key1), gen("pi_0", "succeeded", key0)},
			state: payonce.LookupSucceeded, ref: "pi_0", refs: []string{"pi_1", "pi_0"}},
		{name: "earlier and current succeeded",
			hits:  []string{gen("pi_1", "succeeded", key1), gen("pi_0", "succeeded", key0)},
			state: payonce.LookupMultiple, ref: "pi_1", refs: []string{"pi_1", "pi_0"}},
		{name: "earlier failed, current failed",
			hits:  []string{gen("pi_1", "requires_payment_method", key1, "last_payment_error", declined), gen("pi_0", "requires_payment_method", key0)},
			state: payonce.LookupFailed, ref: "pi_1", refs: []string{"pi_1", "pi_0"}},
		{name: "earlier failed, current processing",
			hits:  []string{gen("pi_1", "processing", key1), gen("pi_0", "requires_payment_method", key0)},
			state: payonce.LookupProcessing, ref: "pi_1", refs: []string{"pi_1", "pi_0"}},
		{name: "earlier processing",
			hits:  []string{gen("pi_0", "processing", key0)},
			state: payonce.LookupProcessing, ref: "pi_0", refs: []string{"pi_0"}},
		{name: "earlier authorized, then released",
			hits:  []string{gen("pi_0", "canceled", key0, "latest_charge", rawJSON(chargeObj("ch_0", "pi_0", "succeeded", true, "refunded", true)))},
			state: payonce.LookupSucceeded, ref: "pi_0", refs: []string{"pi_0"}},
		// The search lags: an earlier generation's PaymentIntent it does not
		// show yet is still read, by the reference the ledger recorded.
		{name: "earlier ref the search does not show", earlierRefs: []string{"pi_0"},
			hits: nil, byID: map[string]string{"pi_0": gen("pi_0", "succeeded", key0)},
			state: payonce.LookupSucceeded, ref: "pi_0", refs: []string{"pi_0"}},
		{name: "earlier ref failed, the search shows nothing", earlierRefs: []string{"pi_0"},
			hits: nil, byID: map[string]string{"pi_0": gen("pi_0", "requires_payment_method", key0)},
			state: payonce.LookupNotFound},
		// The earlier ref is earlier even if its metadata lost the key.
		{name: "earlier ref without key metadata", earlierRefs: []string{"pi_0"},
			hits: nil, byID: map[string]string{"pi_0": piObj("pi_0", "requires_payment_method", "metadata", map[string]string{stripe.MetaOperation: opID})},
			state: payonce.LookupNotFound},
		// With the current PaymentIntent known, the search still runs: an
		// earlier generation's success is found too.
		{name: "current known, earlier succeeded", providerRef: "pi_1",
			hits: []string{gen("pi_0", "succeeded", key0)}, byID: map[string]string{"pi_1": gen("pi_1", "succeeded", key1)},
			state: payonce.LookupMultiple, ref: "pi_1", refs: []string{"pi_1", "pi_0"}},
		{name: "current known, earlier failed", providerRef: "pi_1",
			hits: []string{gen("pi_1", "succeeded", key1), gen("pi_0", "requires_payment_method", key0)}, byID: map[string]string{"pi_1": gen("pi_1", "succeeded", key1)},
			state: payonce.LookupSucceeded, ref: "pi_1", refs: []string{"pi_1", "pi_0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *stripe.Config) { c.SearchLag = 2 * time.Minute })
			getOK(t, b, base+"/v1/payment_intents/search", 200, searchJSON(false, tc.hits...))
			served := map[string]bool{}
			for id, body := range tc.byID {
				getOK(t, b, base+"/v1/payment_intents/"+id, 200, body)
				served[id] = true
			}
			for _, hit := range tc.hits {
				var h struct{ ID string }
				require.NoError(t, json.Unmarshal([]byte(hit), &h))
				if !served[h.ID] {
					getOK(t, b, base+"/v1/payment_intents/"+h.ID, 200, hit)
				}
			}
			res, err := b.P.Lookup(context.Background(), b.HC, regenQuery(payonce.KindCharge, tc.providerRef, tc.earlierRefs...))
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State, res.Message)
			require.Equal(t, tc.ref, res.ProviderRef)
			require.ElementsMatch(t, tc.refs, res.Refs)
			require.Equal(t, 2*time.Minute, res.Lag, "search-based")
			require.Equal(t, 1, b.MT.GetCallCountInfo()[http.MethodGet+" "+base+"/v1/payment_intents/search"])
		})
	}
}

// Generation 0 with the PaymentIntent known is read by id alone: nothing
// else can exist (one key, one PaymentIntent), and the answer has no lag.
func TestLookupChargeByIDNeedsNoSearch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	getOK(t, b, base+"/v1/payment_intents/pi_1", 200, piObj("pi_1", "requires_payment_method"))
	res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pi_1"))
	require.NoError(t, err)
	require.Equal(t, payonce.LookupFailed, res.State)
	require.Zero(t, res.Lag)
	require.Equal(t, 1, b.MT.GetTotalCallCount())
}

// Refunds of every generation are in the PaymentIntent's refund list under
// the same operation id.
func TestLookupRefundGenerations(t *testing.T) {
	t.Parallel()
	refundOf := func(id, status, key string) string {
		return refundObj(id, status, "metadata", map[string]string{stripe.MetaOperation: opID, stripe.MetaKey: key})
	}
	for _, tc := range []struct {
		name        string
		earlierRefs []string
		list        []string
		byID        map[string]string
		state       payonce.LookupState
		ref         string
	}{
		{name: "earlier succeeded", list: []string{refundOf("re_0", "succeeded", key0)}, state: payonce.LookupSucceeded, ref: "re_0"},
		{name: "earlier failed only", list: []string{refundOf("re_0", "failed", key0)}, state: payonce.LookupNotFound},
		{name: "earlier canceled, current pending", list: []string{refundOf("re_1", "pending", key1), refundOf("re_0", "canceled", key0)}, state: payonce.LookupProcessing, ref: "re_1"},
		{name: "earlier failed, current failed", list: []string{refundOf("re_1", "failed", key1), refundOf("re_0", "failed", key0)}, state: payonce.LookupFailed, ref: "re_1"},
		{name: "earlier and current succeeded", list: []string{refundOf("re_1", "succeeded", key1), refundOf("re_0", "succeeded", key0)}, state: payonce.LookupMultiple, ref: "re_1"},
		// A recorded earlier refund the list does not show is read by id.
		{name: "earlier ref read by id", earlierRefs: []string{"re_0"}, byID: map[string]string{"re_0": refundOf("re_0", "succeeded", key0)}, state: payonce.LookupSucceeded, ref: "re_0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			getOK(t, b, base+"/v1/refunds", 200, refundList(false, tc.list...))
			for id, body := range tc.byID {
				getOK(t, b, base+"/v1/refunds/"+id, 200, body)
			}
			res, err := b.P.Lookup(context.Background(), b.HC, regenQuery(payonce.KindRefund, "", tc.earlierRefs...))
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State, res.Message)
			require.Equal(t, tc.ref, res.ProviderRef)
			require.Zero(t, res.Lag, "the refund list is consistent")
		})
	}
}

// A capture or cancel acts on the payment itself: its state is the answer
// for every generation, read by id without a search.
func TestLookupCaptureCancelGenerations(t *testing.T) {
	t.Parallel()
	for _, kind := range []payonce.Kind{payonce.KindCapture, payonce.KindCancel} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			body := piObj("pi_1", "canceled")
			if kind == payonce.KindCapture {
				body = piObj("pi_1", "succeeded", "amount_received", 1999)
			}
			getOK(t, b, base+"/v1/payment_intents/pi_1", 200, body)
			res, err := b.P.Lookup(context.Background(), b.HC, regenQuery(kind, "", "pi_1"))
			require.NoError(t, err)
			require.Equal(t, payonce.LookupSucceeded, res.State)
			require.Zero(t, res.Lag)
			require.Equal(t, 1, b.MT.GetTotalCallCount())
		})
	}
}
