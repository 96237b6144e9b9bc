package payonce_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
)

// storedErrorBound is how long, in driven time from the first attempt, a
// charge whose key holds a stored 500 may take to reach review with the
// reconciler's default pacing: the resend that meets the replay, Stripe's
// one-minute search lag, then two lookups 30 s apart.
const storedErrorBound = 5 * time.Minute

// TestStoredErrorReview: a charge whose key holds a stored 500 reaches review
// (stored_error) within minutes of driven time under Stripe's real 24 h key
// window, with the evidence recorded, and never sends again.
func TestStoredErrorReview(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		require.Equal(t, 24*time.Hour, b.psp.Info().KeyTTL, "Stripe's real key window")
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultStored500)
		res, err := b.client.Charge(b.ctx, charge("order-stored", 1500))
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

		r := newReconciler(t, b, nil)
		var op ledger.Operation
		for op.Status != ledger.StatusManualReview {
			require.Less(t, b.clock.Now().Sub(t0), time.Hour, "still %s after an hour", op.Status)
			b.clock.Advance(10 * time.Second)
			_, err := r.RunOnce(b.ctx)
			require.NoError(t, err)
			op, _ = attemptsOf(t, b, res.OperationID)
		}
		took := op.ReviewAt.Sub(t0)
		t.Logf("stored 500 reached review after %v of driven time", took)
		require.LessOrEqual(t, took, storedErrorBound)
		require.Equal(t, ledger.ReviewCodeStoredError, op.ReviewCode)
		require.True(t, strings.HasPrefix(op.ReviewReason, payonce.ReasonStoredError+": 2 lookups found nothing from "), op.ReviewReason)
		require.Contains(t, op.ReviewReason, "stored answer HTTP 500")
		require.Equal(t, 1, b.fake.Truth().Replays, "one resend met the stored 500")
		require.Zero(t, b.chargesOf(t, res.OperationID))
		require.False(t, op.NextCheckAt.IsZero(), "read-only lookups continue in review")

		evs, err := b.store.Events(b.ctx, res.OperationID)
		require.NoError(t, err)
		last := evs[len(evs)-1]
		require.Equal(t, ledger.EventNote, last.Kind)
		require.Contains(t, last.Detail, "2 lookups found nothing")

		// In review, the review path keeps working: lookups read-only, the
		// code kept, nothing sent.
		posts := postsOf(b)
		for range 5 {
			b.clock.Advance(time.Hour)
			_, err := r.RunOnce(b.ctx)
			require.NoError(t, err)
		}
		op, _ = attemptsOf(t, b, res.OperationID)
		require.Equal(t, ledger.StatusManualReview, op.Status)
		require.Equal(t, ledger.ReviewCodeStoredError, op.ReviewCode)
		require.Equal(t, posts, postsOf(b))
	})
}

// storedStep charges p again at the current driven time and returns the
// operation as the ledger holds it then.
func storedStep(t *testing.T, b *bundle, p payonce.ChargeParams, id string) ledger.Operation {
	t.Helper()
	_, _ = b.client.Charge(b.ctx, p)
	op, _ := attemptsOf(t, b, id)
	return op
}

// stored500Replayed charges p with a stored 500 and makes the resend meet
// its replay; it returns the operation id and when the
// replayed attempt ended.
func stored500Replayed(t *testing.T, b *bundle, p payonce.ChargeParams) (string, time.Time) {
	t.Helper()
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultStored500)
	res, err := b.client.Charge(b.ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	replays := b.fake.Truth().Replays
	// Past the lag of the first attempt, and the resend pacing (longer
	// after an earlier generation's attempts): a lookup, a resend, the replay.
	var op ledger.Operation
	for i := 0; b.fake.Truth().Replays == replays; i++ {
		require.Less(t, i, 30, "no resend met the stored 500")
		b.clock.Advance(time.Minute)
		op = storedStep(t, b, p, res.OperationID)
	}
	require.Equal(t, replays+1, b.fake.Truth().Replays)
	require.Equal(t, ledger.StatusUnknown, op.Status, "the lookup right after the replay is inside the lag")
	_, atts := attemptsOf(t, b, res.OperationID)
	lastAtt := atts[len(atts)-1]
	require.True(t, lastAtt.Replayed)
	require.Equal(t, op.Key, lastAtt.Key)
	return res.OperationID, lastAtt.FinishedAt
}

// TestStoredErrorEvidence: the boundary, step by step, with calls: lookups
// inside the lag do not count, one lookup past it is not enough, the second
// is.
func TestStoredErrorEvidence(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		p := charge("order-evidence", 700)
		id, end := stored500Replayed(t, b, p)
		posts := postsOf(b)

		for _, d := range []time.Duration{20 * time.Second, 40 * time.Second} { // inside Stripe's one-minute lag
			b.clock.Set(end.Add(d))
			require.Equal(t, ledger.StatusUnknown, storedStep(t, b, p, id).Status, "a lookup %v after the replay is inside the lag", d)
		}
		b.clock.Set(end.Add(61 * time.Second))
		require.Equal(t, ledger.StatusUnknown, storedStep(t, b, p, id).Status, "one lookup past the lag is not enough: it could be a stale read")
		b.clock.Set(end.Add(90 * time.Second))
		op := storedStep(t, b, p, id)
		require.Equal(t, ledger.StatusManualReview, op.Status)
		require.Equal(t, ledger.ReviewCodeStoredError, op.ReviewCode)
		require.Contains(t, op.ReviewReason, "2 lookups found nothing from "+end.Add(61*time.Second).UTC().Format(time.RFC3339))
		require.Equal(t, posts, postsOf(b), "no resend after the replay")

		_, err := b.client.Charge(b.ctx, p)
		require.ErrorIs(t, err, payonce.ErrManualReview)
	})
}

// TestStoredErrorGenerations: after a resend under a new key, only lookups
// made since the new key's stored error count.
func TestStoredErrorGenerations(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		p := charge("order-generations", 900)
		id, end := stored500Replayed(t, b, p)
		b.clock.Set(end.Add(61 * time.Second))
		storedStep(t, b, p, id)
		b.clock.Set(end.Add(91 * time.Second))
		op := storedStep(t, b, p, id)
		require.Equal(t, ledger.ReviewCodeStoredError, op.ReviewCode)

		// The operator checks the dashboard and resends under a new key;
		// that key, too, meets a stored 500.
		b.clock.Advance(time.Minute)
		op, err := b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: id, Outcome: ledger.ResolveResend,
			Actor: "alice", Note: "nothing in the dashboard"})
		require.NoError(t, err)
		require.Equal(t, 1, op.Generation)
		id2, end2 := stored500Replayed(t, b, p)
		require.Equal(t, id, id2)
		// The first generation's lookups are evidence for its key only: one
		// lookup past the new replay's lag is still one.
		b.clock.Set(end2.Add(61 * time.Second))
		op = storedStep(t, b, p, id)
		require.Equal(t, ledger.StatusUnknown, op.Status, "the earlier generation's lookups must not count for the new key")
		b.clock.Set(end2.Add(91 * time.Second))
		op = storedStep(t, b, p, id)
		require.Equal(t, ledger.StatusManualReview, op.Status)
		require.Equal(t, ledger.ReviewCodeStoredError, op.ReviewCode)
		require.Equal(t, 1, op.Generation)
		require.Contains(t, op.ReviewReason, "from "+end2.Add(61*time.Second).UTC().Format(time.RFC3339))
		require.Zero(t, b.chargesOf(t, id))
	})
}

// TestStoredErrorFailPolicy: with Config.FailStoredErrors and an adapter
// that declares its stored errors final (here Stripe's, wrapped: Stripe
// itself does not, see TestStoredErrorStripeNeverFailed) the same evidence
// records the operation failed, and the service charges the order under a
// new operation.
func TestStoredErrorFailPolicy(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{config: func(c *payonce.Config) {
		c.FailStoredErrors = true
		c.Provider = finalStoredErrors{c.Provider}
	}}, func(t *testing.T, b *bundle) {
		p := charge("order-fail", 1200)
		id, end := stored500Replayed(t, b, p)
		b.clock.Set(end.Add(61 * time.Second))
		require.Equal(t, ledger.StatusUnknown, storedStep(t, b, p, id).Status, "one lookup: not yet, policy or not")
		b.clock.Set(end.Add(91 * time.Second))
		res, err := b.client.Charge(b.ctx, p)
		var de *payonce.DeclinedError
		require.ErrorAs(t, err, &de)
		require.Equal(t, payonce.CodeStoredError, de.Code)
		require.Equal(t, 500, de.HTTPStatus)
		require.True(t, strings.HasPrefix(de.Message, payonce.ReasonNothingMoved+": 2 lookups found nothing"), de.Message)
		require.Equal(t, payonce.ResultFailed, res.Status)
		op, _ := attemptsOf(t, b, id)
		require.Equal(t, ledger.StatusFailed, op.Status)
		require.Zero(t, b.chargesOf(t, id))

		// The same order again answers the recorded failure, sending nothing.
		posts := postsOf(b)
		_, err = b.client.Charge(b.ctx, p)
		require.ErrorAs(t, err, &de)
		require.Equal(t, posts, postsOf(b))

		// A new operation (the service's next payment attempt) charges.
		retry := charge("order-fail#2", 1200)
		res, err = b.client.Charge(b.ctx, retry)
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.Equal(t, 1, b.chargesOf(t, res.OperationID))
	})
}

// TestStoredErrorPolicyNeedsReplay: the policy never fails an operation
// whose key was not answered by a replayed stored error (here the answer
// was lost after Stripe charged): it is resent under the same key, or
// found.
func TestStoredErrorPolicyNeedsReplay(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{config: func(c *payonce.Config) { c.FailStoredErrors = true },
		fake: mocks.StripeOptions{SearchLag: 30 * time.Minute}})
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultDropAfterProcessing)
	p := charge("order-lost", 800)
	res, err := b.client.Charge(b.ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	r := newReconciler(t, b, nil)
	for range 20 {
		b.clock.Advance(30 * time.Second)
		_, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
	}
	op, _ := attemptsOf(t, b, res.OperationID)
	require.Equal(t, ledger.StatusSucceeded, op.Status, "the resend under the same key met the charge")
	require.Equal(t, 1, b.chargesOf(t, res.OperationID))
}

// TestStoredErrorAdyenWaits: Adyen's lookup cannot prove absence, so its
// "not found" is no evidence: a stored 500 waits for its real 31-day key
// window, then goes to review as before, never failed by the policy.
func TestStoredErrorAdyenWaits(t *testing.T) {
	t.Parallel()
	clock := mocks.NewManualClock(t0)
	env := providertest.AdyenEnv(t, providertest.Options{Clock: clock})
	info := env.Provider.Info()
	require.Equal(t, 31*24*time.Hour, info.KeyTTL, "Adyen's real key window")
	require.False(t, info.LookupProvesAbsence)
	store := providertest.NewSQLiteStore(t)
	cfg := providertest.ClientConfig(env.Provider, store, clock.Now)
	cfg.FailStoredErrors = true
	client, err := payonce.New(cfg)
	require.NoError(t, err)
	ctx := t.Context()

	env.Fake.Script(env.Charge, mocks.FaultStored500)
	p := payonce.ChargeParams{OrderID: "order-adyen", Amount: 1000, Currency: "EUR", PaymentMethod: env.GoodMethod, Customer: env.Customer}
	res, err := client.Charge(ctx, p)
	require.Error(t, err)
	r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{client}, Now: clock.Now, Owner: "adyen-test"})
	require.NoError(t, err)
	for range 48 { // two days
		clock.Advance(time.Hour)
		_, err := r.RunOnce(ctx)
		require.NoError(t, err)
	}
	op, atts, err := store.Get(ctx, res.OperationID)
	require.NoError(t, err)
	require.NotEmpty(t, atts)
	require.True(t, atts[0].Replayed, "Adyen's non-transient 500 is the key's stored answer")
	require.Equal(t, ledger.StatusUnknown, op.Status, "Adyen's not found proves nothing: wait for the window (attempts %+v)", atts)
	clock.Advance(30 * 24 * time.Hour)
	for range 3 {
		_, err := r.RunOnce(ctx)
		require.NoError(t, err)
		clock.Advance(time.Hour)
	}
	op, _, err = store.Get(ctx, res.OperationID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusManualReview, op.Status)
	require.Equal(t, ledger.ReviewCodeWindowPassed, op.ReviewCode)
}
