package riverpayonce_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/riverpayonce"
)

// The integration against PostgreSQL: a ledger (ledgerpg) and River's
// tables, each in a scratch schema, one pool, the Stripe fake. Run with
//
//	PAYONCE_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test ./riverpayonce/
//
// Without the variable they skip, unless PAYONCE_REQUIRE_POSTGRES=1.

type pgEnv struct {
	ctx         context.Context
	pool        *pgxpool.Pool
	store       *ledgerpg.Store
	riverSchema string
	clock       *mocks.ManualClock
	psp         *providertest.Env
	client      *payonce.Client
	rec         *payonce.Reconciler
}

func newPGEnv(t *testing.T, o providertest.Options) *pgEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	pool, store := testkit.NewPGLedger(t, ctx)
	e := &pgEnv{ctx: ctx, pool: pool, store: store, riverSchema: testkit.NewSchema(t, pool)}
	// River's own migrations, into the scratch schema.
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: e.riverSchema})
	require.NoError(t, err)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "CREATE TABLE "+e.table("orders")+" (id text PRIMARY KEY)")
	require.NoError(t, err)

	e.clock = mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	o.Clock = e.clock
	e.psp = providertest.StripeEnv(t, o)
	e.client, err = payonce.New(providertest.ClientConfig(e.psp.Provider, store, e.clock.Now))
	require.NoError(t, err)
	e.rec, err = payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{e.client}, Now: e.clock.Now})
	require.NoError(t, err)
	return e
}

func (e *pgEnv) table(name string) string { return pgx.Identifier{e.riverSchema, name}.Sanitize() }

// insertOnly is a River client that only inserts (no workers, not started).
func (e *pgEnv) insertOnly(t *testing.T) *river.Client[pgx.Tx] {
	t.Helper()
	rc, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{Schema: e.riverSchema})
	require.NoError(t, err)
	return rc
}

// worker starts a River client working the reconcile job with w (a Worker
// of the env's Reconciler when nil), on cfg changed as below, and returns
// it with a subscription to finished jobs. It stops when the test ends.
func (e *pgEnv) worker(t *testing.T, cfg river.Config, w river.Worker[riverpayonce.ReconcileArgs]) (*river.Client[pgx.Tx], <-chan *river.Event) {
	t.Helper()
	cfg.Schema = e.riverSchema
	cfg.Workers = river.NewWorkers()
	if w == nil {
		require.NoError(t, riverpayonce.AddWorkers(cfg.Workers, e.rec))
	} else {
		require.NoError(t, river.AddWorkerSafely(cfg.Workers, w))
	}
	cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}}
	cfg.FetchCooldown = 20 * time.Millisecond
	cfg.FetchPollInterval = 50 * time.Millisecond
	cfg.TestOnly = true
	rc, err := river.NewClient(riverpgxv5.New(e.pool), &cfg)
	require.NoError(t, err)
	events, cancel := rc.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	t.Cleanup(cancel)
	require.NoError(t, rc.Start(e.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rc.Stop(ctx))
	})
	return rc, events
}

// order prepares the charge of an order.
func (e *pgEnv) order(t *testing.T, id string) ledger.NewOperation {
	t.Helper()
	op, err := e.client.PrepareCharge(e.ctx, payonce.ChargeParams{OrderID: id, Amount: 1999, Currency: "USD", PaymentMethod: "pm_card_visa"})
	require.NoError(t, err)
	return op
}

// placeOrder writes the order row, records its charge and nudges the
// reconciler in one transaction, committed when commit is true and rolled
// back otherwise.
func (e *pgEnv) placeOrder(t *testing.T, rc *river.Client[pgx.Tx], id string, commit bool) ledger.NewOperation {
	t.Helper()
	op := e.order(t, id)
	tx, err := e.pool.Begin(e.ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(e.ctx)) //nolint:errcheck // a no-op after Commit
	_, err = tx.Exec(e.ctx, "INSERT INTO "+e.table("orders")+" (id) VALUES ($1)", id)
	require.NoError(t, err)
	rec, created, err := e.store.CreateOrGetTx(e.ctx, tx, op, e.clock.Now())
	require.NoError(t, err)
	require.True(t, created)
	// Due at once: the next pass claims it (next_check_at <= its now).
	require.Equal(t, ledger.StatusPending, rec.Status)
	require.False(t, rec.NextCheckAt.After(e.clock.Now()), "recorded due at %v, not later", rec.NextCheckAt)
	require.NoError(t, riverpayonce.InsertNudgeTx(e.ctx, rc, tx))
	if commit {
		require.NoError(t, tx.Commit(e.ctx))
	}
	return op
}

// jobs counts the reconcile jobs by state.
func (e *pgEnv) jobs(t *testing.T) map[string]int {
	t.Helper()
	rows, err := e.pool.Query(e.ctx, "SELECT state::text, count(*) FROM "+e.table("river_job")+" WHERE kind = $1 GROUP BY state", riverpayonce.Kind)
	require.NoError(t, err)
	got := map[string]int{}
	for rows.Next() {
		var state string
		var n int
		require.NoError(t, rows.Scan(&state, &n))
		got[state] = n
	}
	require.NoError(t, rows.Err())
	return got
}

func (e *pgEnv) status(t *testing.T, op ledger.NewOperation) ledger.Status {
	t.Helper()
	got, _, err := e.store.Get(e.ctx, op.ID)
	require.NoError(t, err)
	return got.Status
}

// next returns the next finished reconcile job.
func (e *pgEnv) next(t *testing.T, events <-chan *river.Event) *river.Event {
	t.Helper()
	for {
		select {
		case ev := <-events:
			if ev.Job.Kind == riverpayonce.Kind {
				return ev
			}
		case <-e.ctx.Done():
			t.Fatal("no reconcile job finished")
		}
	}
}

// waitFor polls cond (a state of the database) until it holds.
func (e *pgEnv) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-e.ctx.Done():
			t.Fatalf("still waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestNudgeCommittedSettles(t *testing.T) {
	t.Parallel()
	e := newPGEnv(t, providertest.Options{})
	rc, events := e.worker(t, river.Config{}, nil)
	op := e.placeOrder(t, rc, "order-1", true)

	ev := e.next(t, events)
	require.Equal(t, river.EventKindJobCompleted, ev.Kind)
	require.JSONEq(t, `{"passes":2,"claimed":1,"settled":1,"skipped":0,"errors":0,"transitions":{"pending->succeeded":1}}`, string(ev.Job.Output()))
	require.Equal(t, ledger.StatusSucceeded, e.status(t, op))
	require.Equal(t, 1, e.psp.Fake.Truth().Requests["POST /v1/payment_intents"])
}

func TestNudgeRolledBackLeavesNothing(t *testing.T) {
	t.Parallel()
	e := newPGEnv(t, providertest.Options{})
	op := e.placeOrder(t, e.insertOnly(t), "order-1", false)

	_, _, err := e.store.Get(e.ctx, op.ID)
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.Empty(t, e.jobs(t))
	var orders int
	require.NoError(t, e.pool.QueryRow(e.ctx, "SELECT count(*) FROM "+e.table("orders")).Scan(&orders))
	require.Zero(t, orders)
	rep, err := e.rec.RunOnce(e.ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Claimed)
	require.Zero(t, e.psp.Fake.Truth().Requests["POST /v1/payment_intents"])
}

func TestNudgesCollapseIntoOneJob(t *testing.T) {
	t.Parallel()
	e := newPGEnv(t, providertest.Options{})
	rc := e.insertOnly(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5 {
				e.placeOrder(t, rc, fmt.Sprintf("order-%d-%d", g, i), true)
			}
		})
	}
	wg.Wait()
	require.Equal(t, map[string]int{"available": 1}, e.jobs(t), "20 committed nudges, one job")
}

// TestConcurrentNudgeWaitsForCommit shows the wait InsertNudgeTx documents:
// the second transaction's nudge waits on the first's unique entry until
// the first commits, and then collapses into its job.
func TestConcurrentNudgeWaitsForCommit(t *testing.T) {
	t.Parallel()
	e := newPGEnv(t, providertest.Options{})
	rc := e.insertOnly(t)
	tx1, err := e.pool.Begin(e.ctx)
	require.NoError(t, err)
	defer tx1.Rollback(context.WithoutCancel(e.ctx)) //nolint:errcheck // a no-op after Commit
	require.NoError(t, riverpayonce.InsertNudgeTx(e.ctx, rc, tx1))

	tx2, err := e.pool.Begin(e.ctx)
	require.NoError(t, err)
	defer tx2.Rollback(context.WithoutCancel(e.ctx)) //nolint:errcheck // a no-op after Commit
	var pid2 int
	require.NoError(t, tx2.QueryRow(e.ctx, "SELECT pg_backend_pid()").Scan(&pid2))
	done := make(chan error, 1)
	go func() { done <- riverpayonce.InsertNudgeTx(e.ctx, rc, tx2) }()
	e.waitFor(t, "the second nudge to wait on a lock", func() bool {
		var waiting bool
		require.NoError(t, e.pool.QueryRow(e.ctx,
			"SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1", pid2).Scan(&waiting))
		return waiting
	})
	require.NoError(t, tx1.Commit(e.ctx))
	require.NoError(t, <-done)
	require.NoError(t, tx2.Commit(e.ctx))
	require.Equal(t, map[string]int{"available": 1}, e.jobs(t))
}

// TestNudgesWhileRunningCollapse: nudges while the job runs add nothing;
// once it completed, the next nudge is a new job (a completed job does not
// block nudges, as River's default unique states would for a day).
func TestNudgesWhileRunningCollapse(t *testing.T) {
	t.Parallel()
	// The first charge is held until Release, so the job is still running
	// however slowly the orders below are placed.
	e := newPGEnv(t, providertest.Options{SlowFor: time.Minute})
	e.psp.Fake.Script(e.psp.Charge, mocks.FaultSlow)
	rc, events := e.worker(t, river.Config{}, nil)
	first := e.placeOrder(t, rc, "order-slow", true)
	e.waitFor(t, "the job to run", func() bool { return e.jobs(t)["running"] == 1 })
	for i := range 5 {
		e.placeOrder(t, rc, fmt.Sprintf("order-%d", i), true)
	}
	require.Equal(t, map[string]int{"running": 1}, e.jobs(t), "nudges while running collapse into the running job")
	e.psp.Fake.Release()

	ev := e.next(t, events)
	require.Equal(t, river.EventKindJobCompleted, ev.Kind)
	// The nudged orders committed while the job ran; its later passes
	// settled them (passes until one claims nothing).
	require.Equal(t, ledger.StatusSucceeded, e.status(t, first))
	for i := range 5 {
		require.Equal(t, ledger.StatusSucceeded, e.status(t, e.order(t, fmt.Sprintf("order-%d", i))))
	}

	late := e.placeOrder(t, rc, "order-late", true)
	ev = e.next(t, events)
	require.Equal(t, river.EventKindJobCompleted, ev.Kind)
	require.Equal(t, ledger.StatusSucceeded, e.status(t, late))
	require.Equal(t, map[string]int{"completed": 2}, e.jobs(t))
}

// TestPassOutlastsJobTimeout: a pass longer than the River client's
// JobTimeout (shortened here from its one-minute default) is not cut
// short, because the worker sets its own timeout; the control shows the
// same pass cut short by a worker that inherits the client's.
func TestPassOutlastsJobTimeout(t *testing.T) {
	t.Parallel()
	const clientTimeout = 200 * time.Millisecond
	run := func(t *testing.T, w func(*pgEnv) river.Worker[riverpayonce.ReconcileArgs]) (*pgEnv, ledger.NewOperation, *river.Event) {
		e := newPGEnv(t, providertest.Options{SlowFor: 5 * clientTimeout})
		e.psp.Fake.Script(e.psp.Charge, mocks.FaultSlow)
		rc, events := e.worker(t, river.Config{JobTimeout: clientTimeout}, w(e))
		op := e.placeOrder(t, rc, "order-slow", true)
		return e, op, e.next(t, events)
	}
	t.Run("worker timeout", func(t *testing.T) {
		t.Parallel()
		e, op, ev := run(t, func(*pgEnv) river.Worker[riverpayonce.ReconcileArgs] { return nil })
		require.Equal(t, river.EventKindJobCompleted, ev.Kind, "errors: %v", ev.Job.Errors)
		require.Equal(t, 1, ev.Job.Attempt)
		require.Greater(t, ev.JobStats.RunDuration, clientTimeout)
		require.Equal(t, ledger.StatusSucceeded, e.status(t, op))
	})
	t.Run("control: the client's timeout", func(t *testing.T) {
		t.Parallel()
		e, op, ev := run(t, func(e *pgEnv) river.Worker[riverpayonce.ReconcileArgs] {
			w, err := riverpayonce.NewWorker(riverpayonce.WorkerConfig{Reconciler: e.rec})
			require.NoError(t, err)
			return inheritTimeout{w}
		})
		require.Equal(t, river.EventKindJobFailed, ev.Kind)
		require.Contains(t, ev.Job.Errors[0].Error, "cut short")
		require.NotEqual(t, ledger.StatusSucceeded, e.status(t, op))
	})
}

// inheritTimeout is a Worker that takes the River client's JobTimeout.
type inheritTimeout struct{ *riverpayonce.Worker }

func (inheritTimeout) Timeout(*river.Job[riverpayonce.ReconcileArgs]) time.Duration { return 0 }

// TestPeriodicJobEnqueues: the periodic job runs on start and every
// interval, and settles an operation no nudge announced.
func TestPeriodicJobEnqueues(t *testing.T) {
	t.Parallel()
	e := newPGEnv(t, providertest.Options{})
	op := e.order(t, "order-enqueued")
	_, err := e.client.Enqueue(e.ctx, op)
	require.NoError(t, err)
	pj, err := riverpayonce.PeriodicJob(300 * time.Millisecond)
	require.NoError(t, err)
	_, events := e.worker(t, river.Config{PeriodicJobs: []*river.PeriodicJob{pj}}, nil)

	for range 3 {
		require.Equal(t, river.EventKindJobCompleted, e.next(t, events).Kind)
	}
	require.Equal(t, ledger.StatusSucceeded, e.status(t, op))
	require.GreaterOrEqual(t, e.jobs(t)["completed"], 3)
}

func TestInsertNudgeTxRefusesNil(t *testing.T) {
	t.Parallel()
	testkit.RequireInvalid(t, riverpayonce.InsertNudgeTx(context.Background(), nil, nil), "riverClient")
	rc, err := river.NewClient(riverpgxv5.New(nil), &river.Config{})
	require.NoError(t, err)
	testkit.RequireInvalid(t, riverpayonce.InsertNudgeTx(context.Background(), rc, nil), "tx")
}
