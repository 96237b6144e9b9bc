package payonce_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/childproc"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// BenchmarkDrain measures how fast reconcilers drain a backlog on
// PostgreSQL against the zero-latency fake Stripe (no faults): 20,000
// operations (100,000 with PAYONCE_LONG=1), bulk-inserted into a fresh
// schema before the timer starts, either pending (each is sent: one POST)
// or unknown with the PaymentIntent known to the ledger and present at the
// fake (each is looked up: one GET). One or four reconcilers (BatchSize 200,
// Concurrency 8 each, distinct lease owners) drain it, either as child
// processes of the test binary (reconcile_child_test.go) or as goroutines
// of the benchmark's own process.
//
// Metrics:
//
//   - ops/s: backlog size over the time from the start signal to the end of
//     the last pass that claimed something (the idle tail is left out; ns/op
//     is one whole drain, tail and process exit included);
//
//   - peak-heap-MB: the highest runtime.MemStats.HeapInuse sampled (every
//     20 ms and after every pass). With processes, the largest of the
//     children's: the reconciler alone. With goroutines, the benchmark
//     process's: the fake Stripe's truth (every PaymentIntent and stored
//     answer, growing with the backlog) is in it too;
//
//   - peak-rss-MB: VmHWM from /proc/<pid>/status: the largest child's, or
//     the benchmark process's since the drain started (reset through
//     /proc/self/clear_refs).
//
//     PAYONCE_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//     go test -run '^$' -bench Drain -benchtime 1x .
func BenchmarkDrain(b *testing.B) {
	n := 20_000
	if os.Getenv("PAYONCE_LONG") == "1" {
		n = 100_000
	}
	for _, kind := range []ledger.Status{ledger.StatusPending, ledger.StatusUnknown} {
		for _, reconcilers := range []int{1, 4} {
			for _, mode := range []string{"processes", "goroutines"} {
				b.Run(fmt.Sprintf("backlog=%s/n=%d/reconcilers=%d/%s", kind, n, reconcilers, mode), func(b *testing.B) {
					benchDrain(b, kind, n, reconcilers, mode == "processes")
				})
			}
		}
	}
}

// drainConfig is the reconcilers' configuration in BenchmarkDrain.
func drainConfig(schema string, fake *mocks.Stripe) reconChildConfig {
	return reconChildConfig{
		PGSchema: schema, PoolConns: 10,
		StripeURL: fake.URL(), StripeKey: fake.APIKey(), KeepAlive: true,
		AttemptTimeout: 5 * time.Second, BatchSize: 200, Concurrency: 8,
		IdleFor: 100 * time.Millisecond, Poll: 10 * time.Millisecond, Deadline: 10 * time.Minute,
		SampleEvery: 20 * time.Millisecond,
	}
}

func benchDrain(b *testing.B, kind ledger.Status, n, reconcilers int, processes bool) {
	url := testkit.URL(b)
	var (
		drained  int
		busy     time.Duration
		peakHeap uint64
		peakRSS  int64
	)
	for range b.N {
		b.StopTimer()
		env := newDrainEnv(b, kind, n)
		cfg := drainConfig(env.schema, env.fake)
		cfg.PGURL = url
		var results []reconChildResult
		if processes {
			cfg.WaitGo = true
			procs := make([]*childproc.Proc, reconcilers)
			for i := range procs {
				procs[i] = startReconChild(b, fmt.Sprintf("drain-%d", i+1), cfg)
			}
			for _, p := range procs {
				waitReady(b, p, time.Minute)
			}
			b.StartTimer()
			for _, p := range procs {
				goLine(b, p)
			}
			for _, p := range procs {
				results = append(results, reconResult(b, p, cfg.Deadline+time.Minute))
			}
			b.StopTimer()
			for _, r := range results {
				peakHeap = max(peakHeap, r.PeakHeapInuse)
				peakRSS = max(peakRSS, r.VmHWMKiB)
			}
		} else {
			results = drainInProcess(b, env, cfg, reconcilers, &peakHeap, &peakRSS)
		}
		var elapsed time.Duration
		claimed := 0
		for _, r := range results {
			require.Zero(b, r.PassErrors, "%v", r.Errors)
			require.Zero(b, r.ErrorCount, "%v", r.Errors)
			require.Equal(b, "idle", r.Stop)
			elapsed = max(elapsed, r.Elapsed)
			claimed += r.Claimed
		}
		require.Equal(b, n, claimed, "each operation claimed once")
		env.verify(b)
		drained += n
		busy += elapsed
	}
	b.ReportMetric(float64(drained)/busy.Seconds(), "ops/s")
	b.ReportMetric(mib(peakHeap), "peak-heap-MB")
	b.ReportMetric(float64(peakRSS)/1024, "peak-rss-MB")
}

// drainInProcess drains env's backlog with reconcilers goroutines of this
// process, each with its own client (as replicas would have) and owner.
func drainInProcess(b *testing.B, env *drainEnv, cfg reconChildConfig, reconcilers int, peakHeap *uint64, peakRSS *int64) []reconChildResult {
	pcfg, err := pgxpool.ParseConfig(cfg.PGURL)
	require.NoError(b, err)
	pcfg.MaxConns = int32(reconcilers * cfg.PoolConns)
	pool := testkit.NewPoolConfig(b, pcfg)
	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: env.schema})
	require.NoError(b, err)
	rs := make([]*payonce.Reconciler, reconcilers)
	for i := range rs {
		psp, err := stripe.New(stripe.Config{APIKey: env.fake.APIKey(), BaseURL: env.fake.URL()})
		require.NoError(b, err)
		client, err := payonce.New(payonce.Config{
			Provider: psp, Store: store, AttemptTimeout: cfg.AttemptTimeout,
			HTTPClient: &http.Client{Transport: benchTransport()},
		})
		require.NoError(b, err)
		rs[i], err = payonce.NewReconciler(payonce.ReconcilerConfig{
			Store: store, Clients: []*payonce.Client{client}, BatchSize: cfg.BatchSize, Concurrency: cfg.Concurrency,
			Owner: fmt.Sprintf("drain-goroutine-%d", i+1),
		})
		require.NoError(b, err)
	}
	ctx := b.Context()
	results := make([]reconChildResult, reconcilers)
	errs := make([]error, reconcilers)
	var mem childproc.HeapPeaks
	childproc.ResetPeakRSS()
	b.StartTimer()
	stop := mem.Run(cfg.SampleEvery)
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			results[i], errs[i] = untilIdle(ctx, r, store, fmt.Sprintf("drain-goroutine-%d", i+1), cfg, &mem, 0)
		})
	}
	wg.Wait()
	stop()
	b.StopTimer()
	for _, err := range errs {
		require.NoError(b, err)
	}
	inuse, _, _ := mem.Peaks()
	*peakHeap = max(*peakHeap, inuse)
	*peakRSS = max(*peakRSS, childproc.VmHWMKiB())
	return results
}

// drainEnv is one backlog ready to drain: a fresh schema and a fresh fake.
type drainEnv struct {
	pool   *pgxpool.Pool
	schema string
	fake   *mocks.Stripe
	n      int
	ctx    context.Context
}

func newDrainEnv(b *testing.B, kind ledger.Status, n int) *drainEnv {
	pool, store := testkit.NewPGLedger(b, b.Context())
	env := &drainEnv{pool: pool, schema: store.Schema(), ctx: b.Context()}
	env.fake = mocks.NewStripe(mocks.StripeOptions{})
	b.Cleanup(env.fake.Close)
	psp, err := stripe.New(stripe.Config{APIKey: env.fake.APIKey(), BaseURL: env.fake.URL()})
	require.NoError(b, err)
	client, err := payonce.New(payonce.Config{Provider: psp, Store: store})
	require.NoError(b, err)
	now := time.Now()
	rows := prepareBacklog(b, client, benchIDs("drain", 1)[0], n, kind, now.Add(-10*time.Minute))
	if kind == ledger.StatusUnknown {
		ptrs := make([]*backlogRow, n)
		for i := range rows {
			ptrs[i] = &rows[i]
		}
		createIntents(b, env.ctx, psp, ptrs, 16)
	}
	insertBacklog(b, env.ctx, pool, env.schema, rows, now.Add(-time.Second))
	env.n = n
	// The rows are not kept: the in-process heap figure holds the fake
	// and the reconcilers, not the test's copy of the backlog.
	return env
}

// verify checks, outside the timer, that every operation succeeded and was
// charged exactly once.
func (env *drainEnv) verify(b *testing.B) {
	n := env.n
	require.Equal(b, map[string]int{"succeeded": n}, statusCounts(b, env.ctx, env.pool, env.schema))
	truth := env.fake.Truth()
	require.Empty(b, truth.Duplicates(stripe.MetaOperation))
	require.Len(b, truth.ChargesBy(stripe.MetaOperation), n)
	require.Len(b, truth.Payments, n)
}
