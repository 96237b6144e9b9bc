package stripe_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// auditEnv is a real Client with a SQLite ledger on the fake Stripe, a
// charge and a refund of it made through payonce, on one manual clock.
// The fake's clock can run behind the client's (skew), to make an object
// Stripe dates outside the audited period.
type auditEnv struct {
	fake   *mocks.Stripe
	clock  *mocks.ManualClock
	skew   *atomic.Int64 // nanoseconds the fake's clock runs behind
	client *payonce.Client
	store  ledger.Store
	ctx    context.Context
	start  time.Time
	charge payonce.Result
	refund payonce.Result
}

func newAuditEnv(t *testing.T) *auditEnv {
	t.Helper()
	e := &auditEnv{clock: mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), skew: new(atomic.Int64)}
	fakeNow := func() time.Time { return e.clock.Now().Add(-time.Duration(e.skew.Load())) }
	e.fake = mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Clock: fakeNow}})
	t.Cleanup(e.fake.Close)
	p, err := stripe.New(stripe.Config{APIKey: e.fake.APIKey(), BaseURL: e.fake.URL(), Now: e.clock.Now, AuditRate: 1e6})
	require.NoError(t, err)
	e.client, e.store = testkit.NewClient(t, p, e.clock.Now)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	e.ctx, e.start = ctx, e.clock.Now()

	e.charge, err = e.client.Charge(ctx, payonce.ChargeParams{OrderID: "order-1", Amount: 1200, Currency: "USD", PaymentMethod: "pm_card_visa"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, e.charge.Status)
	e.clock.Advance(time.Second)
	e.refund, err = e.client.Refund(ctx, payonce.RefundParams{OrderID: "order-1", RefundSeq: 1, Amount: 500, Currency: "USD", PaymentRef: e.charge.ProviderRef})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, e.refund.Status)
	e.clock.Advance(time.Second)
	return e
}

// audit runs Client.Audit over the period of the test (a minute on either
// side of what it made), checks that the fake saw no request but GETs
// while it ran, and returns the report.
func (e *auditEnv) audit(t *testing.T) payonce.AuditReport {
	t.Helper()
	before := e.fake.Truth()
	rep, err := e.client.Audit(e.ctx, payonce.AuditParams{From: e.start.Add(-time.Minute), To: e.clock.Now().Add(time.Minute), DryRun: true})
	require.NoError(t, err)
	after := e.fake.Truth()
	require.Equal(t, nonGETs(before), nonGETs(after), "the audit sends GETs only: %v", after.Requests)
	require.Greater(t, after.Requests["GET /v1/payment_intents"], before.Requests["GET /v1/payment_intents"])
	require.Greater(t, after.Requests["GET /v1/refunds"], before.Requests["GET /v1/refunds"])
	require.Greater(t, after.Requests["GET /v1/disputes"], before.Requests["GET /v1/disputes"])
	return rep
}

// only checks that the report holds n differences of class and none of
// another, and returns them.
func only(t *testing.T, rep payonce.AuditReport, class ledger.FindingClass, n int) []payonce.AuditDifference {
	t.Helper()
	for c, k := range rep.Counts {
		if c != class {
			require.Zero(t, k, "no %s expected: %+v", c, rep.Differences)
		}
	}
	require.Equal(t, n, rep.Counts[class], "%+v", rep.Differences)
	var out []payonce.AuditDifference
	for _, d := range rep.Differences {
		if d.Class == class {
			out = append(out, d)
		}
	}
	require.Len(t, out, n)
	return out
}

// Client.Audit on the Stripe adapter, end to end: a clean run finds
// nothing, and each change made at Stripe out of band is found as its own
// class, and only it.
func TestAuditEndToEnd(t *testing.T) {
	t.Parallel()

	t.Run("clean", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		rep := e.audit(t)
		require.False(t, rep.Differs(), "%+v", rep.Differences)
		require.Equal(t, 2, rep.Objects, "the charge's PaymentIntent and the refund")
		require.Zero(t, rep.Unattributed)
		require.Equal(t, 2, rep.Operations)
		require.Equal(t, "stripe", rep.Provider)
		require.Contains(t, rep.Directions, "PaymentIntents")
	})

	t.Run("unknown to the ledger", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		pi, err := e.fake.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 3000, Currency: "usd",
			Metadata: map[string]string{"payonce_op": "op-nobody-recorded", "payonce_key": "op-nobody-recorded", "payonce_kind": "charge"}})
		require.NoError(t, err)
		d := only(t, e.audit(t), ledger.FindingUnknownToLedger, 1)[0]
		require.Equal(t, pi, d.ProviderRef)
		require.Equal(t, "op-nobody-recorded", d.OperationID)
		require.Equal(t, payonce.AuditSucceeded, d.ProviderState)
	})

	t.Run("without metadata: counted, no difference", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		_, err := e.fake.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 3000, Currency: "usd"})
		require.NoError(t, err)
		rep := e.audit(t)
		require.False(t, rep.Differs(), "%+v", rep.Differences)
		require.Equal(t, 1, rep.Unattributed)
		require.Equal(t, 3, rep.Objects)
	})

	t.Run("duplicated under the same key", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		op, _, err := e.store.Get(e.ctx, e.charge.OperationID)
		require.NoError(t, err)
		// The operation's first key (generation 0 is its id): an object
		// sent under it that payonce never heard of, as when an answer was
		// lost and the charge went out again.
		pi, err := e.fake.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 1200, Currency: "usd",
			Metadata: map[string]string{"payonce_op": op.ID, "payonce_key": op.ID, "payonce_kind": "charge"}})
		require.NoError(t, err)
		d := only(t, e.audit(t), ledger.FindingDuplicated, 1)[0]
		require.Equal(t, op.ID, d.OperationID)
		require.Contains(t, d.Detail, pi)
		require.Contains(t, d.Detail, e.charge.ProviderRef)
	})

	t.Run("duplicated across key generations", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		// The first attempt's answer is a stored 500: unknown. Past the
		// key window the lookup finds nothing and a person must decide;
		// the operator finds no PaymentIntent and resends under
		// generation 1, which succeeds.
		e.fake.Script(mocks.Match{Method: http.MethodPost, Path: "/v1/payment_intents"}, mocks.FaultStored500)
		params := payonce.ChargeParams{OrderID: "order-resent", Amount: 900, Currency: "USD", PaymentMethod: "pm_card_visa"}
		first := e.clock.Now()
		res, err := e.client.Charge(e.ctx, params)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		gen0Key := res.Key
		e.clock.Advance(25 * time.Hour)
		_, err = e.client.Charge(e.ctx, params)
		require.ErrorIs(t, err, payonce.ErrManualReview)
		op, err := payonce.Resolve(e.ctx, e.store, payonce.ResolveParams{OperationID: res.OperationID, Outcome: ledger.ResolveResend,
			Actor: "alice", Note: "no PaymentIntent in the dashboard", Now: e.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, 1, op.Generation)
		resent, err := e.client.Charge(e.ctx, params)
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, resent.Status)
		require.NotEqual(t, gen0Key, resent.Key)
		// What the operator missed: Stripe had made a PaymentIntent under
		// the first key after all (another integration's retry of it, say).
		gen0, err := e.fake.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 900, Currency: "usd", Created: first,
			Metadata: map[string]string{"payonce_op": res.OperationID, "payonce_key": gen0Key, "payonce_kind": "charge"}})
		require.NoError(t, err)

		d := only(t, e.audit(t), ledger.FindingDuplicated, 1)[0]
		require.Equal(t, res.OperationID, d.OperationID)
		require.Contains(t, d.Detail, gen0)
		require.Contains(t, d.Detail, resent.ProviderRef)
	})

	t.Run("refund failed later, its webhook lost", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		require.NoError(t, e.fake.FailRefundSilently(e.refund.ProviderRef, "expired_or_canceled_card"))
		d := only(t, e.audit(t), ledger.FindingStatusDiffers, 1)[0]
		require.Equal(t, e.refund.OperationID, d.OperationID)
		require.Equal(t, e.refund.ProviderRef, d.ProviderRef)
		require.Equal(t, ledger.StatusSucceeded, d.LedgerStatus)
		require.Equal(t, payonce.AuditFailed, d.ProviderState)
	})

	t.Run("authorization expired at Stripe", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		held, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: "order-held", Amount: 800, Currency: "USD", PaymentMethod: "pm_card_visa", CaptureManual: true})
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, held.Status)
		require.NoError(t, e.fake.ExpireAuthorization(held.ProviderRef))
		d := only(t, e.audit(t), ledger.FindingStatusDiffers, 1)[0]
		require.Equal(t, held.OperationID, d.OperationID)
		require.Equal(t, payonce.AuditCanceled, d.ProviderState)
	})

	t.Run("contradicted amount", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		op, _, err := e.store.Get(e.ctx, e.charge.OperationID)
		require.NoError(t, err)
		// Another amount under the operation's id and key; declined, so it
		// moved no money and is no duplicate: only the amount differs.
		pi, err := e.fake.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 99, Currency: "usd", Status: "requires_payment_method",
			Metadata: map[string]string{"payonce_op": op.ID, "payonce_key": op.ID, "payonce_kind": "charge"}})
		require.NoError(t, err)
		d := only(t, e.audit(t), ledger.FindingContradicted, 1)[0]
		require.Equal(t, pi, d.ProviderRef)
		require.Contains(t, d.Detail, "amount 99, ledger 1200")
	})

	t.Run("missing at the provider", func(t *testing.T) {
		t.Parallel()
		e := newAuditEnv(t)
		// Stripe's clock an hour behind for this charge: it dates the
		// PaymentIntent outside the period (and its margin), while the
		// ledger dates the operation inside it.
		e.skew.Store(int64(time.Hour))
		late, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: "order-skewed", Amount: 700, Currency: "USD", PaymentMethod: "pm_card_visa"})
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, late.Status)
		e.skew.Store(0)
		d := only(t, e.audit(t), ledger.FindingMissingAtProvider, 1)[0]
		require.Equal(t, late.OperationID, d.OperationID)
		require.Empty(t, d.ProviderRef)
	})
}
