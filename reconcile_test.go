package payonce_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

func TestEnqueueThenReconcile(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		r := newReconciler(t, b, nil)
		for i := range 30 {
			op, err := b.client.PrepareCharge(b.ctx, charge(orderID("enq", i), 1000+int64(i)))
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

// A worker died after journaling its attempt: once its lease ends the
// reconciler looks the operation up and resends with the same key.
func TestReconcilerTakesOverAfterExpiredLease(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		op, err := b.client.PrepareCharge(b.ctx, charge("order-dead", 4200))
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
	eachSetup(t, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{FaultGETs: true}},
		// The breaker runs on the real clock; keep it closed so the
		// test is about the ledger's clock only.
		config: func(c *payonce.Config) { c.Breaker.ConsecutiveFailures = 1000 }}, func(t *testing.T, b *bundle) {
		res := chargeLostWhileLookupsFail(t, b, charge("order-dark", 777), 200)

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
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
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

// Regression tests for money holes an adversarial review confirmed. Each
// failed before its fix.

// ownerSpy records the lease owners the reconciler claims with.
type ownerSpy struct {
	ledger.Store
	mu     sync.Mutex
	owners []string
}

func (s *ownerSpy) ClaimDue(ctx context.Context, p ledger.ClaimDueParams) ([]ledger.Operation, error) {
	s.mu.Lock()
	s.owners = append(s.owners, p.Owner)
	s.mu.Unlock()
	return s.Store.ClaimDue(ctx, p)
}

// Passes of one Reconciler that run at once (Run beside a manual RunOnce)
// must not share a lease owner: a lease that one pass lost to the other
// would still look like its own.
func TestReconcilerPassesHaveTheirOwnOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	spy := &ownerSpy{Store: b.store}
	r := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.Store = spy; c.Owner = "orders-api" })
	other := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.Store = spy; c.Owner = "orders-api" })
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.RunOnce(b.ctx)
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	_, err := other.RunOnce(b.ctx)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, o := range spy.owners {
		require.False(t, seen[o], "owner %q used by two passes", o)
		seen[o] = true
		require.Contains(t, o, "orders-api/", "the configured owner stays readable")
	}
	require.Len(t, seen, 5)
}

// Resends of one operation across calls and reconciler passes back off, so
// that no operation is sent more than a handful of times in its window,
// whatever the faults.
func TestResendsAcrossPassesBackOff(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{config: func(c *payonce.Config) { c.CheckInterval = 30 * time.Second }})
	// Never processed, always "maybe sent".
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, slices.Repeat([]mocks.FaultKind{mocks.FaultGatewayBefore502}, 200)...)
	res, err := b.client.Charge(b.ctx, charge("order-backoff", 1500))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	r := newReconciler(t, b, nil)
	for range 26 * 60 / 2 { // a pass every 2 minutes for 26 h: past the window
		b.clock.Advance(2 * time.Minute)
		_, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
	}
	op, atts := attemptsOf(t, b, res.OperationID)
	require.Equal(t, ledger.StatusManualReview, op.Status)
	require.LessOrEqual(t, len(atts), 12, "resends back off across passes")
	t.Logf("attempts in 24 h of constant maybe-sent faults: %d", len(atts))
}

// sendAs posts one request to the fake exactly as an attempt under key
// would, bypassing the client: what an earlier generation's attempt left at
// the provider.
func sendAs(t *testing.T, b *bundle, opID, key string, req payonce.Request) {
	t.Helper()
	hr, err := b.psp.NewRequest(b.ctx, payonce.SendRequest{OperationID: opID, Key: key, Request: req})
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
}

// inReview records an operation in review by hand, with ref as its
// provider reference, as if an earlier answer had named that object.
func inReview(t *testing.T, b *bundle, p payonce.ChargeParams, ref string, code ledger.ReviewCode, reason string) ledger.Operation {
	t.Helper()
	n, err := b.client.PrepareCharge(b.ctx, p)
	require.NoError(t, err)
	now := b.clock.Now()
	br, err := b.store.Begin(b.ctx, ledger.BeginParams{Op: n, Owner: "test", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	op, err := b.store.Finish(b.ctx, ledger.FinishParams{ID: n.ID, Owner: "test", Now: now, From: ledger.StatusInFlight,
		To: ledger.StatusManualReview, ReviewCode: code, ReviewReason: reason, ProviderRef: ref,
		Attempt: &ledger.AttemptOutcome{Number: br.Attempt.Number, Class: ledger.OutcomeMaybeSent}})
	require.NoError(t, err)
	return op
}

// After an operator's resend, the new key generation starts clean and its
// lookups see every generation's objects: the old generation's failed
// PaymentIntent must not make the new one's charge read as failed.
func TestResendAfterReviewSeesEveryGeneration(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{HangFor: 10 * time.Second}},
		config: func(c *payonce.Config) { c.AttemptTimeout = 300 * time.Millisecond }}, func(t *testing.T, b *bundle) {
		p := charge("order-gen", 2500)
		n, err := b.client.PrepareCharge(b.ctx, p)
		require.NoError(t, err)
		// Generation 0's request reached Stripe and was declined.
		declined, err := payonce.ParseRequest(n.Request)
		require.NoError(t, err)
		declined.PaymentMethod = "pm_card_chargeDeclined"
		sendAs(t, b, n.ID, n.Key, declined)
		failedPI := b.fake.Truth().Payments[0].ID
		op := inReview(t, b, p, failedPI, ledger.ReviewCodeProcessing, payonce.ReasonProcessing)
		b.clock.Advance(2 * time.Minute) // past the search lag

		op, err = b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveResend,
			Actor: "alice", Note: "declined; the customer topped up", Now: b.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, 1, op.Generation)
		require.Empty(t, op.ProviderRef, "the new generation does not inherit the old object")
		events, err := b.store.Events(b.ctx, op.ID)
		require.NoError(t, err)
		require.Contains(t, events[len(events)-1].Detail, failedPI, "the old reference stays in the history")

		// Generation 1 charges, and its answer is lost.
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultHangAfterProcessing)
		res, err := b.client.Charge(b.ctx, p)
		if errors.Is(err, payonce.ErrOutcomeUnknown) {
			b.clock.Advance(2 * time.Minute)
			res, err = b.client.Charge(b.ctx, p)
		}
		require.NoError(t, err, "the new generation's PaymentIntent succeeded")
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.NotEqual(t, failedPI, res.ProviderRef)
		require.Equal(t, 1, b.chargesOf(t, op.ID), "one paid")
		require.Equal(t, 2, b.fake.Truth().PaymentsBy(stripe.MetaOperation)[op.ID], "one declined, one paid")
	})
}

// A resend under a new key is refused while an earlier key's object
// succeeded (or the review says the money moved twice): a new key would
// charge again.
func TestResolveResendRefusedWhenAnEarlierObjectSucceeded(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	p := charge("order-paid", 1200)
	n, err := b.client.PrepareCharge(b.ctx, p)
	require.NoError(t, err)
	req, err := payonce.ParseRequest(n.Request)
	require.NoError(t, err)
	op := inReview(t, b, p, "", ledger.ReviewCodeWindowPassed, payonce.ReasonWindowPassed)
	sendAs(t, b, n.ID, n.Key, req) // the lost attempt did charge
	b.clock.Advance(2 * time.Minute)

	_, err = b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveResend,
		Actor: "alice", Note: "looks unpaid", Now: b.clock.Now()})
	require.ErrorIs(t, err, payonce.ErrResendRefused)
	require.ErrorContains(t, err, "succeeded")
	got, _ := attemptsOf(t, b, op.ID)
	require.Equal(t, ledger.StatusManualReview, got.Status, "a refused resolution changes nothing")
	require.Equal(t, 0, got.Generation)

	// The operator resolves it as succeeded instead.
	pi := b.fake.Truth().Payments[0].ID
	got, err = b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveSucceeded,
		Actor: "alice", Note: "paid", ProviderRef: pi, Now: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, got.Status)

	// Reason "duplicated" refuses a resend even without asking Stripe.
	dup := inReview(t, b, charge("order-dup", 1300), "", ledger.ReviewCodeDuplicated, payonce.ReasonDuplicated)
	for _, resolve := range []func() error{
		func() error {
			_, err := payonce.Resolve(b.ctx, b.store, payonce.ResolveParams{OperationID: dup.ID, Outcome: ledger.ResolveResend, Actor: "a", Note: "n"})
			return err
		},
		func() error {
			_, err := b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: dup.ID, Outcome: ledger.ResolveResend, Actor: "a", Note: "n"})
			return err
		},
	} {
		err := resolve()
		require.ErrorIs(t, err, payonce.ErrResendRefused)
		require.ErrorContains(t, err, "more than one object")
	}
}

// Lookups that fail refuse a resend: only the provider's positive word
// that no earlier key moved money allows a new key.
func TestResolveResendRefusedWhenTheProviderCannotBeAsked(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	op := inReview(t, b, charge("order-down", 1400), "", ledger.ReviewCodeWindowPassed, payonce.ReasonWindowPassed)
	b.clock.Advance(2 * time.Minute)
	b.fake.Script(mocks.Match{Method: "GET", Path: "/v1/payment_intents/search"},
		mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502)
	_, err := b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveResend, Actor: "a", Note: "n"})
	require.ErrorIs(t, err, payonce.ErrResendRefused)
	require.ErrorContains(t, err, "could not be asked")
}

// A late duplicate call after Cleanup (a redelivered message, a client
// retry a month later) gets the recorded outcome from the tombstone and
// sends nothing: the provider forgot the key long ago, so a new POST would
// be a second charge.
func TestLateCallAfterCleanupSendsNothing(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		first, err := b.client.Charge(b.ctx, charge("order-late", 4200))
		require.NoError(t, err)
		b.clock.Advance(31 * 24 * time.Hour)
		r := newReconciler(t, b, nil)
		rep, err := r.Cleanup(b.ctx, 30*24*time.Hour, 100)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Deleted)
		require.Equal(t, 1, rep.Tombstoned)
		require.Equal(t, 1, rep.Tombstones)

		posts := postsOf(b)
		again, err := b.client.Charge(b.ctx, charge("order-late", 4200))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, again.Status)
		require.True(t, again.Replayed)
		require.Equal(t, first.ProviderRef, again.ProviderRef)
		require.Equal(t, posts, postsOf(b), "the tombstone answers; nothing is sent")
		require.Equal(t, 1, b.chargesOf(t, first.OperationID))

		n, err := b.client.PrepareCharge(b.ctx, charge("order-late", 4200))
		require.NoError(t, err)
		got, err := b.client.Enqueue(b.ctx, n)
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, got.Status, "enqueueing it again records nothing")

		_, err = b.client.Charge(b.ctx, charge("order-late", 9999))
		require.ErrorIs(t, err, payonce.ErrFingerprintMismatch, "the tombstone keeps the fingerprint")

		_, err = payonce.NewReconciler(payonce.ReconcilerConfig{Store: b.store, Clients: []*payonce.Client{b.client}, TombstoneRetention: -time.Hour})
		require.ErrorIs(t, err, payonce.ErrInvalid)
		purger := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.TombstoneRetention = 60 * 24 * time.Hour })
		rep, err = purger.Cleanup(b.ctx, 30*24*time.Hour, 100)
		require.NoError(t, err)
		require.Zero(t, rep.TombstonesPurged, "kept for 60 days after the operation finished")
		b.clock.Advance(30 * 24 * time.Hour)
		rep, err = purger.Cleanup(b.ctx, 30*24*time.Hour, 100)
		require.NoError(t, err)
		require.Equal(t, 1, rep.TombstonesPurged)
		require.Zero(t, rep.Tombstones)
	})
}
