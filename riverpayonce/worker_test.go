package riverpayonce

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/providertest"
)

// The loop of one job, on a SQLite ledger and the Stripe fake: these tests
// need no database server.

// loopEnv is a client against the Stripe fake, n charges enqueued (not
// sent), and a Reconciler claiming batch operations per pass, whose Store
// is wrapped by wrap when set.
type loopEnv struct {
	*testkit.E2E
	ops []ledger.NewOperation
	rec *payonce.Reconciler
}

func newLoopEnv(t *testing.T, n, batch int, wrap func(ledger.Store) ledger.Store) *loopEnv {
	t.Helper()
	e := &loopEnv{E2E: testkit.NewE2E(t, providertest.StripeEnv)}
	for i := range n {
		op, err := e.Client.PrepareCharge(e.Ctx, payonce.ChargeParams{
			OrderID: fmt.Sprintf("order-%d", i), Amount: 1999, Currency: "USD", PaymentMethod: "pm_card_visa"})
		require.NoError(t, err)
		_, err = e.Client.Enqueue(e.Ctx, op)
		require.NoError(t, err)
		e.ops = append(e.ops, op)
	}
	store := e.Store
	if wrap != nil {
		store = wrap(store)
	}
	rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{e.Client},
		BatchSize: batch, Now: e.Clock.Now})
	require.NoError(t, err)
	e.rec = rec
	return e
}

func (e *loopEnv) worker(t *testing.T, cfg WorkerConfig) *Worker {
	t.Helper()
	cfg.Reconciler = e.rec
	w, err := NewWorker(cfg)
	require.NoError(t, err)
	return w
}

// statuses counts the enqueued operations by status.
func (e *loopEnv) statuses(t *testing.T) map[ledger.Status]int {
	t.Helper()
	got := map[ledger.Status]int{}
	for _, op := range e.ops {
		rec, _, err := e.Store.Get(e.Ctx, op.ID)
		require.NoError(t, err)
		got[rec.Status]++
	}
	return got
}

func TestRunPassesUntilOneClaimsNothing(t *testing.T) {
	t.Parallel()
	e := newLoopEnv(t, 5, 2, nil)
	sum, err := e.worker(t, WorkerConfig{}).run(e.Ctx)
	require.NoError(t, err)
	// 2 + 2 + 1, then the pass that finds the ledger idle.
	require.Equal(t, Summary{Passes: 4, Claimed: 5, Settled: 5, Transitions: map[string]int{"pending->succeeded": 5}}, sum)
	require.Equal(t, map[ledger.Status]int{ledger.StatusSucceeded: 5}, e.statuses(t))
	require.Equal(t, 5, e.Posts("/v1/payment_intents"))
}

func TestRunStopsAtMaxPasses(t *testing.T) {
	t.Parallel()
	e := newLoopEnv(t, 5, 1, nil)
	sum, err := e.worker(t, WorkerConfig{MaxPasses: 3}).run(e.Ctx)
	require.NoError(t, err)
	require.Equal(t, 3, sum.Passes)
	require.Equal(t, 3, sum.Claimed)
	require.Equal(t, map[ledger.Status]int{ledger.StatusSucceeded: 3, ledger.StatusPending: 2}, e.statuses(t),
		"what one job leaves stays due for the next")
}

// TestRunStartsNoPassPastTimeout drives the worker's clock: every reading
// is two minutes after the previous one, so each pass takes two minutes.
// Readings: start 0 (deadline 10m); pass 1 from 2 to 4; pass 2 from 6 to
// 8; pass 3 would start at 10 and end at 12, past the deadline.
func TestRunStartsNoPassPastTimeout(t *testing.T) {
	t.Parallel()
	e := newLoopEnv(t, 5, 1, nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	readings := 0
	now := func() time.Time { readings++; return t0.Add(time.Duration(readings-1) * 2 * time.Minute) }
	sum, err := e.worker(t, WorkerConfig{Timeout: 10 * time.Minute, Now: now}).run(e.Ctx)
	require.NoError(t, err)
	require.Equal(t, 2, sum.Passes)
	require.Equal(t, map[ledger.Status]int{ledger.StatusSucceeded: 2, ledger.StatusPending: 3}, e.statuses(t))
}

// failingClaims is a ledger whose ClaimDue fails, or cancels the pass's
// context once it has claimed.
type failingClaims struct {
	ledger.Store
	err    error
	cancel context.CancelFunc
}

func (s *failingClaims) ClaimDue(ctx context.Context, p ledger.ClaimDueParams) ([]ledger.Operation, error) {
	if s.err != nil {
		return nil, s.err
	}
	ops, err := s.Store.ClaimDue(ctx, p)
	s.cancel()
	return ops, err
}

func TestRunClaimFailureFailsTheJob(t *testing.T) {
	t.Parallel()
	down := errors.New("connection refused")
	e := newLoopEnv(t, 1, 10, func(s ledger.Store) ledger.Store { return &failingClaims{Store: s, err: down} })
	w := e.worker(t, WorkerConfig{})
	sum, err := w.run(e.Ctx)
	require.ErrorIs(t, err, down)
	require.Equal(t, 1, sum.Passes)
	require.Equal(t, map[ledger.Status]int{ledger.StatusPending: 1}, e.statuses(t))

	// Work reports it to River as the job's error, whatever RecordOutput
	// says outside a River client.
	err = w.Work(e.Ctx, &river.Job[ReconcileArgs]{JobRow: &rivertype.JobRow{ID: 1, Attempt: 1}})
	require.ErrorIs(t, err, down)
}

func TestRunCutShortFailsTheJob(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newLoopEnv(t, 3, 10, func(s ledger.Store) ledger.Store { return &failingClaims{Store: s, cancel: cancel} })
	sum, err := e.worker(t, WorkerConfig{}).run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "reconcile pass 1 cut short")
	require.Equal(t, 1, sum.Passes)
	require.Equal(t, 3, sum.Claimed)
	require.Zero(t, e.Posts("/v1/payment_intents"), "nothing is sent once the pass's context ended")
}

func TestNewWorkerRefusesBadConfig(t *testing.T) {
	t.Parallel()
	rec := newLoopEnv(t, 0, 1, nil).rec
	cases := []struct {
		name  string
		cfg   WorkerConfig
		field string
		hint  string
	}{
		{"no reconciler", WorkerConfig{}, "WorkerConfig.Reconciler", "payonce.NewReconciler"},
		{"no timeout", WorkerConfig{Reconciler: rec, Timeout: -1}, "WorkerConfig.Timeout", "never rescued"},
		{"negative passes", WorkerConfig{Reconciler: rec, MaxPasses: -1}, "WorkerConfig.MaxPasses", "must be > 0"},
		{"negative retry delay", WorkerConfig{Reconciler: rec, MaxRetryDelay: -time.Second}, "WorkerConfig.MaxRetryDelay", "must be > 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWorker(tc.cfg)
			require.Nil(t, w)
			testkit.RequireInvalid(t, err, tc.field)
			require.ErrorContains(t, err, tc.hint)
		})
	}
}

func TestAddWorkers(t *testing.T) {
	t.Parallel()
	rec := newLoopEnv(t, 0, 1, nil).rec
	testkit.RequireInvalid(t, AddWorkers(nil, rec), "workers")
	workers := river.NewWorkers()
	testkit.RequireInvalid(t, AddWorkers(workers, nil), "WorkerConfig.Reconciler")
	require.NoError(t, AddWorkers(workers, rec))
	require.ErrorContains(t, AddWorkers(workers, rec), "registering the payonce_reconcile worker")
}

func TestTimeoutAndRetryDelay(t *testing.T) {
	t.Parallel()
	rec := newLoopEnv(t, 0, 1, nil).rec
	w, err := NewWorker(WorkerConfig{Reconciler: rec})
	require.NoError(t, err)
	require.Equal(t, DefaultTimeout, w.Timeout(nil), "River's one-minute default is overridden")
	w, err = NewWorker(WorkerConfig{Reconciler: rec, Timeout: time.Hour, MaxRetryDelay: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, time.Hour, w.Timeout(nil))

	// After ten failures River's own backoff is 11^4 s (about 4 h).
	before := time.Now()
	late := w.NextRetry(&river.Job[ReconcileArgs]{JobRow: &rivertype.JobRow{Attempt: 11, Errors: make([]rivertype.AttemptError, 10)}})
	require.False(t, late.Before(before.Add(30*time.Second)))
	require.False(t, late.After(time.Now().Add(30*time.Second)), "capped at MaxRetryDelay")
	// The first retry keeps River's (about a second, jittered).
	first := w.NextRetry(&river.Job[ReconcileArgs]{JobRow: &rivertype.JobRow{Attempt: 1}})
	require.True(t, first.Before(time.Now().Add(10*time.Second)))
}

func TestUniqueStates(t *testing.T) {
	t.Parallel()
	opts := ReconcileArgs{}.InsertOpts()
	require.False(t, opts.UniqueOpts.ByArgs, "every reconcile job drains the whole ledger")
	require.ElementsMatch(t, []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateScheduled, rivertype.JobStateRetryable,
	}, opts.UniqueOpts.ByState, "River's required states and retryable; not completed, which would block nudges for a day")
}

func TestPeriodicJobRefusesBadInterval(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, -time.Second} {
		j, err := PeriodicJob(d)
		require.Nil(t, j)
		testkit.RequireInvalid(t, err, "interval")
	}
	j, err := PeriodicJob(time.Minute)
	require.NoError(t, err)
	require.NotNil(t, j)
}
