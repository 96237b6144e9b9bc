package checkout_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/checkout"
)

// agreement is what Classify and Lookup must both say of one object.
type agreement = testkit.Agreement

// payOf renders a payment of the charge's operation; approved "" leaves the
// field out.
func payOf(id, status, approved, key string) string {
	op := chargeReq().OperationID
	s := fmt.Sprintf(`{"id":%q,"action_id":"act_a","amount":1999,"currency":"USD","status":%q,"reference":%q,"response_code":"20051","response_summary":"Insufficient Funds","metadata":{"payonce_op":%q,"payonce_key":%q}`, id, status, op, op, key)
	if approved != "" {
		s += `,"approved":` + approved
	}
	return s + "}"
}

// Every Checkout.com payment status (and action outcome) of every kind,
// read by Classify as the answer to a send and by Lookup as the object read
// by id: the two must agree, and follow docs/ADAPTERS.md (a charge
// authorized and then released succeeded as a charge).
func TestStatesAgree(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	succeeded := agreement{Class: ledger.OutcomeSuccess, State: payonce.LookupSucceeded}
	processing := agreement{Class: ledger.OutcomeSuccess, Processing: true, State: payonce.LookupProcessing}
	declined := agreement{Class: ledger.OutcomeRefused, State: payonce.LookupFailed, Code: "declined", Decline: "20051"}
	unknown := agreement{Class: ledger.OutcomeMaybeSent}
	notACharge := agreement{Class: ledger.OutcomeKeyMismatch, Contradict: true}
	for _, tc := range []struct {
		name     string
		status   string
		approved string
		want     agreement
	}{
		{name: "pending", status: "Pending", want: processing},
		{name: "retry scheduled", status: "Retry Scheduled", approved: "false", want: processing},
		{name: "authorized", status: "Authorized", approved: "true", want: succeeded},
		{name: "authorized, not approved", status: "Authorized", approved: "false", want: unknown},
		{name: "card verified", status: "Card Verified", approved: "true", want: notACharge},
		{name: "captured", status: "Captured", approved: "true", want: succeeded},
		{name: "partially captured", status: "Partially Captured", approved: "true", want: succeeded},
		{name: "paid", status: "Paid", approved: "true", want: succeeded},
		{name: "declined", status: "Declined", approved: "false", want: declined},
		{name: "declined, approved flag true", status: "Declined", approved: "true", want: declined},
		{name: "voided after authorization", status: "Voided", approved: "true", want: succeeded},
		{name: "refunded", status: "Refunded", approved: "true", want: succeeded},
		{name: "partially refunded", status: "Partially Refunded", approved: "true", want: succeeded},
		{name: "canceled after authorization", status: "Canceled", approved: "true", want: succeeded},
		{name: "canceled before authorization", status: "Canceled", approved: "false", want: declined},
		{name: "expired after authorization", status: "Expired", approved: "true", want: succeeded},
		{name: "expired before authorization", status: "Expired", approved: "false", want: declined},
		{name: "unknown status", status: "Brand New", approved: "true", want: unknown},
	} {
		t.Run("charge/"+tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			body := payOf("pay_1", tc.status, tc.approved, op)
			getOK(t, b, base+"/payments/pay_1", 200, body)
			getOK(t, b, base+"/payments/pay_1/actions", 200, "["+act("act_a", "Authorization", false, op, "20051")+"]")
			o := b.P.Classify(chargeReq(), 201, http.Header{}, []byte(body))
			res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pay_1"))
			testkit.RequireAgree(t, tc.want, o, res, err, testkit.AgreeChecks{})
		})
	}

	// Captures, voids and refunds are accepted with 202 (Classify:
	// success+Processing); the action in the payment's actions list then
	// says approved, declined or not decided yet.
	for _, kind := range []payonce.Kind{payonce.KindCapture, payonce.KindCancel, payonce.KindRefund} {
		typ := map[payonce.Kind]string{payonce.KindCapture: "Capture", payonce.KindCancel: "Void", payonce.KindRefund: "Refund"}[kind]
		for _, tc := range []struct {
			name     string
			approved any
			want     payonce.LookupState
		}{
			{name: "approved", approved: true, want: payonce.LookupSucceeded},
			{name: "declined", approved: false, want: payonce.LookupFailed},
			{name: "not decided", want: payonce.LookupProcessing},
		} {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				r := withKind(chargeReq(), kind, 1999, "pay_1")
				o := b.P.Classify(r, 202, http.Header{}, []byte(`{"action_id":"act_x","reference":"`+op+`"}`))
				require.Equal(t, ledger.OutcomeSuccess, o.Class)
				require.True(t, o.Processing, "accepted, not done")
				require.Equal(t, "act_x", o.ProviderRef)
				getOK(t, b, base+"/payments/pay_1/actions", 200, "["+act("act_x", typ, tc.approved, op, "20005")+"]")
				res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(kind, "pay_1", "act_x"))
				require.NoError(t, err)
				require.Equal(t, tc.want, res.State)
				require.Empty(t, res.Contradiction)
				if tc.want == payonce.LookupFailed {
					require.Equal(t, "action_declined", res.Code)
					require.Equal(t, "20005", res.DeclineCode)
				}
			})
		}
	}
}

// A Canceled or Expired payment that does not say whether it was approved
// is maybe_sent in Classify; Lookup decides it from the payment's actions.
func TestLookupCanceledWithoutApprovalReadsTheActions(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	for _, tc := range []struct {
		actions string
		state   payonce.LookupState
	}{
		{actions: "[" + act("act_a", "Authorization", true, op, "10000") + "]", state: payonce.LookupSucceeded},
		{actions: "[" + act("act_a", "Authorization", false, op, "20051") + "]", state: payonce.LookupFailed},
		{actions: "[]", state: payonce.LookupFailed},
	} {
		b := setup(t)
		body := payOf("pay_1", "Expired", "", op)
		require.Equal(t, ledger.OutcomeMaybeSent, b.P.Classify(chargeReq(), 201, http.Header{}, []byte(body)).Class)
		getOK(t, b, base+"/payments/pay_1", 200, body)
		getOK(t, b, base+"/payments/pay_1/actions", 200, tc.actions)
		res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pay_1"))
		require.NoError(t, err)
		require.Equal(t, tc.state, res.State, tc.actions)
	}
}

// Checkout.com documents no error for a key reused with another request:
// only that a repeat of a key whose request succeeded gets the same status
// and body. Such a replay of another request's answer, and any error about
// the key, go to review (key_mismatch), never refused or succeeded.
func TestClassifySameKeyOtherRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := chargeReq()
	op := charge.OperationID
	refundR := withKind(charge, payonce.KindRefund, 100, "pay_1")
	other := func(amount int64, currency, ref string) string {
		return fmt.Sprintf(`{"id":"pay_9","amount":%d,"currency":%q,"approved":true,"status":"Captured","reference":%q,"metadata":{"payonce_op":%q}}`, amount, currency, ref, ref)
	}
	for _, tc := range []struct {
		name   string
		r      payonce.SendRequest
		status int
		body   string
		why    string // in Contradiction; "" for an error answer
	}{
		{name: "the first request's payment: another operation", r: charge, status: 201, body: other(1999, "USD", "someone-else"), why: `operation id "someone-else"`},
		{name: "the first request's payment: another amount", r: charge, status: 201, body: other(5000, "USD", op), why: "amount 5000, not 1999"},
		{name: "the first request's payment: another currency", r: charge, status: 201, body: other(1999, "EUR", op), why: `currency "EUR"`},
		{name: "a declined payment of another operation", r: charge, status: 201, body: strings.Replace(other(1999, "USD", "someone-else"), `"approved":true,"status":"Captured"`, `"approved":false,"status":"Declined"`, 1), why: `operation id "someone-else"`},
		{name: "a reference that is not ours", r: charge, status: 201, body: `{"id":"pay_9","amount":1999,"currency":"USD","approved":true,"status":"Captured","reference":"someone-else","metadata":{}}`, why: `operation id "someone-else"`},
		{name: "an accepted action of another operation", r: refundR, status: 202, body: `{"action_id":"act_9","reference":"someone-else"}`, why: `operation id "someone-else"`},
		{name: "a payment where an action was expected", r: refundR, status: 201, body: other(1999, "USD", op), why: `payment "pay_9"`},
		{name: "422 naming the key", r: charge, status: 422, body: ckoErr("request_invalid", "idempotency_key_reused")},
		{name: "400 idempotency error type", r: charge, status: 400, body: ckoErr("idempotency_error")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := b.P.Classify(tc.r, tc.status, http.Header{}, []byte(tc.body))
			require.Equal(t, ledger.OutcomeKeyMismatch, o.Class, "review, never refused or succeeded: %s", o.Message)
			require.False(t, o.Processing)
			if tc.why != "" {
				require.Contains(t, o.Contradiction, tc.why)
			} else {
				require.Empty(t, o.Contradiction)
			}
		})
	}
	// Other 4xx stay refusals.
	o := b.P.Classify(charge, 422, http.Header{}, []byte(ckoErr("request_invalid", "amount_invalid")))
	require.Equal(t, ledger.OutcomeRefused, o.Class)
}

// Objects read by id in a lookup are checked too.
func TestLookupContradiction(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	partial := lookupQuery(payonce.KindRefund, "pay_1", "")
	partial.Request.Amount = 500
	testkit.RequireLookups(t, func(t *testing.T) bundle { return setup(t) }, []testkit.LookupCase[*checkout.Provider]{
		{Name: "charge by id of another amount", Q: lookupQuery(payonce.KindCharge, "", "pay_1"),
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/payments/pay_1", 200, strings.Replace(payOf("pay_1", "Captured", "true", op), `"amount":1999`, `"amount":19`, 1))
			},
			Contradiction: "amount 19, not 1999",
			Check:         func(t *testing.T, res payonce.LookupResult) { require.Equal(t, []string{"pay_1"}, res.Refs) }},
		{Name: "list hit whose payment carries another operation", Q: lookupQuery(payonce.KindCharge, "", ""),
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/payments", 200, list(1, getPay("pay_1", "Captured", true, op)))
				serveByID(b, map[string]string{"pay_1": `{"id":"pay_1","amount":1999,"currency":"USD","approved":true,"status":"Captured","reference":"` + op + `","metadata":{"payonce_op":"someone-else"}}`}, nil)
			},
			Contradiction: `operation id "someone-else"`},
		{Name: "refund action found by id with another reference", Q: lookupQuery(payonce.KindRefund, "pay_1", "act_r"),
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/payments/pay_1/actions", 200, "["+act("act_r", "Refund", true, "someone-else", "10000")+"]")
			},
			Contradiction: `operation id "someone-else"`},
		{Name: "partial refund action of another amount", Q: partial,
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/payments/pay_1/actions", 200, "["+act("act_r", "Refund", true, op, "10000")+"]")
			},
			Contradiction: "amount 1999, not 500"},
		{Name: "listed but gone when read by id", Q: lookupQuery(payonce.KindCharge, "", ""),
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/payments", 200, list(1, getPay("pay_1", "Captured", true, op)))
				serveByID(b, nil, nil)
			},
			Err: "listed by reference"},
	})
}

// After an operator approved a resend under a new key, the lookup sees
// every generation's objects and adapterkit.Combine decides.
func TestLookupGenerations(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	const key1 = "5d1c7e0a-0000-5000-8000-00000000c001"
	gen1 := func(kind payonce.Kind, paymentRef, providerRef string, earlierRefs ...string) payonce.LookupQuery {
		q := lookupQuery(kind, paymentRef, providerRef)
		q.Key, q.Generation, q.EarlierKeys, q.EarlierRefs = key1, 1, []string{op}, earlierRefs
		return q
	}
	for _, tc := range []struct {
		name    string
		q       payonce.LookupQuery
		listed  []string
		objects []string
		state   payonce.LookupState
		ref     string
		refs    []string
	}{
		{name: "earlier declined, nothing under the new key", q: gen1(payonce.KindCharge, "", ""),
			listed: []string{payOf("pay_0", "Declined", "false", op)}, state: payonce.LookupNotFound},
		{name: "earlier declined, new key pending", q: gen1(payonce.KindCharge, "", ""),
			listed: []string{payOf("pay_1", "Pending", "", key1), payOf("pay_0", "Declined", "false", op)}, state: payonce.LookupProcessing, ref: "pay_1", refs: []string{"pay_1", "pay_0"}},
		{name: "earlier succeeded, read by its reference only", q: gen1(payonce.KindCharge, "", "", "pay_0"),
			listed: nil, objects: []string{payOf("pay_0", "Captured", "true", op)}, state: payonce.LookupSucceeded, ref: "pay_0", refs: []string{"pay_0"}},
		{name: "earlier and new both succeeded", q: gen1(payonce.KindCharge, "", "", "pay_0"),
			listed: []string{payOf("pay_1", "Captured", "true", key1)}, objects: []string{payOf("pay_0", "Authorized", "true", op)}, state: payonce.LookupMultiple, ref: "pay_0", refs: []string{"pay_0", "pay_1"}},
		{name: "new key known and pending, earlier captured in the list", q: gen1(payonce.KindCharge, "", "pay_1"),
			listed: []string{payOf("pay_0", "Captured", "true", op)}, objects: []string{payOf("pay_1", "Pending", "", key1)}, state: payonce.LookupSucceeded, ref: "pay_0", refs: []string{"pay_1", "pay_0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			getOK(t, b, base+"/payments", 200, list(len(tc.listed), tc.listed...))
			serveByID(b, byID(append(tc.listed, tc.objects...)...), nil)
			res, err := b.P.Lookup(context.Background(), b.HC, tc.q)
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State, res.Message)
			require.Equal(t, tc.ref, res.ProviderRef)
			require.Equal(t, tc.refs, res.Refs)
		})
	}

	// Actions: the generation is the action's payonce_key metadata, or its
	// id among the earlier references.
	t.Run("actions", func(t *testing.T) {
		t.Parallel()
		refund := func(id string, approved any, key string) string {
			a := act(id, "Refund", approved, op, "20005")
			return strings.TrimSuffix(a, "}") + `,"metadata":{"payonce_key":"` + key + `"}}`
		}
		b := setup(t)
		getOK(t, b, base+"/payments/pay_1/actions", 200, "["+refund("act_0", false, op)+"]")
		res, err := b.P.Lookup(context.Background(), b.HC, gen1(payonce.KindRefund, "pay_1", ""))
		require.NoError(t, err)
		require.Equal(t, payonce.LookupNotFound, res.State, "the earlier key's declined refund does not answer for the new key")

		b = setup(t)
		getOK(t, b, base+"/payments/pay_1/actions", 200, "["+refund("act_1", true, key1)+","+act("act_0", "Refund", true, op, "10000")+"]")
		res, err = b.P.Lookup(context.Background(), b.HC, gen1(payonce.KindRefund, "pay_1", "", "act_0"))
		require.NoError(t, err)
		require.Equal(t, payonce.LookupMultiple, res.State, "refunded under both keys")
		require.Equal(t, []string{"act_1", "act_0"}, res.Refs)
	})
}

// Checkout.com documents no replay marker (its idempotency page and the
// official SDKs name no header): the adapter claims none.
func TestNoReplayMarker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, ok := any(b.P).(payonce.ReplayDetector)
	require.False(t, ok, "Checkout.com documents no header that marks a replayed answer")
	o := b.P.Classify(chargeReq(), 201, http.Header{"Cko-Idempotency-Replayed": {"true"}}, []byte(payOf("pay_1", "Captured", "true", chargeReq().Key)))
	require.False(t, o.Replayed, "an undocumented header is not trusted")
}
