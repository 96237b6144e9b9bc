package yookassa_test

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
	"github.com/payonce/payonce/providers/yookassa"
)

// agreement is what Classify and Lookup must both say of one object.
type agreement = testkit.Agreement

// Every YooKassa status of every kind, read by Classify as the answer to a
// send and by Lookup as the object read by id: the two must agree (a
// success is "succeeded", a processing success "processing", a refusal
// "failed" with the same codes, a maybe_sent "not found" or an error), and
// both must follow docs/ADAPTERS.md: a charge authorized and then released
// succeeded as a charge; one canceled before authorization failed.
func TestStatesAgree(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	cd := func(party, reason string) string { return fmt.Sprintf(`{"party":%q,"reason":%q}`, party, reason) }
	payment := func(status, cancel string) string { return pmGen("p1", status, op, op, "1200.00", cancel) }
	refund := func(status, cancel string) string {
		s := `{"id":"r1","payment_id":"p1","status":"` + status + `","amount":{"value":"1200.00","currency":"RUB"},"description":"payonce_op:` + op + `"`
		if cancel != "" {
			s += `,"cancellation_details":` + cancel
		}
		return s + "}"
	}
	succeeded := agreement{Class: ledger.OutcomeSuccess, State: payonce.LookupSucceeded}
	processing := agreement{Class: ledger.OutcomeSuccess, Processing: true, State: payonce.LookupProcessing}
	notYet := agreement{Class: ledger.OutcomeMaybeSent, State: payonce.LookupNotFound}
	unknown := agreement{Class: ledger.OutcomeMaybeSent}
	declined := func(reason string) agreement {
		return agreement{Class: ledger.OutcomeRefused, State: payonce.LookupFailed, Code: "canceled", Decline: reason}
	}

	for _, tc := range []struct {
		kind payonce.Kind
		name string
		body string
		want agreement
	}{
		// Charges: the payment the charge created.
		{kind: payonce.KindCharge, name: "pending", body: payment("pending", ""), want: processing},
		{kind: payonce.KindCharge, name: "waiting_for_capture", body: payment("waiting_for_capture", ""), want: succeeded},
		{kind: payonce.KindCharge, name: "succeeded", body: payment("succeeded", ""), want: succeeded},
		{kind: payonce.KindCharge, name: "canceled after authorization by the merchant", body: payment("canceled", cd("merchant", "canceled_by_merchant")), want: succeeded},
		{kind: payonce.KindCharge, name: "canceled after authorization, capture period expired", body: payment("canceled", cd("yoo_money", "expired_on_capture")), want: succeeded},
		{kind: payonce.KindCharge, name: "canceled before authorization: insufficient_funds", body: payment("canceled", cd("payment_network", "insufficient_funds")), want: declined("insufficient_funds")},
		{kind: payonce.KindCharge, name: "canceled before authorization: card_expired", body: payment("canceled", cd("payment_network", "card_expired")), want: declined("card_expired")},
		{kind: payonce.KindCharge, name: "canceled before authorization: 3d_secure_failed", body: payment("canceled", cd("payment_network", "3d_secure_failed")), want: declined("3d_secure_failed")},
		{kind: payonce.KindCharge, name: "canceled before authorization: expired_on_confirmation", body: payment("canceled", cd("yoo_money", "expired_on_confirmation")), want: declined("expired_on_confirmation")},
		{kind: payonce.KindCharge, name: "canceled before authorization: fraud_suspected", body: payment("canceled", cd("yoo_money", "fraud_suspected")), want: declined("fraud_suspected")},
		{kind: payonce.KindCharge, name: "canceled without details", body: payment("canceled", ""), want: declined("")},
		{kind: payonce.KindCharge, name: "unknown status", body: payment("brand_new", ""), want: unknown},

		// Captures: the payment the capture acted on.
		{kind: payonce.KindCapture, name: "pending", body: payment("pending", ""), want: notYet},
		{kind: payonce.KindCapture, name: "waiting_for_capture", body: payment("waiting_for_capture", ""), want: notYet},
		{kind: payonce.KindCapture, name: "succeeded", body: payment("succeeded", ""), want: succeeded},
		{kind: payonce.KindCapture, name: "canceled by the merchant", body: payment("canceled", cd("merchant", "canceled_by_merchant")), want: declined("canceled_by_merchant")},
		{kind: payonce.KindCapture, name: "capture period expired", body: payment("canceled", cd("yoo_money", "expired_on_capture")), want: declined("expired_on_capture")},
		{kind: payonce.KindCapture, name: "declined before authorization", body: payment("canceled", cd("payment_network", "insufficient_funds")), want: declined("insufficient_funds")},
		{kind: payonce.KindCapture, name: "unknown status", body: payment("brand_new", ""), want: unknown},

		// Cancels: the payment the cancel acted on.
		{kind: payonce.KindCancel, name: "pending", body: payment("pending", ""), want: notYet},
		{kind: payonce.KindCancel, name: "waiting_for_capture", body: payment("waiting_for_capture", ""), want: notYet},
		{kind: payonce.KindCancel, name: "succeeded (captured)", body: payment("succeeded", ""), want: agreement{Class: ledger.OutcomeRefused, State: payonce.LookupFailed, Code: "unexpected_status"}},
		{kind: payonce.KindCancel, name: "canceled by the merchant", body: payment("canceled", cd("merchant", "canceled_by_merchant")), want: succeeded},
		{kind: payonce.KindCancel, name: "canceled, capture period expired", body: payment("canceled", cd("yoo_money", "expired_on_capture")), want: succeeded},
		{kind: payonce.KindCancel, name: "unknown status", body: payment("brand_new", ""), want: unknown},

		// Refunds.
		{kind: payonce.KindRefund, name: "pending", body: refund("pending", ""), want: processing},
		{kind: payonce.KindRefund, name: "succeeded", body: refund("succeeded", ""), want: succeeded},
		{kind: payonce.KindRefund, name: "canceled", body: refund("canceled", cd("payment_network", "general_decline")),
			want: agreement{Class: ledger.OutcomeRefused, State: payonce.LookupFailed, Code: "refund_canceled", Decline: "general_decline"}},
		{kind: payonce.KindRefund, name: "unknown status", body: refund("weird", ""), want: unknown},
	} {
		t.Run(string(tc.kind)+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			r := chargeReq()
			q := lookupQuery(payonce.KindCharge, "", "p1")
			switch tc.kind {
			case payonce.KindCapture, payonce.KindCancel:
				r = withKind(r, tc.kind, 0, "p1")
				q = lookupQuery(tc.kind, "p1", "")
				q.Request = r.Request
				getOK(t, b, base+"/v3/payments/p1", 200, tc.body)
			case payonce.KindRefund:
				r = withKind(r, tc.kind, r.Request.Amount, "p1")
				q = lookupQuery(tc.kind, "p1", "")
				getOK(t, b, base+"/v3/refunds", 200, ykList("", tc.body))
				getOK(t, b, base+"/v3/refunds/r1", 200, tc.body)
			default:
				getOK(t, b, base+"/v3/payments/p1", 200, tc.body)
			}

			o := b.P.Classify(r, 200, http.Header{}, []byte(tc.body))
			res, err := b.P.Lookup(context.Background(), b.HC, q)
			testkit.RequireAgree(t, tc.want, o, res, err, testkit.AgreeChecks{SameMessage: true, MaybeSentNotFound: true})
		})
	}
}

// A 2xx answer whose object is not this request's is never a success or a
// failure: key_mismatch with Contradiction, for review.
func TestClassifyContradiction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := chargeReq()
	op, key := charge.OperationID, charge.Key
	capture := withKind(charge, payonce.KindCapture, 0, "p1")
	cancel := withKind(charge, payonce.KindCancel, 0, "p1")
	refundR := withKind(charge, payonce.KindRefund, 100, "p1")
	rf := func(payment, value, cur, desc string) string {
		return fmt.Sprintf(`{"id":"r1","payment_id":%q,"status":"succeeded","amount":{"value":%q,"currency":%q},"description":%q}`, payment, value, cur, desc)
	}
	for _, tc := range []struct {
		name string
		r    payonce.SendRequest
		body string
		why  string
	}{
		{name: "charge of another operation", r: charge, body: pmGen("p1", "succeeded", "someone-else", key, "1200.00", ""), why: `operation id "someone-else"`},
		{name: "charge of another amount", r: charge, body: pmGen("p1", "succeeded", op, key, "12.00", ""), why: "amount 1200, not 120000"},
		{name: "charge in another currency", r: charge, body: `{"id":"p1","status":"succeeded","amount":{"value":"1200.00","currency":"USD"},"metadata":{"payonce_op":"` + op + `"}}`, why: `currency "USD"`},
		{name: "a declined charge of another amount", r: charge, body: pmGen("p1", "canceled", op, key, "1.00", `{"party":"payment_network","reason":"insufficient_funds"}`), why: "amount 100"},
		{name: "capture answered with another payment", r: capture, body: pmGen("p2", "succeeded", op, key, "1200.00", ""), why: `payment "p2", not "p1"`},
		{name: "cancel answered with another payment", r: cancel, body: pmGen("p2", "canceled", op, key, "1200.00", `{"party":"merchant","reason":"canceled_by_merchant"}`), why: `payment "p2"`},
		{name: "refund of another payment", r: refundR, body: rf("p2", "1.00", "RUB", "payonce_op:"+op), why: `payment "p2", not "p1"`},
		{name: "refund of another operation", r: refundR, body: rf("p1", "1.00", "RUB", "payonce_op:someone-else"), why: `operation id "someone-else"`},
		{name: "refund of another amount", r: refundR, body: rf("p1", "2.00", "RUB", "payonce_op:"+op), why: "amount 200, not 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := b.P.Classify(tc.r, 200, http.Header{}, []byte(tc.body))
			require.Equal(t, ledger.OutcomeKeyMismatch, o.Class, "never success or refused: %s", o.Message)
			require.Contains(t, o.Contradiction, tc.why)
			require.False(t, o.Processing)
			require.NotEmpty(t, o.ProviderRef)
		})
	}
	// The charge's own payment in the amount asked for, written with fewer
	// decimal digits, belongs.
	o := b.P.Classify(charge, 200, http.Header{}, []byte(pmGen("p1", "succeeded", op, key, "1200", "")))
	require.Equal(t, ledger.OutcomeSuccess, o.Class)
	require.Empty(t, o.Contradiction)
	// An amount that cannot be read is not understood: maybe_sent.
	o = b.P.Classify(charge, 200, http.Header{}, []byte(pmGen("p1", "succeeded", op, key, "12,00", "")))
	require.Equal(t, ledger.OutcomeMaybeSent, o.Class)
}

// Objects read by id in a lookup are checked too; a list hit is read again
// by id and the object read decides.
func TestLookupContradiction(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	key := chargeReq().Key
	mine := `{"id":"r1","payment_id":"p1","status":"succeeded","amount":{"value":"%s","currency":"RUB"},"description":"payonce_op:` + op + `"}`
	testkit.RequireLookups(t, func(t *testing.T) bundle { return setup(t) }, []testkit.LookupCase[*yookassa.Provider]{
		{Name: "charge by id of another amount", Q: lookupQuery(payonce.KindCharge, "", "p1"),
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/v3/payments/p1", 200, pmGen("p1", "succeeded", op, key, "1.00", ""))
			},
			Contradiction: "amount 100, not 120000",
			Check: func(t *testing.T, res payonce.LookupResult) {
				require.Equal(t, "p1", res.ProviderRef)
				require.NotEqual(t, payonce.LookupSucceeded, res.State)
				require.NotEqual(t, payonce.LookupFailed, res.State)
			}},
		{Name: "list hit whose object carries another operation", Q: lookupQuery(payonce.KindCharge, "", ""),
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/v3/payments", 200, ykList("", pmOp("p1", "succeeded", op)))
				serveObjects(b, "/v3/payments", objectsOf(pmGen("p1", "succeeded", "someone-else", key, "1200.00", "")), nil)
			},
			Contradiction: `operation id "someone-else"`},
		{Name: "capture of a payment in another currency", Q: lookupQuery(payonce.KindCapture, "p1", ""),
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/v3/payments/p1", 200, `{"id":"p1","status":"succeeded","amount":{"value":"1200.00","currency":"EUR"}}`)
			},
			Contradiction: `currency "EUR"`},
		{Name: "refund of another amount", Q: lookupQuery(payonce.KindRefund, "p1", ""),
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/v3/refunds", 200, ykList("", fmt.Sprintf(mine, "1200.00")))
				serveObjects(b, "/v3/refunds", map[string]string{"r1": fmt.Sprintf(mine, "600.00")}, nil)
			},
			Contradiction: "amount 60000, not 120000",
			Check:         func(t *testing.T, res payonce.LookupResult) { require.Equal(t, []string{"r1"}, res.Refs) }},
		{Name: "listed but gone when read by id", Q: lookupQuery(payonce.KindCharge, "", ""),
			Serve: func(t *testing.T, b bundle) {
				getOK(t, b, base+"/v3/payments", 200, ykList("", pmOp("p1", "succeeded", op)))
				serveObjects(b, "/v3/payments", nil, nil)
			},
			Err: "in the list"},
	})
}

// After an operator approved a resend under a new key, the lookup sees
// every generation's objects: the list finds them all, the earlier
// references are read by id, and adapterkit.Combine decides.
func TestLookupGenerations(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	const key1 = "5d1c7e0a-0000-5000-8000-00000000g001"
	gen1 := func(providerRef string, earlierRefs ...string) payonce.LookupQuery {
		q := lookupQuery(payonce.KindCharge, "", providerRef)
		q.Key, q.Generation, q.EarlierKeys, q.EarlierRefs = key1, 1, []string{op}, earlierRefs
		return q
	}
	declined := `{"party":"payment_network","reason":"insufficient_funds"}`
	for _, tc := range []struct {
		name    string
		q       payonce.LookupQuery
		listed  []string // in the payments list
		objects []string // readable by id
		state   payonce.LookupState
		ref     string
		refs    []string
	}{
		{name: "earlier declined, nothing under the new key", q: gen1(""),
			listed: []string{pmGen("p0", "canceled", op, op, "1200.00", declined)},
			state:  payonce.LookupNotFound},
		{name: "earlier declined, new key pending", q: gen1(""),
			listed: []string{pmGen("p1", "pending", op, key1, "1200.00", ""), pmGen("p0", "canceled", op, op, "1200.00", declined)},
			state:  payonce.LookupProcessing, ref: "p1", refs: []string{"p1", "p0"}},
		{name: "earlier succeeded, read by its reference only", q: gen1("", "p0"),
			listed: nil, objects: []string{pmGen("p0", "succeeded", op, op, "1200.00", "")},
			state: payonce.LookupSucceeded, ref: "p0", refs: []string{"p0"}},
		{name: "earlier and new both succeeded", q: gen1("", "p0"),
			listed: []string{pmGen("p1", "succeeded", op, key1, "1200.00", "")}, objects: []string{pmGen("p0", "waiting_for_capture", op, op, "1200.00", "")},
			state: payonce.LookupMultiple, ref: "p0", refs: []string{"p0", "p1"}},
		{name: "new key known and pending, earlier succeeded in the list", q: gen1("p1"),
			listed: []string{pmGen("p0", "succeeded", op, op, "1200.00", "")}, objects: []string{pmGen("p1", "pending", op, key1, "1200.00", "")},
			state: payonce.LookupSucceeded, ref: "p0", refs: []string{"p1", "p0"}},
		{name: "new key declined, earlier declined", q: gen1("p1", "p0"),
			listed: nil, objects: []string{pmGen("p1", "canceled", op, key1, "1200.00", declined), pmGen("p0", "canceled", op, op, "1200.00", declined)},
			state: payonce.LookupFailed, ref: "p1", refs: []string{"p1", "p0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			getOK(t, b, base+"/v3/payments", 200, ykList("", tc.listed...))
			serveObjects(b, "/v3/payments", objectsOf(append(tc.listed, tc.objects...)...), nil)
			res, err := b.P.Lookup(context.Background(), b.HC, tc.q)
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State, res.Message)
			require.Equal(t, tc.ref, res.ProviderRef)
			require.Equal(t, tc.refs, res.Refs)
			require.Equal(t, yookassa.DefaultListLag, res.Lag, "the list is searched: its lag")
		})
	}

	// Refunds carry no metadata: the key marker in the description tells
	// the generations apart; a refund without one is generation 0's.
	t.Run("refunds", func(t *testing.T) {
		t.Parallel()
		q := lookupQuery(payonce.KindRefund, "p1", "")
		q.Key, q.Generation, q.EarlierKeys = key1, 1, []string{op}
		rf := func(id, status, desc string) string {
			s := `{"id":"` + id + `","payment_id":"p1","status":"` + status + `","amount":{"value":"1200.00","currency":"RUB"},"description":"` + desc + `"`
			if status == "canceled" {
				s += `,"cancellation_details":{"party":"payment_network","reason":"general_decline"}`
			}
			return s + "}"
		}
		earlier := rf("r0", "canceled", "payonce_op:"+op)
		b := setup(t)
		getOK(t, b, base+"/v3/refunds", 200, ykList("", earlier))
		serveObjects(b, "/v3/refunds", objectsOf(earlier), nil)
		res, err := b.P.Lookup(context.Background(), b.HC, q)
		require.NoError(t, err)
		require.Equal(t, payonce.LookupNotFound, res.State, "the earlier key's failure does not answer for the new key")

		current := rf("r1", "succeeded", "Returned payonce_op:"+op+" payonce_key:"+key1)
		b = setup(t)
		getOK(t, b, base+"/v3/refunds", 200, ykList("", current, earlier))
		serveObjects(b, "/v3/refunds", objectsOf(current, earlier), nil)
		res, err = b.P.Lookup(context.Background(), b.HC, q)
		require.NoError(t, err)
		require.Equal(t, payonce.LookupSucceeded, res.State)
		require.Equal(t, "r1", res.ProviderRef)
		require.Equal(t, []string{"r1", "r0"}, res.Refs)
	})
}

// Under a later key generation the refund's description carries the key;
// at generation 0 it is the same bytes as ever.
func TestRefundDescriptionCarriesTheKeyOfLaterGenerations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := withKind(chargeReq(), payonce.KindRefund, 100, "p1")
	r.Request.Description = "Returned goods"
	_, body := testkit.Build(t, b.P, r)
	require.Equal(t, "Returned goods payonce_op:"+r.OperationID, testkit.DecodeJSON(t, body)["description"])

	r.Key = "5d1c7e0a-0000-5000-8000-00000000g001"
	r.Request.Description = strings.Repeat("ж", 300)
	_, body = testkit.Build(t, b.P, r)
	desc := testkit.DecodeJSON(t, body)["description"].(string)
	require.True(t, strings.HasSuffix(desc, " payonce_op:"+r.OperationID+" payonce_key:"+r.Key), desc)
	require.LessOrEqual(t, len([]rune(desc)), 250)
}

// YooKassa documents no replay marker: the adapter claims none.
func TestNoReplayMarker(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, ok := any(b.P).(payonce.ReplayDetector)
	require.False(t, ok, "YooKassa documents no header or field that marks a replayed answer")
	o := b.P.Classify(chargeReq(), 200, http.Header{"Idempotent-Replayed": {"true"}}, []byte(pm("p1", "succeeded", "")))
	require.False(t, o.Replayed)
}
