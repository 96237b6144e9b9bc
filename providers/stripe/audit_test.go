package stripe_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// auditFake is the adapter on a fake Stripe whose clock the test moves.
type auditFake struct {
	f     *mocks.Stripe
	clock *mocks.ManualClock
	P     *stripe.Provider
	HC    *http.Client
}

var auditStart = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func withAuditFake(t *testing.T, mod ...func(*stripe.Config)) auditFake {
	t.Helper()
	clock := mocks.NewManualClock(auditStart)
	f := mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Clock: clock.Now}})
	t.Cleanup(f.Close)
	// The fake answers at once; the rate is tested on its own (a manual
	// clock in audit_internal_test.go).
	cfg := stripe.Config{APIKey: f.APIKey(), BaseURL: f.URL(), AuditRate: 1e6}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := stripe.New(cfg)
	require.NoError(t, err)
	return auditFake{f: f, clock: clock, P: p, HC: f.Client()}
}

// list runs ListObjects and returns what it yielded, by Ref.
func (a auditFake) list(t *testing.T, hc payonce.HTTPDoer, from, to time.Time) (map[string]payonce.AuditObject, error) {
	t.Helper()
	got := map[string]payonce.AuditObject{}
	err := a.P.ListObjects(context.Background(), hc, payonce.AuditQuery{From: from, To: to}, func(o payonce.AuditObject) error {
		if _, dup := got[o.Ref]; dup {
			return fmt.Errorf("%s yielded twice", o.Ref)
		}
		got[o.Ref] = o
		return nil
	})
	return got, err
}

// nonGETs counts the requests the fake saw that were not GETs.
func nonGETs(tr mocks.Truth) int {
	n := 0
	for route, c := range tr.Requests {
		if !strings.HasPrefix(route, "GET ") {
			n += c
		}
	}
	return n
}

// onlyGETs checks that the fake saw no request but GETs after it saw
// posts others (the test's own).
func onlyGETs(t *testing.T, tr mocks.Truth, posts int) {
	t.Helper()
	require.Equal(t, posts, nonGETs(tr), "the audit sends no request but GETs: %v", tr.Requests)
}

// The listing crosses pages of both lists, keeps exactly [From, To) by
// created (an object at From is in, one at To out), and maps each object.
func TestListObjectsOnTheFake(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	from, to := auditStart.Add(-time.Hour), auditStart
	inject := func(spec mocks.StripeIntentSpec) string {
		t.Helper()
		id, err := a.f.InjectPaymentIntent(spec)
		require.NoError(t, err)
		return id
	}
	// 230 PaymentIntents in the period, one second apart from From, with
	// payonce's metadata; one at To and one before From, outside.
	want := map[string]bool{}
	for i := range 230 {
		id := inject(mocks.StripeIntentSpec{Amount: int64(100 + i), Currency: "eur", Created: from.Add(time.Duration(i) * time.Second),
			Metadata: map[string]string{"payonce_op": fmt.Sprintf("op-%d", i), "payonce_key": fmt.Sprintf("k-%d", i), "payonce_kind": "charge"}})
		want[id] = true
	}
	atTo := inject(mocks.StripeIntentSpec{Amount: 1, Currency: "eur", Created: to})
	beforeFrom := inject(mocks.StripeIntentSpec{Amount: 1, Currency: "eur", Created: from.Add(-time.Second)})
	// 120 refunds of one big PaymentIntent made before the period, the
	// first at From, without metadata; one at To.
	big := inject(mocks.StripeIntentSpec{Amount: 1_000_000, Currency: "usd", Created: from.Add(-time.Hour)})
	var firstRefund string
	for i := range 120 {
		id, err := a.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: big, Amount: 10, Created: from.Add(time.Duration(i) * time.Minute / 4)})
		require.NoError(t, err)
		want[id] = true
		if i == 0 {
			firstRefund = id
		}
	}
	refundAtTo, err := a.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: big, Amount: 10, Created: to})
	require.NoError(t, err)

	got, err := a.list(t, a.HC, from, to)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for id := range want {
		require.Contains(t, got, id)
	}
	require.NotContains(t, got, atTo, "an object created at To is outside [From, To)")
	require.NotContains(t, got, beforeFrom)
	require.NotContains(t, got, big)
	require.NotContains(t, got, refundAtTo)

	first := got[firstRefund]
	require.Equal(t, payonce.AuditObject{Ref: firstRefund, Kind: payonce.KindRefund, State: payonce.AuditSucceeded, Status: "succeeded",
		Amount: 10, Currency: "USD", Created: from, PaymentRef: big}, first, "at From: in; no metadata: a refund of no operation")
	for _, o := range got {
		if o.Kind == payonce.KindCharge {
			require.Equal(t, payonce.AuditSucceeded, o.State)
			require.Equal(t, "EUR", o.Currency)
			require.Equal(t, fmt.Sprintf("op-%d", o.Amount-100), o.OperationID)
			require.Equal(t, fmt.Sprintf("k-%d", o.Amount-100), o.Key)
			require.Equal(t, from.Add(time.Duration(o.Amount-100)*time.Second), o.Created)
			require.Empty(t, o.PaymentRef)
		}
	}

	tr := a.f.Truth()
	onlyGETs(t, tr, 0)
	require.Equal(t, 3, tr.Requests["GET /v1/payment_intents"], "230 PaymentIntents: 3 pages of 100")
	require.Equal(t, 2, tr.Requests["GET /v1/refunds"], "120 refunds: 2 pages")
	require.Equal(t, 1, tr.Requests["GET /v1/disputes"], "no disputes: one empty page")
	require.Len(t, tr.Requests, 3)
}

// Objects a payonce client made carry its metadata: operation, key, kind;
// a capture and a cancel make none of their own, and show in their
// PaymentIntent's state.
func TestListObjectsPayonceObjects(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	send := func(r payonce.SendRequest) payonce.Outcome {
		t.Helper()
		req, err := a.P.NewRequest(context.Background(), r)
		require.NoError(t, err)
		resp, err := a.HC.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return a.P.Classify(r, resp.StatusCode, resp.Header, body)
	}
	charge := func(op, method string, manual bool) payonce.Outcome {
		r := payonce.SendRequest{OperationID: op, Key: op + "-key", Request: payonce.Request{Kind: payonce.KindCharge,
			Amount: 1999, Currency: "USD", PaymentMethod: method, CaptureManual: manual, References: []string{"order-" + op}}}
		return send(r)
	}
	paid := charge("op-paid", "pm_card_visa", false)
	require.Equal(t, ledger.OutcomeSuccess, paid.Class)
	declined := charge("op-declined", "pm_card_chargeDeclined", false)
	require.Equal(t, ledger.OutcomeRefused, declined.Class)
	held := charge("op-held", "pm_card_visa", true)
	canceled := charge("op-canceled", "pm_card_visa", true)
	o := send(payonce.SendRequest{OperationID: "op-cancel", Key: "cancel-key", Request: payonce.Request{Kind: payonce.KindCancel, PaymentRef: canceled.ProviderRef}})
	require.Equal(t, ledger.OutcomeSuccess, o.Class)
	expired := charge("op-expired", "pm_card_visa", true)
	require.NoError(t, a.f.ExpireAuthorization(expired.ProviderRef))
	o = send(payonce.SendRequest{OperationID: "op-refund", Key: "refund-key", Request: payonce.Request{Kind: payonce.KindRefund, PaymentRef: paid.ProviderRef, Amount: 500, Currency: "USD"}})
	require.Equal(t, ledger.OutcomeSuccess, o.Class)
	refundRef := o.ProviderRef
	posts := nonGETs(a.f.Truth())
	require.Equal(t, 7, posts, "five charges, a cancel, a refund")

	got, err := a.list(t, a.HC, auditStart, auditStart.Add(time.Second))
	require.NoError(t, err)
	require.Len(t, got, 6, "five PaymentIntents and a refund; the cancel made nothing of its own")
	for ref, want := range map[string]struct {
		op, key string
		kind    payonce.Kind
		state   payonce.AuditState
		status  string
	}{
		paid.ProviderRef:     {"op-paid", "op-paid-key", payonce.KindCharge, payonce.AuditSucceeded, "succeeded"},
		declined.ProviderRef: {"op-declined", "op-declined-key", payonce.KindCharge, payonce.AuditFailed, "requires_payment_method"},
		held.ProviderRef:     {"op-held", "op-held-key", payonce.KindCharge, payonce.AuditSucceeded, "requires_capture"},
		canceled.ProviderRef: {"op-canceled", "op-canceled-key", payonce.KindCharge, payonce.AuditCanceled, "canceled"},
		expired.ProviderRef:  {"op-expired", "op-expired-key", payonce.KindCharge, payonce.AuditCanceled, "canceled"},
		refundRef:            {"op-refund", "refund-key", payonce.KindRefund, payonce.AuditSucceeded, "succeeded"},
	} {
		o := got[ref]
		require.Equal(t, want.op, o.OperationID, ref)
		require.Equal(t, want.key, o.Key, ref)
		require.Equal(t, want.kind, o.Kind, ref)
		require.Equal(t, want.state, o.State, ref)
		require.Equal(t, want.status, o.Status, ref)
		require.Equal(t, "USD", o.Currency)
		require.Equal(t, auditStart, o.Created)
	}
	require.Equal(t, int64(500), got[refundRef].Amount)
	require.Equal(t, paid.ProviderRef, got[refundRef].PaymentRef)
	tr := a.f.Truth()
	onlyGETs(t, tr, posts)
	// The canceled PaymentIntents' latest charges are read to learn that
	// they were authorized first.
	require.Equal(t, 2, tr.Requests["GET /v1/charges/{id}"])
}

// Every status a PaymentIntent can have at Stripe, as the audit states it.
func TestListObjectsIntentStates(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	want := map[string]payonce.AuditState{}
	for _, tc := range []struct {
		spec  mocks.StripeIntentSpec
		state payonce.AuditState
	}{
		{mocks.StripeIntentSpec{Status: "succeeded"}, payonce.AuditSucceeded},
		{mocks.StripeIntentSpec{Status: "requires_capture"}, payonce.AuditSucceeded},
		{mocks.StripeIntentSpec{Status: "processing"}, payonce.AuditProcessing},
		{mocks.StripeIntentSpec{Status: "requires_payment_method"}, payonce.AuditFailed},
		{mocks.StripeIntentSpec{Status: "requires_action"}, payonce.AuditFailed},
		{mocks.StripeIntentSpec{Status: "requires_confirmation"}, payonce.AuditFailed},
		{mocks.StripeIntentSpec{Status: "canceled"}, payonce.AuditFailed},
		{mocks.StripeIntentSpec{Status: "canceled", CancellationReason: "abandoned"}, payonce.AuditFailed},
		{mocks.StripeIntentSpec{Status: "canceled", Authorized: true, CancellationReason: "automatic"}, payonce.AuditCanceled},
		{mocks.StripeIntentSpec{Status: "canceled", Authorized: true, CancellationReason: "requested_by_customer"}, payonce.AuditCanceled},
	} {
		tc.spec.Amount, tc.spec.Currency = 100, "gbp"
		id, err := a.f.InjectPaymentIntent(tc.spec)
		require.NoError(t, err)
		want[id] = tc.state
	}
	got, err := a.list(t, a.HC, auditStart, auditStart.Add(time.Minute))
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for id, state := range want {
		require.Equal(t, state, got[id].State, "%s (%s)", id, got[id].Status)
		require.Empty(t, got[id].OperationID)
		require.Equal(t, payonce.KindCharge, got[id].Kind, "no metadata: a PaymentIntent is a charge")
	}
}

// A refund that failed after it succeeded, its webhook lost, is failed in
// the listing.
func TestListObjectsFailedRefund(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	pi, err := a.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 900, Currency: "usd"})
	require.NoError(t, err)
	re, err := a.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: pi, Metadata: map[string]string{"payonce_op": "op-r", "payonce_kind": "refund"}})
	require.NoError(t, err)
	pending, err := a.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: pi, Amount: 0, Status: "failed"})
	require.NoError(t, err)
	require.NoError(t, a.f.FailRefundSilently(re, "expired_or_canceled_card"))
	got, err := a.list(t, a.HC, auditStart, auditStart.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, payonce.AuditFailed, got[re].State)
	require.Equal(t, "failed", got[re].Status)
	require.Equal(t, "op-r", got[re].OperationID)
	require.Equal(t, payonce.KindRefund, got[re].Kind)
	require.Equal(t, payonce.AuditFailed, got[pending].State)
}

// Bad periods are refused before any request, naming the field.
func TestListObjectsBadQuery(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	for _, tc := range []struct {
		q    payonce.AuditQuery
		want string
	}{
		{payonce.AuditQuery{From: auditStart.Add(time.Hour), To: auditStart}, "AuditQuery.From"},
		{payonce.AuditQuery{From: auditStart, To: auditStart}, "is not before AuditQuery.To"},
		{payonce.AuditQuery{To: auditStart}, "AuditQuery.From is zero"},
		{payonce.AuditQuery{From: auditStart}, "AuditQuery.To is zero"},
		{payonce.AuditQuery{From: auditStart, To: auditStart.Add(time.Hour), Report: strings.NewReader("x")}, "AuditQuery.Report"},
	} {
		err := a.P.ListObjects(context.Background(), a.HC, tc.q, func(payonce.AuditObject) error { return nil })
		require.ErrorContains(t, err, tc.want)
	}
	require.Empty(t, a.f.Truth().Requests)
}

// An error from yield stops the listing at once and is returned.
func TestListObjectsYieldError(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	for range 3 {
		_, err := a.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 1, Currency: "usd"})
		require.NoError(t, err)
	}
	stop := errors.New("enough")
	n := 0
	err := a.P.ListObjects(context.Background(), a.HC, payonce.AuditQuery{From: auditStart, To: auditStart.Add(time.Second)},
		func(payonce.AuditObject) error { n++; return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, n)
	require.Zero(t, a.f.Truth().Requests["GET /v1/refunds"])
}

// A 429 is retried by the client's read path (hc), and the listing goes
// on; without retries it is an error that says so, and nothing is
// yielded for the page.
func TestListObjectsRateLimited(t *testing.T) {
	t.Parallel()
	a := withAuditFake(t)
	_, err := a.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 1, Currency: "usd"})
	require.NoError(t, err)
	period := func() (time.Time, time.Time) { return auditStart, auditStart.Add(time.Second) }

	// As the client's read path: retry a 429 or 5xx (payonce's
	// readRetryPolicy), with no wait in the test.
	retrying := &retryablehttp.Client{HTTPClient: a.HC, RetryMax: 2, Logger: nil,
		CheckRetry: retryablehttp.DefaultRetryPolicy,
		Backoff:    func(_, _ time.Duration, _ int, _ *http.Response) time.Duration { return 0 }}
	a.f.Script(mocks.Match{Method: "GET", Path: "/v1/payment_intents"}, mocks.FaultRateLimit429)
	from, to := period()
	got, err := a.list(t, retrying.StandardClient(), from, to)
	require.NoError(t, err)
	require.Len(t, got, 1)
	tr := a.f.Truth()
	require.Equal(t, 1, tr.Faults[mocks.FaultRateLimit429])
	require.Equal(t, 2, tr.Requests["GET /v1/payment_intents"], "the 429, then the page")

	a.f.Script(mocks.Match{Method: "GET", Path: "/v1/refunds"}, mocks.FaultRateLimit429)
	got, err = a.list(t, a.HC, from, to)
	var ae *stripe.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusTooManyRequests, ae.HTTPStatus)
	require.True(t, ae.Temporary())
	require.Equal(t, "/v1/refunds", ae.Path)
	require.Len(t, got, 1, "the PaymentIntents were listed before the refunds failed")
	onlyGETs(t, a.f.Truth(), 0)
}

// The request shapes: created[gte] and created[lt] rounded up to whole
// seconds, limit=100, starting_after the last id of a page with has_more.
func TestListObjectsRequestShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	from := time.Date(2026, 3, 1, 11, 0, 0, 500_000_000, time.UTC) // rounds up
	to := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)             // whole
	gte, lt := "1772362801", "1772366400"
	page := func(ids ...string) string {
		var items []string
		for _, id := range ids {
			items = append(items, piObj(id, "succeeded", "amount_received", 1999, "created", 1772362900))
		}
		return `{"object":"list","has_more":` + fmt.Sprint(len(ids) > 1) + `,"data":[` + strings.Join(items, ",") + `]}`
	}
	b.MT.RegisterResponderWithQuery(http.MethodGet, base+"/v1/payment_intents",
		map[string]string{"created[gte]": gte, "created[lt]": lt, "limit": "100"},
		httpmock.NewStringResponder(200, page("pi_a", "pi_b")))
	b.MT.RegisterResponderWithQuery(http.MethodGet, base+"/v1/payment_intents",
		map[string]string{"created[gte]": gte, "created[lt]": lt, "limit": "100", "starting_after": "pi_b"},
		httpmock.NewStringResponder(200, page("pi_c")))
	b.MT.RegisterResponderWithQuery(http.MethodGet, base+"/v1/refunds",
		map[string]string{"created[gte]": gte, "created[lt]": lt, "limit": "100"},
		httpmock.NewStringResponder(200, `{"object":"list","has_more":false,"data":[]}`))
	b.MT.RegisterResponderWithQuery(http.MethodGet, base+"/v1/disputes",
		map[string]string{"created[gte]": gte, "created[lt]": lt, "limit": "100", "expand[]": "data.payment_intent"},
		httpmock.NewStringResponder(200, `{"object":"list","has_more":false,"data":[]}`))
	var refs []string
	err := b.P.ListObjects(context.Background(), b.HC, payonce.AuditQuery{From: from, To: to}, func(o payonce.AuditObject) error {
		refs = append(refs, o.Ref)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"pi_a", "pi_b", "pi_c"}, refs)
	require.Equal(t, 4, b.MT.GetTotalCallCount())
}

// AuditInfo: charges and refunds are listed, captures and cancels are not
// objects of their own.
func TestAuditInfo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var _ payonce.AuditLister = b.P
	info := b.P.AuditInfo()
	require.Equal(t, []payonce.Kind{payonce.KindCharge, payonce.KindRefund}, info.ListedKinds)
	require.False(t, info.ByLookup)
	require.Equal(t, stripe.DefaultAuditMargin, info.Margin)
	require.Contains(t, info.Directions, "Captures and cancels create no object")
	require.Contains(t, info.Directions, "GET /v1/disputes")
}
