package stripe_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/stripe"
)

// An object that is not this request's (another operation id, amount,
// currency or PaymentIntent) is a contradiction, in Classify (a 2xx
// answer) and in Lookup (the object read by id): never succeeded or
// failed, whatever its status, so that the client sends it to review.
func TestContradictions(t *testing.T) {
	t.Parallel()
	otherOp := map[string]string{stripe.MetaOperation: "another-operation", stripe.MetaKey: opKey}
	fixedCapture := func(q payonce.LookupQuery) payonce.LookupQuery { q.Request.Amount = 1000; return q }
	fullRefund := func(q payonce.LookupQuery) payonce.LookupQuery { q.Request.Amount = 0; return q }
	for _, tc := range []struct {
		name string
		kind payonce.Kind
		mod  func(payonce.LookupQuery) payonce.LookupQuery
		body string
		why  string // substring of the contradiction
		// readErr: read by id, the object is not the one asked for at all:
		// the lookup's answer is unusable (an error), not a contradiction.
		readErr bool
	}{
		{name: "charge of another operation", kind: payonce.KindCharge, body: piObj("pi_1", "succeeded", "metadata", otherOp), why: "operation id"},
		{name: "charge without payonce_op", kind: payonce.KindCharge, body: piObj("pi_1", "succeeded", "metadata", map[string]string{}), why: "no payonce_op"},
		{name: "charge of another amount", kind: payonce.KindCharge, body: piObj("pi_1", "succeeded", "amount", 2000), why: "amount 2000, not 1999"},
		{name: "charge in another currency", kind: payonce.KindCharge, body: piObj("pi_1", "succeeded", "currency", "usd"), why: "currency"},
		{name: "declined charge of another amount", kind: payonce.KindCharge, body: piObj("pi_1", "requires_payment_method", "amount", 5), why: "amount 5"},
		{name: "capture answered by another PaymentIntent", kind: payonce.KindCapture, body: piObj("pi_2", "succeeded", "amount_received", 1999), why: "pi_2", readErr: true},
		{name: "capture in another currency", kind: payonce.KindCapture, body: piObj("pi_1", "succeeded", "amount_received", 1999, "currency", "usd"), why: "currency"},
		{name: "capture of another amount", kind: payonce.KindCapture, mod: fixedCapture, body: piObj("pi_1", "succeeded", "amount_received", 1999), why: "amount 1999, not 1000"},
		{name: "cancel answered by another PaymentIntent", kind: payonce.KindCancel, body: piObj("pi_2", "canceled"), why: "pi_2", readErr: true},
		{name: "cancel in another currency", kind: payonce.KindCancel, body: piObj("pi_1", "canceled", "currency", "gbp"), why: "currency"},
		{name: "refund of another operation", kind: payonce.KindRefund, body: refundObj("re_1", "succeeded", "metadata", otherOp), why: "operation id"},
		{name: "refund of another amount", kind: payonce.KindRefund, body: refundObj("re_1", "succeeded", "amount", 200), why: "amount 200, not 100"},
		{name: "refund in another currency", kind: payonce.KindRefund, body: refundObj("re_1", "succeeded", "currency", "usd"), why: "currency"},
		{name: "refund of another PaymentIntent", kind: payonce.KindRefund, body: refundObj("re_1", "succeeded", "payment_intent", "pi_9"), why: "pi_9"},
		{name: "full refund in another currency", kind: payonce.KindRefund, mod: fullRefund, body: refundObj("re_1", "failed", "currency", "usd"), why: "currency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			q := lookupQuery(tc.kind, "pi_1", "")
			if tc.mod != nil {
				q = tc.mod(q)
			}
			send := payonce.SendRequest{OperationID: q.OperationID, Key: q.Key, Request: q.Request}
			o := b.P.Classify(send, 200, testkit.Header(), []byte(tc.body))
			require.Equal(t, ledger.OutcomeMaybeSent, o.Class, "never success or refused on another request's object")
			require.Contains(t, o.Contradiction, tc.why)
			require.NotEmpty(t, o.ProviderRef)

			switch tc.kind {
			case payonce.KindCharge:
				q.ProviderRef = "pi_1"
				getOK(t, b, base+"/v1/payment_intents/pi_1", 200, tc.body)
			case payonce.KindRefund:
				// A refund the list shows under this operation, or one the
				// ledger recorded that the list does not show.
				getOK(t, b, base+"/v1/refunds", 200, refundList(false))
				getOK(t, b, base+"/v1/refunds/re_1", 200, tc.body)
				q.ProviderRef = "re_1"
			default:
				getOK(t, b, base+"/v1/payment_intents/pi_1", 200, tc.body)
			}
			res, err := b.P.Lookup(context.Background(), b.HC, q)
			if tc.readErr {
				require.ErrorContains(t, err, "unusable")
				return
			}
			require.NoError(t, err)
			require.Contains(t, res.Contradiction, tc.why)
			require.NotEqual(t, payonce.LookupSucceeded, res.State)
			require.NotEqual(t, payonce.LookupFailed, res.State)
			require.NotEqual(t, payonce.LookupNotFound, res.State)
			require.NotEmpty(t, res.ProviderRef)
		})
	}
}

// A search hit is only a pointer: the PaymentIntent is read by id, and the
// read decides (its status, and whether it belongs to the operation).
func TestLookupSearchHitsAreReadByID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		hit    string
		byID   string
		state  payonce.LookupState
		contra string
	}{
		{name: "stale success", hit: piObj("pi_1", "succeeded", "amount_received", 1999), byID: piObj("pi_1", "requires_payment_method", "last_payment_error", map[string]string{"code": "card_declined"}), state: payonce.LookupFailed},
		{name: "stale processing", hit: piObj("pi_1", "processing"), byID: piObj("pi_1", "succeeded", "amount_received", 1999), state: payonce.LookupSucceeded},
		{name: "another amount when read", hit: piObj("pi_1", "succeeded", "amount_received", 1999), byID: piObj("pi_1", "succeeded", "amount", 5000, "amount_received", 5000), state: payonce.LookupProcessing, contra: "amount 5000"},
		{name: "hit without metadata", hit: piObj("pi_1", "succeeded", "metadata", map[string]string{}), byID: piObj("pi_1", "succeeded", "amount_received", 1999), state: payonce.LookupSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			getOK(t, b, base+"/v1/payment_intents/search", 200, searchJSON(false, tc.hit))
			getOK(t, b, base+"/v1/payment_intents/pi_1", 200, tc.byID)
			res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", ""))
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State)
			require.Equal(t, b.P.SearchLag(), res.Lag, "a search-based answer carries the search's lag")
			if tc.contra != "" {
				require.Contains(t, res.Contradiction, tc.contra)
			} else {
				require.Empty(t, res.Contradiction)
			}
			require.Equal(t, 2, b.MT.GetTotalCallCount(), "the search, then the read by id")
		})
	}

	t.Run("hit missing when read", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		getOK(t, b, base+"/v1/payment_intents/search", 200, searchJSON(false, piObj("pi_1", "succeeded")))
		getOK(t, b, base+"/v1/payment_intents/pi_1", 404, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent: 'pi_1'"}}`)
		_, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", ""))
		require.Error(t, err, "a hit that cannot be read is no ground for \"not found\"")
	})
}
