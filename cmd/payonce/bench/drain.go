package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/childproc"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// The drain: a backlog of pending operations bulk-inserted into a fresh
// PostgreSQL schema, settled by reconcilers (goroutines of this process,
// each with its own client and lease owner, as replicas would have) against
// a fake Stripe served by a child process. The fake keeps every object it
// creates, so its memory grows with the backlog; in a child process it
// stays out of this process's heap and VmHWM, which are then the
// reconcilers' (with the pgx pool and this program's small state).

const (
	fakeChildEnv   = "PAYONCE_BENCH_FAKE_CHILD"
	fakeReadyLine  = "PAYONCE_BENCH_FAKE_READY"
	fakeTruthLine  = "PAYONCE_BENCH_FAKE_TRUTH"
	drainBatchSize = 200
	drainWorkers   = 8 // Concurrency of each reconciler
	drainPoolConns = 10
)

// fakeTruth is the child's summary of what its fake did.
type fakeTruth struct {
	Payments   int   `json:"payments"`
	Operations int   `json:"operations"`
	Duplicates int   `json:"duplicates"`
	VmHWMKiB   int64 `json:"vm_hwm_kib"`
}

// fakeChildMain serves a fake Stripe until stdin closes. It prints
// fakeReadyLine with the URL and API key, and answers each "truth" line on
// stdin with fakeTruthLine and a fakeTruth as JSON.
func fakeChildMain() int {
	fake := mocks.NewStripe(mocks.StripeOptions{})
	defer fake.Close()
	fmt.Println(fakeReadyLine, fake.URL(), fake.APIKey())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() != "truth" {
			continue
		}
		t := fake.Truth()
		byOp := t.ChargesBy(stripe.MetaOperation)
		ft := fakeTruth{Payments: len(t.Payments), Operations: len(byOp), VmHWMKiB: childproc.VmHWMKiB()}
		for _, n := range byOp {
			if n > 1 {
				ft.Duplicates++
			}
		}
		line, _ := json.Marshal(ft)
		fmt.Println(fakeTruthLine, string(line))
	}
	return 0
}

// fakeChild is a running child serving a fake Stripe.
type fakeChild struct {
	proc   *childproc.Proc
	url    string
	apiKey string
}

// childWait bounds each exchange with the fake child.
const childWait = 2 * time.Minute

func startFakeChild(ctx context.Context) (*fakeChild, error) {
	proc, err := childproc.Start(ctx, childproc.Spec{Name: "fake Stripe child", Env: []string{fakeChildEnv + "=1"}, Stderr: os.Stderr})
	if err != nil {
		return nil, err
	}
	c := &fakeChild{proc: proc}
	line, err := proc.WaitLine(fakeReadyLine+" ", childWait)
	f := strings.Fields(strings.TrimPrefix(line, fakeReadyLine+" "))
	if err != nil || len(f) != 2 {
		c.stop()
		return nil, fmt.Errorf("fake Stripe child: no ready line (%v)", err)
	}
	c.url, c.apiKey = f[0], f[1]
	return c, nil
}

func (c *fakeChild) truth() (fakeTruth, error) {
	line, err := c.proc.Ask("truth", fakeTruthLine+" ", childWait)
	f := strings.Fields(strings.TrimPrefix(line, fakeTruthLine+" "))
	if err != nil || len(f) != 1 {
		return fakeTruth{}, fmt.Errorf("fake Stripe child: no truth line (%v)", err)
	}
	var t fakeTruth
	return t, json.Unmarshal([]byte(f[0]), &t)
}

// stop closes the child's stdin, on which it ends, and waits for it.
func (c *fakeChild) stop() {
	_ = c.proc.CloseStdin()
	if c.proc.Wait(childWait) != nil {
		c.proc.Stop()
	}
}

// drainResult is one drain's figures.
type drainResult struct {
	Backlog     int     `json:"backlog"`
	Reconcilers int     `json:"reconcilers"`
	Seconds     float64 `json:"seconds"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	Passes      int     `json:"passes"`
	CPU         cpuUse  `json:"cpu"`
	// BaseHeapMB is HeapInuse after a collection just before the drain;
	// PeakHeapMB the highest HeapInuse sampled during it (every 20 ms and
	// after every pass); PeakRSSMB this process's VmHWM, reset before the
	// drain, and BaseRSSMB the RSS it was reset to (what earlier phases
	// left mapped); FakeRSSMB the fake child's VmHWM, for comparison.
	BaseHeapMB float64 `json:"base_heap_mb"`
	BaseRSSMB  float64 `json:"base_rss_mb"`
	PeakHeapMB float64 `json:"peak_heap_mb"`
	PeakRSSMB  float64 `json:"peak_rss_mb"`
	FakeRSSMB  float64 `json:"fake_rss_mb"`
	// CPU time per operation of the PostgreSQL backends serving the
	// reconcilers and of this process (the reconcilers; the fake is in
	// its child), in µs.
	PGCPUPerOpUS   float64 `json:"pg_cpu_per_op_us,omitempty"`
	SelfCPUPerOpUS float64 `json:"self_cpu_per_op_us,omitempty"`
	// RoundTripsPerOp counts PostgreSQL round trips per operation, the
	// batch claims included.
	RoundTripsPerOp float64 `json:"round_trips_per_op"`
}

// drain fills a backlog of n pending charges and drains it with
// reconcilers reconcilers, then checks that every operation succeeded and
// was charged exactly once.
func (b *bench) drain(ctx context.Context, n, reconcilers int) (drainResult, error) {
	res := drainResult{Backlog: n, Reconcilers: reconcilers}
	fake, err := startFakeChild(ctx)
	if err != nil {
		return res, err
	}
	defer fake.stop()
	newPSP := func() (*stripe.Provider, error) {
		return stripe.New(stripe.Config{APIKey: fake.apiKey, BaseURL: fake.url})
	}
	schema, err := b.newSchema(ctx, "drain")
	if err != nil {
		return res, err
	}
	app := b.appName(fmt.Sprintf("drain-r%d", reconcilers))
	rt := &roundTrips{}
	pool, store, err := childproc.OpenLedger(ctx, b.pgURL, schema, func(cfg *pgxpool.Config) {
		cfg.MaxConns = int32(reconcilers * drainPoolConns)
		cfg.ConnConfig.RuntimeParams["application_name"] = app
		cfg.ConnConfig.Tracer = rt
	})
	if err != nil {
		return res, err
	}
	defer pool.Close()
	if err := store.Migrate(ctx); err != nil {
		return res, err
	}
	if err := b.fillBacklog(ctx, store, schema, newPSP, n); err != nil {
		return res, err
	}

	rs := make([]*payonce.Reconciler, reconcilers)
	for i := range rs {
		psp, err := newPSP()
		if err != nil {
			return res, err
		}
		client, err := payonce.New(payonce.Config{
			Provider: psp, Store: store, AttemptTimeout: 5 * time.Second,
			HTTPClient: &http.Client{Transport: httpTransport(drainWorkers)},
		})
		if err != nil {
			return res, err
		}
		rs[i], err = payonce.NewReconciler(payonce.ReconcilerConfig{
			Store: store, Clients: []*payonce.Client{client}, BatchSize: drainBatchSize, Concurrency: drainWorkers,
			Owner: fmt.Sprintf("bench-drain-%d", i+1),
		})
		if err != nil {
			return res, err
		}
	}

	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.BaseHeapMB = mb(ms.HeapInuse)
	childproc.ResetPeakRSS()
	res.BaseRSSMB = float64(childproc.VmRSSKiB()) / 1024
	var peak childproc.HeapPeaks
	stopSampling := peak.Run(20 * time.Millisecond)
	backends := startBackendCPU(ctx, b.admin, app, 100*time.Millisecond)
	rt0 := rt.n.Load()
	start := markCPU()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		elapsed time.Duration
		passes  int
		errs    []error
	)
	for _, r := range rs {
		wg.Go(func() {
			e, p, err := untilIdle(ctx, r, &peak, start.wall)
			mu.Lock()
			defer mu.Unlock()
			elapsed = max(elapsed, e)
			passes += p
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	end := markCPU()
	res.CPU = end.since(start)
	pgCPU, pgCPUOK := backends.finish(ctx)
	if pgCPUOK {
		res.PGCPUPerOpUS = float64(pgCPU.Microseconds()) / float64(n)
	}
	res.SelfCPUPerOpUS = float64((end.self - start.self).Microseconds()) / float64(n)
	res.RoundTripsPerOp = float64(rt.n.Load()-rt0) / float64(n)
	stopSampling()
	inuse, _, _ := peak.Peaks()
	res.PeakHeapMB = mb(inuse)
	res.PeakRSSMB = float64(childproc.VmHWMKiB()) / 1024
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	res.Seconds, res.Passes = elapsed.Seconds(), passes
	if elapsed > 0 {
		res.OpsPerSec = float64(n) / elapsed.Seconds()
	}

	// Every operation succeeded, each charged exactly once.
	counts, err := statusCounts(ctx, pool, schema)
	if err != nil {
		return res, err
	}
	if len(counts) != 1 || counts[string(ledger.StatusSucceeded)] != n {
		return res, fmt.Errorf("after the drain the ledger holds %v, want %d succeeded", counts, n)
	}
	t, err := fake.truth()
	if err != nil {
		return res, err
	}
	if t.Payments != n || t.Operations != n || t.Duplicates != 0 {
		return res, fmt.Errorf("after the drain the fake holds %d payments for %d operations (%d charged twice), want %d", t.Payments, t.Operations, t.Duplicates, n)
	}
	res.FakeRSSMB = float64(t.VmHWMKiB) / 1024
	return res, nil
}

// fillBacklog writes n pending charges, due now, with COPY, as the store
// would have recorded them through Enqueue (which would take minutes for
// 100,000). The rows are not kept.
func (b *bench) fillBacklog(ctx context.Context, store *ledgerpg.Store, schema string, newPSP func() (*stripe.Provider, error), n int) error {
	psp, err := newPSP()
	if err != nil {
		return err
	}
	client, err := payonce.New(payonce.Config{Provider: psp, Store: store})
	if err != nil {
		return err
	}
	cols := []string{"id", "key", "provider", "kind", "refs", "generation", "fingerprint", "request", "status",
		"attempts", "key_ttl_ms", "next_check_at", "created_at", "updated_at"}
	now := time.Now().UTC()
	due, created := now.Add(-time.Second), now.Add(-time.Hour)
	prefix := runPrefix("drain")
	rows := make([][]any, n)
	for i := range rows {
		op, err := client.PrepareCharge(ctx, payonce.ChargeParams{
			OrderID: prefix + strconv.Itoa(i), Amount: 1000 + int64(i%9000), Currency: "USD", PaymentMethod: "pm_card_visa",
		})
		if err != nil {
			return err
		}
		rows[i] = []any{op.ID, op.Key, op.Provider, op.Kind, op.References, op.Generation, op.Fingerprint,
			string(op.Request), string(ledger.StatusPending), 0, op.KeyTTL.Milliseconds(), due, created, created}
	}
	got, err := b.admin.CopyFrom(ctx, pgx.Identifier{schema, "payonce_operations"}, cols, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("bulk-inserting the backlog: %w", err)
	}
	if got != int64(n) {
		return fmt.Errorf("bulk-inserted %d operations, want %d", got, n)
	}
	_, err = b.admin.Exec(ctx, "ANALYZE "+pgx.Identifier{schema, "payonce_operations"}.Sanitize())
	return err
}

// untilIdle calls r.RunOnce until three passes in a row, 100 ms apart at
// least, claimed nothing. It returns the time from start to the end of the
// last pass that claimed something (the idle tail is left out) and the
// number of passes.
func untilIdle(ctx context.Context, r *payonce.Reconciler, peak *childproc.HeapPeaks, start time.Time) (time.Duration, int, error) {
	const (
		idleFor = 100 * time.Millisecond
		poll    = 10 * time.Millisecond
	)
	var (
		elapsed    time.Duration
		passes     int
		empty      int
		emptySince time.Time
	)
	for ctx.Err() == nil {
		rep, err := r.RunOnce(ctx)
		passes++
		peak.Sample()
		if err != nil {
			return elapsed, passes, err
		}
		if rep.ErrorCount > 0 {
			return elapsed, passes, fmt.Errorf("reconciler pass: %d errors, first: %v", rep.ErrorCount, errors.Join(rep.Errors...))
		}
		now := time.Now()
		if rep.Claimed > 0 {
			empty = 0
			elapsed = now.Sub(start)
			continue
		}
		if empty == 0 {
			emptySince = now
		}
		empty++
		if empty >= 3 && now.Sub(emptySince) >= idleFor {
			return elapsed, passes, nil
		}
		time.Sleep(poll)
	}
	return elapsed, passes, ctx.Err()
}

// statusCounts counts the schema's operations per status.
func statusCounts(ctx context.Context, pool *pgxpool.Pool, schema string) (map[string]int, error) {
	rows, err := pool.Query(ctx, "SELECT status, count(*) FROM "+pgx.Identifier{schema, "payonce_operations"}.Sanitize()+" GROUP BY status")
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for rows.Next() {
		var (
			st string
			n  int
		)
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
