package payonce_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

func newReconciler(t *testing.T, b *bundle, tweak func(*payonce.ReconcilerConfig)) *payonce.Reconciler {
	t.Helper()
	cfg := payonce.ReconcilerConfig{Store: b.store, Clients: []*payonce.Client{b.client}, Now: b.clock.Now, Owner: "reconciler-test"}
	if tweak != nil {
		tweak(&cfg)
	}
	r, err := payonce.NewReconciler(cfg)
	require.NoError(t, err)
	return r
}

// drain runs the reconciler until a pass claims nothing, moving the clock so
// that scheduled checks come due.
func drain(t *testing.T, b *bundle, r *payonce.Reconciler, step time.Duration) payonce.ReconcileReport {
	t.Helper()
	total := payonce.ReconcileReport{Transitions: map[string]int{}}
	for range 50 {
		rep, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
		total.Claimed += rep.Claimed
		total.Settled += rep.Settled
		total.ErrorCount += rep.ErrorCount
		for k, v := range rep.Transitions {
			total.Transitions[k] += v
		}
		require.Empty(t, rep.Errors)
		if rep.Claimed == 0 {
			return total
		}
		b.clock.Advance(step)
	}
	t.Fatal("reconciler did not drain")
	return total
}

func TestEnqueueThenReconcile(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg})
		r := newReconciler(t, b, nil)
		for i := range 30 {
			op, err := b.client.PrepareCharge(charge(orderID("enq", i), 1000+int64(i)))
			require.NoError(t, err)
			res, err := b.client.Enqueue(b.ctx, op)
			require.NoError(t, err)
			require.Equal(t, payonce.ResultPending, res.Status)
		}
		require.Zero(t, postsOf(b), "enqueue sends nothing")

		rep := drain(t, b, r, time.Minute)
		require.Equal(t, 30, rep.Settled)
		require.Equal(t, 30, rep.Transitions["pending->succeeded"])
		require.Equal(t, 30, postsOf(b))

		// The synchronous call derives the same key: a replay, no new charge.
		res, err := b.client.Charge(b.ctx, charge(orderID("enq", 3), 1003))
		require.NoError(t, err)
		require.True(t, res.Replayed)
		require.Equal(t, 1, b.chargesOf(t, res.OperationID))
	})
}

func orderID(prefix string, i int) string { return prefix + "-" + time.Duration(i).String() }

// A worker died after journaling its attempt: once its lease ends the
// reconciler looks the operation up and resends with the same key.
func TestReconcilerTakesOverAfterExpiredLease(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg})
		op, err := b.client.PrepareCharge(charge("order-dead", 4200))
		require.NoError(t, err)
		br, err := b.store.Begin(b.ctx, ledger.BeginParams{Op: op, Owner: "dead-worker", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
		require.NoError(t, err)
		require.NotNil(t, br.Attempt)

		r := newReconciler(t, b, nil)
		rep, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Zero(t, rep.Claimed, "a live lease is left alone")

		b.clock.Advance(2 * time.Minute)
		drain(t, b, r, time.Minute)
		got, atts := attemptsOf(t, b, op.ID)
		require.Equal(t, ledger.StatusSucceeded, got.Status)
		require.Len(t, atts, 2)
		require.Equal(t, atts[0].Key, atts[1].Key)
		require.True(t, atts[0].FinishedAt.IsZero(), "the dead worker's attempt stays unfinished in the journal")
		require.Equal(t, 1, b.chargesOf(t, op.ID))
		events, err := b.store.Events(b.ctx, op.ID)
		require.NoError(t, err)
		require.NotEmpty(t, events)
		require.Equal(t, ledger.EventLookup, events[0].Kind, "the lookup that allowed the resend is on record")
	})
}

// Lookups fail while the key window passes: review. When the provider
// answers again, the review is settled automatically with an audit entry.
func TestReviewSettledByLaterLookup(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{FaultGETs: true},
			// The breaker runs on the real clock; keep it closed so the
			// test is about the ledger's clock only.
			config: func(c *payonce.Config) { c.Breaker.ConsecutiveFailures = 1000 }})
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultGatewayAfter502)
		faults := make([]mocks.FaultKind, 200)
		for i := range faults {
			faults[i] = mocks.FaultGatewayBefore502
		}
		b.fake.Script(mocks.Match{Method: "GET"}, faults...)
		res, err := b.client.Charge(b.ctx, charge("order-dark", 777))
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

		r := newReconciler(t, b, nil)
		rep, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Zero(t, rep.Claimed, "not due before its next check")

		posts := postsOf(b)
		b.clock.Advance(25 * time.Hour)
		rep, err = r.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Transitions["unknown->manual_review"])
		op, _ := attemptsOf(t, b, res.OperationID)
		require.Equal(t, ledger.StatusManualReview, op.Status)
		require.Equal(t, payonce.ReasonWindowPassed, op.ReviewReason)
		require.Equal(t, posts, postsOf(b), "no POST once the window passed")

		b.fake.ClearScripts()
		b.clock.Advance(2 * time.Hour)
		rep, err = r.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Transitions["manual_review->succeeded"], "%+v", rep)
		op, _ = attemptsOf(t, b, res.OperationID)
		require.Equal(t, ledger.StatusSucceeded, op.Status)
		require.NotEmpty(t, op.ProviderRef)
		require.NotNil(t, op.Resolution)
		require.Equal(t, "payonce-reconciler", op.Resolution.Actor)
		events, err := b.store.Events(b.ctx, res.OperationID)
		require.NoError(t, err)
		last := events[len(events)-1]
		require.Equal(t, ledger.EventResolution, last.Kind)
		require.Equal(t, "payonce-reconciler", last.Actor)
		require.Equal(t, posts, postsOf(b))
		require.Equal(t, 1, b.chargesOf(t, res.OperationID))
	})
}

func TestResolveReview(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg})
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultStored500)
		res, err := b.client.Charge(b.ctx, charge("order-review", 555))
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		b.clock.Advance(25 * time.Hour)
		_, err = b.client.Charge(b.ctx, charge("order-review", 555))
		require.ErrorIs(t, err, payonce.ErrManualReview)

		bad := []payonce.ResolveParams{
			{OperationID: res.OperationID, Outcome: ledger.ResolveFailed, Note: "no actor"},
			{OperationID: res.OperationID, Outcome: ledger.ResolveFailed, Actor: "alice"},
			{OperationID: res.OperationID, Outcome: "maybe", Actor: "alice", Note: "n"},
			{OperationID: res.OperationID, Outcome: ledger.ResolveSucceeded, Actor: "alice", Note: "no ref"},
			{Outcome: ledger.ResolveFailed, Actor: "alice", Note: "no id"},
		}
		before, _ := attemptsOf(t, b, res.OperationID)
		for i, p := range bad {
			_, err := payonce.Resolve(b.ctx, b.store, p)
			require.ErrorIs(t, err, payonce.ErrInvalid, "case %d", i)
		}
		after, _ := attemptsOf(t, b, res.OperationID)
		require.Equal(t, before, after, "a refused resolution changes nothing")

		// The operator checked the dashboard: no charge. Resend under a new key.
		op, err := payonce.Resolve(b.ctx, b.store, payonce.ResolveParams{OperationID: res.OperationID,
			Outcome: ledger.ResolveResend, Actor: "alice", Note: "no PaymentIntent in the dashboard", Now: b.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, ledger.StatusPending, op.Status)
		require.Equal(t, 1, op.Generation)
		require.NotEqual(t, res.Key, op.Key)

		_, err = payonce.Resolve(b.ctx, b.store, payonce.ResolveParams{OperationID: res.OperationID,
			Outcome: ledger.ResolveFailed, Actor: "alice", Note: "again"})
		require.ErrorIs(t, err, ledger.ErrNotInReview)

		drain(t, b, newReconciler(t, b, nil), time.Minute)
		got, atts := attemptsOf(t, b, res.OperationID)
		require.Equal(t, ledger.StatusSucceeded, got.Status)
		require.Equal(t, op.Key, atts[len(atts)-1].Key, "the resend carries the new generation's key")
		require.Equal(t, 1, b.chargesOf(t, res.OperationID))
	})
}

func TestCleanupRefusesShortRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	r := newReconciler(t, b, nil)
	_, err := b.client.Charge(b.ctx, charge("order-old", 100))
	require.NoError(t, err)
	_, err = r.Cleanup(b.ctx, time.Hour, 0)
	require.ErrorIs(t, err, ledger.ErrRetentionTooShort)

	b.clock.Advance(24 * time.Hour)
	rep, err := r.Cleanup(b.ctx, 48*time.Hour, 0)
	require.NoError(t, err)
	require.Zero(t, rep.Deleted)
	require.Equal(t, 24*time.Hour, rep.OldestAge, "the oldest final row is reported")

	b.clock.Advance(25 * time.Hour)
	rep, err = r.Cleanup(b.ctx, 48*time.Hour, 0)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted)
	require.Zero(t, rep.OldestAge)
}

func TestReconcilerConfigValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for i, cfg := range []payonce.ReconcilerConfig{
		{Clients: []*payonce.Client{b.client}},
		{Store: b.store},
		{Store: b.store, Clients: []*payonce.Client{b.client, b.client}},
		{Store: b.store, Clients: []*payonce.Client{b.client}, BatchSize: -1},
		{Store: b.store, Clients: []*payonce.Client{b.client}, RatePerSecond: map[string]float64{"adyen": 1}},
	} {
		_, err := payonce.NewReconciler(cfg)
		require.ErrorIs(t, err, payonce.ErrInvalid, "case %d", i)
	}
}
