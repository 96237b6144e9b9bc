package stripe_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// rows runs ListObjects and returns every row it yielded, in order: a
// disputed PaymentIntent is yielded twice.
func (a auditFake) rows(t *testing.T, from, to time.Time) []payonce.AuditObject {
	t.Helper()
	var out []payonce.AuditObject
	err := a.P.ListObjects(context.Background(), a.HC, payonce.AuditQuery{From: from, To: to}, func(o payonce.AuditObject) error {
		out = append(out, o)
		return nil
	})
	require.NoError(t, err)
	return out
}

// byRef groups rows by Ref, in the order they were yielded.
func byRef(rows []payonce.AuditObject) map[string][]payonce.AuditObject {
	m := map[string][]payonce.AuditObject{}
	for _, o := range rows {
		m[o.Ref] = append(m[o.Ref], o)
	}
	return m
}

// payonceMD is payonce's metadata of operation op, charge, under key op-key.
func payonceMD(op string) map[string]string {
	return map[string]string{stripe.MetaOperation: op, stripe.MetaKey: op + "-key", stripe.MetaKind: "charge"}
}

// A dispute whose funds are withdrawn (needs_response, under_review,
// lost) yields its PaymentIntent a second time, reversed, dated by the
// dispute; inquiries, won and prevented disputes yield nothing more. The
// PaymentIntents come expanded in the disputes' page: no request per
// dispute.
func TestListObjectsDisputes(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	from := auditStart
	reversed := map[string]string{}  // pi -> dispute status
	unchanged := map[string]string{} // pi -> dispute status
	for i, status := range []string{"lost", "needs_response", "under_review", "won", "warning_needs_response",
		"warning_under_review", "warning_closed", "prevented"} {
		pi, err := a.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: int64(1000 + i), Currency: "usd", Created: from,
			Metadata: payonceMD(fmt.Sprintf("op-%d", i))})
		require.NoError(t, err)
		// The dispute comes an hour later.
		_, err = a.f.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: pi, Status: status, Amount: 10, Created: from.Add(time.Hour)})
		require.NoError(t, err)
		if status == "lost" || status == "needs_response" || status == "under_review" {
			reversed[pi] = status
		} else {
			unchanged[pi] = status
		}
	}
	// A dispute of a PaymentIntent made elsewhere (no payonce metadata):
	// the PaymentIntent is counted once, in its own row.
	foreign, err := a.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 5, Currency: "usd", Created: from})
	require.NoError(t, err)
	_, err = a.f.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: foreign, Status: "lost"})
	require.NoError(t, err)

	rows := a.rows(t, from, from.Add(2*time.Hour))
	got := byRef(rows)
	require.Len(t, got, len(reversed)+len(unchanged)+1)
	require.Len(t, rows, 2*len(reversed)+len(unchanged)+1)
	for pi, status := range reversed {
		require.Len(t, got[pi], 2, "%s (%s): its own row and the dispute's", pi, status)
		own, disp := got[pi][0], got[pi][1]
		require.Equal(t, payonce.AuditSucceeded, own.State)
		require.Equal(t, from, own.Created)
		require.Equal(t, payonce.AuditObject{Ref: pi, OperationID: own.OperationID, Key: own.OperationID + "-key", Kind: payonce.KindCharge,
			State: payonce.AuditReversed, Status: "dispute_" + status, Amount: own.Amount, Currency: "USD",
			Created: from.Add(time.Hour + time.Nanosecond)}, disp, "the PaymentIntent's operation, amount and currency; the dispute's time")
		require.NotEmpty(t, own.OperationID)
	}
	for pi, status := range unchanged {
		require.Len(t, got[pi], 1, "%s (%s): no funds withdrawn, nothing more", pi, status)
		require.Equal(t, payonce.AuditSucceeded, got[pi][0].State)
	}
	require.Len(t, got[foreign], 1)
	require.Empty(t, got[foreign][0].OperationID)

	tr := a.f.Truth()
	onlyGETs(t, tr, 0)
	require.Equal(t, 1, tr.Requests["GET /v1/disputes"])
	require.Zero(t, tr.Requests["GET /v1/payment_intents/{id}"], "the PaymentIntents came expanded")
}

// A dispute opened in the period of a PaymentIntent created before it: the
// dispute's row alone, the change after settlement that a period's audit
// must see. A dispute created outside the period is not listed.
func TestListObjectsDisputeOfAnEarlierCharge(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	old, err := a.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 700, Currency: "eur", Created: auditStart.Add(-30 * 24 * time.Hour),
		Metadata: payonceMD("op-old")})
	require.NoError(t, err)
	_, err = a.f.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: old, Status: "lost", Created: auditStart.Add(time.Minute)})
	require.NoError(t, err)
	late, err := a.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 800, Currency: "eur", Created: auditStart.Add(-time.Hour),
		Metadata: payonceMD("op-late")})
	require.NoError(t, err)
	_, err = a.f.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: late, Status: "needs_response", Created: auditStart.Add(time.Hour)})
	require.NoError(t, err)

	rows := a.rows(t, auditStart, auditStart.Add(time.Hour))
	require.Len(t, rows, 1, "%+v", rows)
	require.Equal(t, old, rows[0].Ref)
	require.Equal(t, "op-old", rows[0].OperationID)
	require.Equal(t, payonce.AuditReversed, rows[0].State)
	require.Equal(t, int64(700), rows[0].Amount)
	require.Equal(t, "EUR", rows[0].Currency)
}

// 150 disputes: two pages of GET /v1/disputes (100, then 50), each
// dispute's PaymentIntent yielded reversed once.
func TestListObjectsDisputesPaginate(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	// The PaymentIntents lie before the period, their disputes inside it.
	want := map[string]bool{}
	for i := range 150 {
		pi, err := a.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 100, Currency: "usd", Created: auditStart.Add(-time.Hour),
			Metadata: payonceMD(fmt.Sprintf("op-%d", i))})
		require.NoError(t, err)
		_, err = a.f.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: pi, Status: "lost", Created: auditStart.Add(time.Duration(i) * time.Second)})
		require.NoError(t, err)
		want[pi] = true
	}
	rows := a.rows(t, auditStart, auditStart.Add(time.Hour))
	require.Len(t, rows, 150)
	for _, o := range rows {
		require.True(t, want[o.Ref], o.Ref)
		delete(want, o.Ref)
		require.Equal(t, payonce.AuditReversed, o.State)
	}
	require.Empty(t, want, "every dispute once")
	tr := a.f.Truth()
	require.Equal(t, 2, tr.Requests["GET /v1/disputes"], "150 disputes: 2 pages of 100")
	require.Equal(t, 1, tr.Requests["GET /v1/payment_intents"])
	onlyGETs(t, tr, 0)
}

// dispObj is a Dispute of pi_1 (its id, or the object when expanded).
func dispObj(id, status string, pi any, kv ...any) string {
	return object(map[string]any{"id": id, "object": "dispute", "status": status, "amount": 1999, "currency": "eur",
		"charge": "ch_1", "payment_intent": pi, "reason": "fraudulent", "created": 1772362900}, kv...)
}

// emptyLists answers the PaymentIntents' and Refunds' lists with no object.
func emptyLists(b bundle) {
	for _, path := range []string{"/v1/payment_intents", "/v1/refunds"} {
		b.MT.RegisterResponder(http.MethodGet, base+path, httpmock.NewStringResponder(200, `{"object":"list","has_more":false,"data":[]}`))
	}
}

// A page whose payment_intent is an id (expansion not honoured) has the
// PaymentIntent read by id; one Stripe does not find is an error, and so
// is a dispute status the adapter does not know, or an expanded
// payment_intent that is not a PaymentIntent.
func TestListObjectsDisputeEdges(t *testing.T) {
	t.Parallel()
	period := payonce.AuditQuery{From: time.Unix(1772362800, 0), To: time.Unix(1772366400, 0)}
	list := func(b bundle) ([]payonce.AuditObject, error) {
		var out []payonce.AuditObject
		err := b.P.ListObjects(context.Background(), b.HC, period, func(o payonce.AuditObject) error { out = append(out, o); return nil })
		return out, err
	}
	page := func(items ...string) string {
		s := `{"object":"list","has_more":false,"data":[`
		for i, it := range items {
			if i > 0 {
				s += ","
			}
			s += it
		}
		return s + `]}`
	}

	t.Run("not expanded: read by id", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		emptyLists(b)
		b.MT.RegisterResponder(http.MethodGet, base+"/v1/disputes", httpmock.NewStringResponder(200, page(dispObj("du_1", "under_review", "pi_1"))))
		b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/pi_1",
			httpmock.NewStringResponder(200, piObj("pi_1", "succeeded", "amount_received", 1999, "created", 1772362000)))
		got, err := list(b)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, payonce.AuditObject{Ref: "pi_1", OperationID: opID, Key: opKey, Kind: payonce.KindCharge, State: payonce.AuditReversed,
			Status: "dispute_under_review", Amount: 1999, Currency: "EUR", Created: time.Unix(1772362900, 1).UTC()}, got[0])
		require.Equal(t, 1, b.MT.GetCallCountInfo()["GET "+base+"/v1/payment_intents/pi_1"])
	})

	t.Run("not expanded, not found", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		emptyLists(b)
		b.MT.RegisterResponder(http.MethodGet, base+"/v1/disputes", httpmock.NewStringResponder(200, page(dispObj("du_1", "lost", "pi_gone"))))
		b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/pi_gone", httpmock.NewStringResponder(404,
			`{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent: 'pi_gone'"}}`))
		_, err := list(b)
		require.ErrorContains(t, err, "dispute du_1 names PaymentIntent pi_gone, which Stripe does not find")
	})

	t.Run("unknown status", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		emptyLists(b)
		b.MT.RegisterResponder(http.MethodGet, base+"/v1/disputes", httpmock.NewStringResponder(200, page(dispObj("du_1", "arbitration", "pi_1"))))
		_, err := list(b)
		require.ErrorContains(t, err, `dispute du_1: status "arbitration", which the adapter does not know`)
	})

	t.Run("expanded object not a PaymentIntent", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		emptyLists(b)
		b.MT.RegisterResponder(http.MethodGet, base+"/v1/disputes", httpmock.NewStringResponder(200,
			page(dispObj("du_1", "lost", map[string]any{"id": "ch_1", "object": "charge"}))))
		_, err := list(b)
		require.ErrorContains(t, err, "dispute du_1: its payment_intent")
	})

	t.Run("no PaymentIntent, or no funds withdrawn: no request", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		emptyLists(b)
		b.MT.RegisterResponder(http.MethodGet, base+"/v1/disputes", httpmock.NewStringResponder(200,
			page(dispObj("du_1", "lost", nil), dispObj("du_2", "won", "pi_2"), dispObj("du_3", "warning_needs_response", "pi_3"))))
		got, err := list(b)
		require.NoError(t, err)
		require.Empty(t, got)
		require.Equal(t, 3, b.MT.GetTotalCallCount(), "the three lists, nothing read by id")
	})
}

// Client.Audit on the fake with a dispute made out of band, its webhook
// lost: a lost or open dispute of a charge the ledger says succeeded is
// exactly one status_differs, the PaymentIntent reversed; a won dispute
// is none.
func TestAuditEndToEndDisputes(t *testing.T) {
	t.Parallel()

	for _, status := range []string{"lost", "needs_response"} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			e := newAuditEnv(t)
			_, err := e.fake.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: e.charge.ProviderRef, Status: status, Amount: 700})
			require.NoError(t, err)
			e.clock.Advance(time.Second)
			rep := e.audit(t)
			d := only(t, rep, ledger.FindingStatusDiffers, 1)[0]
			require.Equal(t, e.charge.OperationID, d.OperationID)
			require.Equal(t, e.charge.ProviderRef, d.ProviderRef)
			require.Equal(t, payonce.KindCharge, d.Kind)
			require.Equal(t, ledger.StatusSucceeded, d.LedgerStatus)
			require.Equal(t, payonce.AuditReversed, d.ProviderState)
			require.Contains(t, d.Detail, "dispute_"+status)
			require.Len(t, rep.Differences, 1)
			require.Equal(t, 3, rep.Objects, "the PaymentIntent, the refund, the dispute's row of the PaymentIntent")
		})
	}

	t.Run("same second as the charge", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		// Stripe dates both in whole seconds: the dispute's row must
		// still be the PaymentIntent's latest.
		_, err := e.fake.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: e.charge.ProviderRef, Status: "lost", Created: e.start})
		require.NoError(t, err)
		d := only(t, e.audit(t), ledger.FindingStatusDiffers, 1)[0]
		require.Equal(t, payonce.AuditReversed, d.ProviderState)
	})

	t.Run("webhook delivered: in review, no difference", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		du, err := e.fake.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: e.charge.ProviderRef, Status: "lost", Amount: 700})
		require.NoError(t, err)
		// charge.dispute.created as Stripe signs it, read by the adapter
		// and recorded: the charge goes to review.
		const secret = "whsec_audit_dispute"
		psp, err := stripe.New(stripe.Config{APIKey: e.fake.APIKey(), BaseURL: e.fake.URL(), WebhookSecret: secret, Now: e.clock.Now})
		require.NoError(t, err)
		ts := e.clock.Now().Unix()
		body := []byte(fmt.Sprintf(`{"id":"evt_du","object":"event","type":"charge.dispute.created","created":%d,`+
			`"data":{"object":{"id":%q,"object":"dispute","reason":"fraudulent","status":"needs_response","payment_intent":%q}}}`,
			ts, du, e.charge.ProviderRef))
		mac := hmac.New(sha256.New, []byte(secret))
		fmt.Fprintf(mac, "%d.%s", ts, body)
		r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(body))
		r.Header.Set("Stripe-Signature", fmt.Sprintf("t=%d,v1=%s", ts, hex.EncodeToString(mac.Sum(nil))))
		events, err := psp.ParseWebhook(r, body)
		require.NoError(t, err)
		_, err = e.client.RecordWebhook(e.ctx, events[0])
		require.NoError(t, err)
		op, _, err := e.store.Get(e.ctx, e.charge.OperationID)
		require.NoError(t, err)
		require.Equal(t, ledger.StatusManualReview, op.Status)

		rep := e.audit(t)
		require.False(t, rep.Differs(), "the ledger knows: the charge is in review: %+v", rep.Differences)
	})

	t.Run("won", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		du, err := e.fake.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: e.charge.ProviderRef, Amount: 700})
		require.NoError(t, err)
		require.NoError(t, e.fake.SetDisputeStatus(du, "won"))
		rep := e.audit(t)
		require.False(t, rep.Differs(), "%+v", rep.Differences)
		require.Equal(t, 2, rep.Objects)
	})

	t.Run("a later period", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		// Weeks after the charge, a dispute is lost; the period audited is
		// the dispute's, which holds neither the charge nor its refund.
		e.clock.Advance(40 * 24 * time.Hour)
		_, err := e.fake.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: e.charge.ProviderRef, Status: "lost"})
		require.NoError(t, err)
		from := e.clock.Now().Add(-time.Hour)
		e.clock.Advance(time.Second)
		rep, err := e.client.Audit(e.ctx, payonce.AuditParams{From: from, To: e.clock.Now().Add(time.Minute), DryRun: true})
		require.NoError(t, err)
		d := only(t, rep, ledger.FindingStatusDiffers, 1)[0]
		require.Equal(t, e.charge.OperationID, d.OperationID)
		require.Equal(t, payonce.AuditReversed, d.ProviderState)
		require.Equal(t, 1, rep.Objects)
		require.Zero(t, rep.Operations, "the charge was recorded in an earlier period")
	})
}
