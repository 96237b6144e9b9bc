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
		{"charge of another operation", payonce.KindCharge, nil, piObj("pi_1", "succeeded", "metadata", otherOp), "operation id", false},
		{"charge without payonce_op", payonce.KindCharge, nil, piObj("pi_1", "succeeded", "metadata", map[string]string{}), "no payonce_op", false},
		{"charge of another amount", payonce.KindCharge, nil, piObj("pi_1", "succeeded", "amount", 2000), "amount 2000, not 1999", false},
		{"charge in another currency", payonce.KindCharge, nil, piObj("pi_1", "succeeded", "currency", "usd"), "currency", false},
		{"declined charge of another amount", payonce.KindCharge, nil, piObj("pi_1", "requires_payment_method", "amount", 5), "amount 5", false},
		{"capture answered by another PaymentIntent", payonce.KindCapture, nil, piObj("pi_2", "succeeded", "amount_received", 1999), "pi_2", true},
		{"capture in another currency", payonce.KindCapture, nil, piObj("pi_1", "succeeded", "amount_received", 1999, "currency", "usd"), "currency", false},
		{"capture of another amount", payonce.KindCapture, fixedCapture, piObj("pi_1", "succeeded", "amount_received", 1999), "amount 1999, not 1000", false},
		{"cancel answered by another PaymentIntent", payonce.KindCancel, nil, piObj("pi_2", "canceled"), "pi_2", true},
		{"cancel in another currency", payonce.KindCancel, nil, piObj("pi_1", "canceled", "currency", "gbp"), "currency", false},
		{"refund of another operation", payonce.KindRefund, nil, refundObj("re_1", "succeeded", "metadata", otherOp), "operation id", false},
		{"refund of another amount", payonce.KindRefund, nil, refundObj("re_1", "succeeded", "amount", 200), "amount 200, not 100", false},
		{"refund in another currency", payonce.KindRefund, nil, refundObj("re_1", "succeeded", "currency", "usd"), "currency", false},
		{"refund of another PaymentIntent", payonce.KindRefund, nil, refundObj("re_1", "succeeded", "payment_intent", "pi_9"), "pi_9", false},
		{"full refund in another currency", payonce.KindRefund, fullRefund, refundObj("re_1", "failed", "currency", "usd"), "currency", false},
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
		{"stale success", piObj("pi_1", "succeeded", "amount_received", 1999), piObj("pi_1", "requires_payment_method", "last_payment_error", map[string]string{"code": "card_declined"}), payonce.LookupFailed, ""},
		{"stale processing", piObj("pi_1", "processing"), piObj("pi_1", "succeeded", "amount_received", 1999), payonce.LookupSucceeded, ""},
		{"another amount when read", piObj("pi_1", "succeeded", "amount_received", 1999), piObj("pi_1", "succeeded", "amount", 5000, "amount_received", 5000), payonce.LookupProcessing, "amount 5000"},
		{"hit without metadata", piObj("pi_1", "succeeded", "metadata", map[string]string{}), piObj("pi_1", "succeeded", "amount_received", 1999), payonce.LookupSucceeded, ""},
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
