package payonce_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/childproc"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/stripe"
)

// Reconciler child processes. The proof tests and the drain benchmark run
// reconcilers as separate processes: the test binary re-executes itself with
// PAYONCE_RECONCILE_CHILD set (see TestMain in main_test.go), and the child
// runs one Reconciler on a PostgreSQL ledger against a fake Stripe served by
// the parent, in an "until idle" loop, on the real clock. It prints
// reconMarkerReady once built, optionally waits for a line on stdin (so that
// several children start together), and ends with one reconMarkerResult line
// holding what it did and its own memory figures: a child measures the
// reconciler alone, without the fake's ever-growing truth.

const (
	// reconEnvChild names the child (its lease owner and the worker header).
	reconEnvChild = "PAYONCE_RECONCILE_CHILD"
	// reconEnvConfig holds the child's reconChildConfig as JSON.
	reconEnvConfig = "PAYONCE_RECONCILE_CONFIG"

	reconMarkerReady  = "PAYONCE_RECONCILE_READY"
	reconMarkerResult = "PAYONCE_RECONCILE_RESULT "

	// reconWorkerHeader names the child on every request it sends, so that
	// the parent's fake can tell which process sent what. The fake ignores
	// it (it is not part of a request's idempotency fingerprint).
	reconWorkerHeader = "X-Payonce-Test-Worker"

	reconExitSetup = 16
	reconExitRun   = 17
)

// reconChildConfig is everything a child needs. Durations are nanoseconds
// in JSON.
type reconChildConfig struct {
	PGURL     string `json:"pg_url"`
	PGSchema  string `json:"pg_schema"`
	PoolConns int    `json:"pool_conns"`

	StripeURL string        `json:"stripe_url"`
	StripeKey string        `json:"stripe_key"`
	KeyTTL    time.Duration `json:"key_ttl"`    // adapter's; 0: Stripe's 24 h
	SearchLag time.Duration `json:"search_lag"` // adapter's; 0: 1 min

	AttemptTimeout  time.Duration `json:"attempt_timeout"`
	LeaseDuration   time.Duration `json:"lease_duration"`
	SafetyMargin    time.Duration `json:"safety_margin"`
	CheckInterval   time.Duration `json:"check_interval"`
	MaxAttempts     int           `json:"max_attempts"`
	BreakerFailures uint32        `json:"breaker_failures"`
	BreakerOpenFor  time.Duration `json:"breaker_open_for"`
	// KeepAlive pools connections; off, every request has its own (a
	// dropped answer then reaches the client as a dropped answer).
	KeepAlive bool `json:"keep_alive"`

	BatchSize   int `json:"batch_size"`
	Concurrency int `json:"concurrency"`

	// The loop stops when passes have claimed nothing for IdleFor (and at
	// least three in a row), waiting Poll after each empty pass; or, with
	// StopWhenOnlyReview, once the ledger holds no pending, unknown or
	// in_flight operation (what is left is in review, where lookups go on
	// read-only for ever); or at Deadline.
	IdleFor            time.Duration `json:"idle_for"`
	Poll               time.Duration `json:"poll"`
	StopWhenOnlyReview bool          `json:"stop_when_only_review"`
	Deadline           time.Duration `json:"deadline"`

	// WaitGo makes the child wait for a line on stdin after printing
	// reconMarkerReady.
	WaitGo bool `json:"wait_go"`
	// SampleEvery is the period of the memory sampler (default 20 ms).
	SampleEvery time.Duration `json:"sample_every"`
}

// reconChildResult is what a child reports.
type reconChildResult struct {
	Worker      string         `json:"worker"`
	Stop        string         `json:"stop"` // idle, only_review, deadline
	Passes      int            `json:"passes"`
	PassErrors  int            `json:"pass_errors"`
	Claimed     int            `json:"claimed"`
	Settled     int            `json:"settled"`
	Skipped     int            `json:"skipped"`
	ErrorCount  int            `json:"error_count"`
	Errors      []string       `json:"errors,omitempty"`
	Transitions map[string]int `json:"transitions"`
	// Elapsed runs from the go signal to the end of the last pass that
	// claimed something (the idle tail is left out).
	Elapsed time.Duration `json:"elapsed"`
	// Total runs from the go signal to the end of the loop.
	Total time.Duration `json:"total"`
	// PeakHeapInuse and PeakHeapAlloc are the highest runtime.MemStats
	// values sampled while running; PeakLiveHeap is the highest HeapAlloc
	// right after a forced collection (sampled every 10 passes).
	PeakHeapInuse uint64 `json:"peak_heap_inuse"`
	PeakHeapAlloc uint64 `json:"peak_heap_alloc"`
	PeakLiveHeap  uint64 `json:"peak_live_heap"`
	// VmHWMKiB is the process's peak resident set size (/proc/self/status).
	VmHWMKiB int64 `json:"vm_hwm_kib"`
}

// workerTransport names the child on every request.
type workerTransport struct {
	name string
	base http.RoundTripper
}

func (w workerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(reconWorkerHeader, w.name)
	return w.base.RoundTrip(req)
}

// reconcileChild is the child process's main.
func reconcileChild() int {
	name := os.Getenv(reconEnvChild)
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "reconcile child %s: "+format+"\n", append([]any{name}, args...)...)
		return code
	}
	var cfg reconChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(reconEnvConfig)), &cfg); err != nil {
		return fail(reconExitSetup, "reading %s: %v", reconEnvConfig, err)
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = time.Minute
	}
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	if cfg.SampleEvery == 0 {
		cfg.SampleEvery = 20 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Deadline+time.Minute)
	defer cancel()

	pool, store, err := childproc.OpenLedger(ctx, cfg.PGURL, cfg.PGSchema, func(pcfg *pgxpool.Config) {
		if cfg.PoolConns > 0 {
			pcfg.MaxConns = int32(cfg.PoolConns)
		}
	})
	if err != nil {
		return fail(reconExitSetup, "%v", err)
	}
	defer pool.Close()
	if err := store.Migrate(ctx); err != nil {
		return fail(reconExitSetup, "migrating: %v", err)
	}
	psp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: cfg.StripeKey, BaseURL: cfg.StripeURL, KeyTTL: cfg.KeyTTL, SearchLag: cfg.SearchLag})
	if err != nil {
		return fail(reconExitSetup, "stripe adapter: %v", err)
	}
	tr := &http.Transport{DisableKeepAlives: !cfg.KeepAlive, MaxIdleConnsPerHost: 64}
	client, err := payonce.New(payonce.Config{
		Provider: psp, Store: store,
		HTTPClient:     &http.Client{Transport: workerTransport{name: name, base: tr}},
		AttemptTimeout: cfg.AttemptTimeout,
		LeaseDuration:  cfg.LeaseDuration,
		SafetyMargin:   cfg.SafetyMargin,
		ClockSkew:      max(time.Millisecond, cfg.SafetyMargin-cfg.AttemptTimeout), // one machine: no skew
		CheckInterval:  cfg.CheckInterval,
		Retry:          payonce.RetryPolicy{MaxAttempts: cfg.MaxAttempts, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
		Breaker:        payonce.BreakerSettings{ConsecutiveFailures: cfg.BreakerFailures, OpenFor: cfg.BreakerOpenFor},
		Owner:          name,
	})
	if err != nil {
		return fail(reconExitSetup, "client: %v", err)
	}
	r, err := payonce.NewReconciler(payonce.ReconcilerConfig{
		Store: store, Clients: []*payonce.Client{client},
		BatchSize: cfg.BatchSize, Concurrency: cfg.Concurrency,
		Owner: fmt.Sprintf("%s/%d/reconciler", name, os.Getpid()),
	})
	if err != nil {
		return fail(reconExitSetup, "reconciler: %v", err)
	}

	fmt.Println(reconMarkerReady)
	if cfg.WaitGo {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return fail(reconExitSetup, "waiting for the go line on stdin: %v", err)
		}
	}

	var mem childproc.HeapPeaks
	stop := mem.Run(cfg.SampleEvery)
	res, err := untilIdle(ctx, r, store, name, cfg, &mem, 10)
	stop()
	if err != nil {
		return fail(reconExitRun, "%v", err)
	}
	res.PeakHeapInuse, res.PeakHeapAlloc, res.PeakLiveHeap = mem.Peaks()
	res.VmHWMKiB = childproc.VmHWMKiB()
	line, err := json.Marshal(res)
	if err != nil {
		return fail(reconExitRun, "encoding the result: %v", err)
	}
	fmt.Println(reconMarkerResult + string(line))
	return 0
}

// untilIdle calls r.RunOnce until the loop of cfg stops (IdleFor,
// StopWhenOnlyReview, Deadline), sampling mem after every pass and its live
// heap every liveEvery passes (0: never; a forced collection slows the
// pass down). The error is set only when the ledger could not be read.
func untilIdle(ctx context.Context, r *payonce.Reconciler, store ledger.Store, name string, cfg reconChildConfig, mem *childproc.HeapPeaks, liveEvery int) (res reconChildResult, err error) {
	res = reconChildResult{Worker: name, Transitions: map[string]int{}, Stop: "deadline"}
	start := time.Now()
	deadline := start.Add(cfg.Deadline)
	var (
		empty      int
		emptySince time.Time
		lastReview time.Time
	)
	defer func() { res.Total = time.Since(start) }()
	for time.Now().Before(deadline) {
		rep, err := r.RunOnce(ctx)
		res.Passes++
		mem.Sample()
		if liveEvery > 0 && res.Passes%liveEvery == 0 {
			mem.Live()
		}
		if err != nil {
			res.PassErrors++
			if len(res.Errors) < 20 {
				res.Errors = append(res.Errors, "pass: "+err.Error())
			}
			time.Sleep(cfg.Poll)
			continue
		}
		res.Claimed += rep.Claimed
		res.Settled += rep.Settled
		res.Skipped += rep.Skipped
		res.ErrorCount += rep.ErrorCount
		for _, e := range rep.Errors {
			if len(res.Errors) < 20 {
				res.Errors = append(res.Errors, e.Error())
			}
		}
		for k, v := range rep.Transitions {
			res.Transitions[k] += v
		}
		now := time.Now()
		if rep.Claimed > 0 {
			empty = 0
			res.Elapsed = now.Sub(start)
		} else {
			if empty == 0 {
				emptySince = now
			}
			empty++
			if empty >= 3 && now.Sub(emptySince) >= cfg.IdleFor {
				res.Stop = "idle"
				return res, nil
			}
		}
		if cfg.StopWhenOnlyReview && len(rep.Transitions) == 0 && now.Sub(lastReview) >= 100*time.Millisecond {
			lastReview = now
			left, err := automationLeft(ctx, store)
			if err != nil {
				return res, fmt.Errorf("listing what is left: %w", err)
			}
			if !left {
				res.Stop = "only_review"
				return res, nil
			}
		}
		if rep.Claimed == 0 {
			time.Sleep(cfg.Poll)
		}
	}
	return res, nil
}

// automationLeft reports whether the ledger still holds an operation that
// automation may move (pending, unknown or in_flight).
func automationLeft(ctx context.Context, s ledger.Store) (bool, error) {
	for _, st := range []ledger.Status{ledger.StatusPending, ledger.StatusUnknown, ledger.StatusInFlight} {
		ops, err := s.List(ctx, ledger.ListFilter{Status: st, Limit: 1})
		if err != nil {
			return false, err
		}
		if len(ops) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// ---- the parent's side ----

// startReconChild starts the test binary as a reconciler child named name.
// It is killed when the test ends if it is still running.
func startReconChild(tb testing.TB, name string, cfg reconChildConfig) *childproc.Proc {
	tb.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(tb, err)
	p, err := childproc.Start(context.Background(), childproc.Spec{
		Name: name, Args: []string{"-test.run=^$"}, Timeout: cfg.Deadline + 2*time.Minute,
		Env: []string{reconEnvChild + "=" + name, reconEnvConfig + "=" + string(raw)},
	})
	require.NoError(tb, err)
	tb.Cleanup(p.Stop)
	return p
}

// waitReady waits until the child printed reconMarkerReady.
func waitReady(tb testing.TB, p *childproc.Proc, timeout time.Duration) {
	tb.Helper()
	_, err := p.WaitLine(reconMarkerReady, timeout)
	require.NoError(tb, err)
}

// goLine releases a child waiting on WaitGo.
func goLine(tb testing.TB, p *childproc.Proc) {
	tb.Helper()
	require.NoError(tb, p.WriteLine("go"), p.Describe())
}

// reconResult waits for the child to exit successfully and returns its report.
func reconResult(tb testing.TB, p *childproc.Proc, timeout time.Duration) reconChildResult {
	tb.Helper()
	require.NoError(tb, p.Wait(timeout), p.Describe())
	if l, ok := p.Stdout().Line(reconMarkerResult); ok {
		var res reconChildResult
		require.NoError(tb, json.Unmarshal([]byte(strings.TrimPrefix(l, reconMarkerResult)), &res), p.Describe())
		return res
	}
	require.FailNow(tb, "the child printed no result", p.Describe())
	return reconChildResult{}
}

// ---- backlogs written straight into a PostgreSQL schema ----

// backlogRow is one operation of a bulk-inserted backlog.
type backlogRow struct {
	op  ledger.NewOperation
	req payonce.Request
	// status is pending or unknown. An unknown row has one attempt that
	// may have reached the provider, started at attemptAt, and, when ref is
	// set, the PaymentIntent the ledger already knows.
	status    ledger.Status
	ref       string
	attemptAt time.Time
}

// prepareBacklog prepares n charges with client, orders prefix-0 ... as
// rows of status st.
func prepareBacklog(tb testing.TB, c *payonce.Client, prefix string, n int, st ledger.Status, attemptAt time.Time) []backlogRow {
	tb.Helper()
	rows := make([]backlogRow, n)
	for i := range rows {
		op, err := c.PrepareCharge(context.Background(), charge(prefix+"-"+strconv.Itoa(i), 1000+int64(i%9000)))
		require.NoError(tb, err)
		req, err := payonce.ParseRequest(op.Request)
		require.NoError(tb, err)
		rows[i] = backlogRow{op: op, req: req, status: st, attemptAt: attemptAt}
	}
	return rows
}

// insertBacklog writes rows into the store's tables with COPY, due at
// dueAt, as the store would have recorded them: the fast way to a backlog
// of 100,000 (CreateOrGet plus Begin/Finish per row takes minutes).
func insertBacklog(tb testing.TB, ctx context.Context, pool *pgxpool.Pool, schema string, rows []backlogRow, dueAt time.Time) {
	tb.Helper()
	opCols := []string{"id", "key", "provider", "kind", "refs", "generation", "fingerprint", "request", "status",
		"provider_ref", "attempts", "key_ttl_ms", "window_start", "key_expires_at", "next_check_at", "created_at", "updated_at"}
	attCols := []string{"operation_id", "number", "key", "started_at", "finished_at", "may_have_reached", "outcome", "error"}
	created := dueAt.Add(-time.Hour).UTC()
	var atts [][]any
	ops := make([][]any, len(rows))
	for i, r := range rows {
		var ref, windowStart, keyExpires any
		attempts := 0
		if r.status == ledger.StatusUnknown {
			attempts = 1
			windowStart = r.attemptAt.UTC()
			keyExpires = r.attemptAt.Add(r.op.KeyTTL).UTC()
			if r.ref != "" {
				ref = r.ref
			}
			atts = append(atts, []any{r.op.ID, 1, r.op.Key, r.attemptAt.UTC(), r.attemptAt.Add(time.Second).UTC(), true,
				string(ledger.OutcomeMaybeSent), "timeout awaiting the answer (bulk-inserted backlog)"})
		}
		ops[i] = []any{r.op.ID, r.op.Key, r.op.Provider, r.op.Kind, r.op.References, r.op.Generation, r.op.Fingerprint,
			string(r.op.Request), string(r.status), ref, attempts, r.op.KeyTTL.Milliseconds(), windowStart, keyExpires,
			dueAt.UTC(), created, created}
	}
	n, err := pool.CopyFrom(ctx, pgx.Identifier{schema, "payonce_operations"}, opCols, pgx.CopyFromRows(ops))
	require.NoError(tb, err)
	require.EqualValues(tb, len(rows), n)
	if len(atts) > 0 {
		n, err = pool.CopyFrom(ctx, pgx.Identifier{schema, "payonce_attempts"}, attCols, pgx.CopyFromRows(atts))
		require.NoError(tb, err)
		require.EqualValues(tb, len(atts), n)
	}
}

// createIntents creates, through the fake's API, the PaymentIntent of every
// row (as an earlier attempt would have, same key and metadata) and records
// its id in row.ref. workers requests run at once.
func createIntents(tb testing.TB, ctx context.Context, psp *stripe.Provider, rows []*backlogRow, workers int) {
	tb.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * workers}}
	var (
		next   atomic.Int64
		failed atomic.Pointer[error]
		wg     sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for failed.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(rows) {
					return
				}
				r := rows[i]
				id, err := postIntent(ctx, hc, psp, r)
				if err != nil {
					err = fmt.Errorf("creating the PaymentIntent of %s: %w", r.op.ID, err)
					failed.CompareAndSwap(nil, &err)
					return
				}
				r.ref = id
			}
		})
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		require.NoError(tb, *p)
	}
}

func postIntent(ctx context.Context, hc *http.Client, psp *stripe.Provider, r *backlogRow) (string, error) {
	req, err := psp.NewRequest(ctx, payonce.SendRequest{OperationID: r.op.ID, Key: r.op.Key, Request: r.req})
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var pi struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&pi); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK || pi.Status != "succeeded" || pi.ID == "" {
		return "", errors.New("HTTP " + strconv.Itoa(resp.StatusCode) + ", status " + pi.Status)
	}
	return pi.ID, nil
}

// statusCounts counts the schema's operations per status.
func statusCounts(tb testing.TB, ctx context.Context, pool *pgxpool.Pool, schema string) map[string]int {
	tb.Helper()
	rows, err := pool.Query(ctx, "SELECT status, count(*) FROM "+pgx.Identifier{schema, "payonce_operations"}.Sanitize()+" GROUP BY status")
	require.NoError(tb, err)
	out := map[string]int{}
	for rows.Next() {
		var (
			st string
			n  int
		)
		require.NoError(tb, rows.Scan(&st, &n))
		out[st] = n
	}
	require.NoError(tb, rows.Err())
	return out
}
