package crashsuite

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/childproc"
	"github.com/payonce/payonce/ledger"
)

// workerStats is what a worker reports when its work list is done.
type workerStats struct {
	Index int `json:"index"`
	// Calls counts calls per outcome class (see classOf).
	Calls map[string]int64 `json:"calls"`
	// RefundsSkipped counts refunds not made because the order's charge
	// did not succeed (declined, in review, or not settled in time).
	RefundsSkipped int64         `json:"refunds_skipped"`
	Took           time.Duration `json:"took"`
}

// classOf names the class of a call's error.
func classOf(err error) string {
	if err == nil {
		return "succeeded"
	}
	for _, c := range []struct {
		sentinel error
		name     string
	}{
		{payonce.ErrDeclined, "declined"},
		{payonce.ErrManualReview, "review"},
		{payonce.ErrInProgress, "in_progress"},
		{payonce.ErrProviderUnavailable, "unavailable"},
		{payonce.ErrOutcomeUnknown, "unknown"},
		{payonce.ErrFingerprintMismatch, "fingerprint_mismatch"},
		{payonce.ErrInvalid, "invalid"},
	} {
		if errors.Is(err, c.sentinel) {
			return c.name
		}
	}
	return "error"
}

// counters is a concurrent map of counts.
type counters struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *counters) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[k]++
}

func (c *counters) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// runWorker is the "worker" child: a payonce.Client and a Reconciler on
// the PostgreSQL ledger, calling the fake Stripe, and the client's webhook
// receiver on its own port (serveWebhooks). It charges its share of
// the work list, then refunds the charged orders its list refunds, prints
// markerWorkerDone, and keeps reconciling until SIGTERM (or until its stdin
// closes: the driver is gone). A worker killed at any moment and started
// again continues the same list: every call is made again with the same
// identity, which replays what is settled and continues what is not.
func runWorker(cfg childConfig) int {
	start := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	name := fmt.Sprintf("worker %d (pid %d)", cfg.Index, os.Getpid())
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "crashsuite "+name+": "+format+"\n", args...)
		return code
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})).With("worker", cfg.Index)

	all, err := cfg.Work.jobs()
	if err != nil {
		return fail(exitSetup, "work list: %v", err)
	}
	mine := cfg.Work.share(all, cfg.Index)

	pool, store, err := childproc.OpenLedger(ctx, cfg.PGURL, cfg.Schema, func(pcfg *pgxpool.Config) {
		pcfg.MaxConns = int32(cfg.Concurrency + 6)
		pcfg.ConnConfig.ConnectTimeout = 5 * time.Second
	})
	if err != nil {
		return fail(exitSetup, "%v", err)
	}
	defer pool.Close()
	// A service migrates at start-up (a no-op here). The database may be
	// restarting right now: keep trying for a while, as a service would.
	if err := retry(ctx, time.Minute, func() error { return store.Migrate(ctx) }); err != nil {
		return fail(exitSetup, "migrating: %v", err)
	}

	prov, err := childProvider(cfg)
	if err != nil {
		return fail(exitSetup, "%v", err)
	}
	psp, err := prov.adapter(cfg)
	if err != nil {
		return fail(exitSetup, "%s adapter: %v", prov.name, err)
	}
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}
	defer transport.CloseIdleConnections()
	client, err := payonce.New(payonce.Config{
		Provider:       psp,
		Store:          store,
		Logger:         logger,
		HTTPClient:     &http.Client{Transport: transport},
		AttemptTimeout: cfg.AttemptTimeout,
		SafetyMargin:   cfg.SafetyMargin,
		ClockSkew:      cfg.ClockSkew,
		CheckInterval:  cfg.CheckInterval,
		LeaseDuration:  cfg.LeaseDuration,
		Retry: payonce.RetryPolicy{
			MaxAttempts: 3, BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond,
			// The fake asks for 1 s after a 429: the call ends and leaves
			// the operation to the reconciler.
			MaxRetryAfter: 100 * time.Millisecond,
		},
		// A breaker that opens on a run of faults and recovers quickly.
		Breaker: payonce.BreakerSettings{ConsecutiveFailures: 10, OpenFor: 200 * time.Millisecond},
		Owner:   fmt.Sprintf("crashsuite-w%d-%d", cfg.Index, os.Getpid()),
	})
	if err != nil {
		return fail(exitSetup, "client: %v", err)
	}
	rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{
		Store: store, Clients: []*payonce.Client{client},
		BatchSize: 50, Concurrency: 4, Interval: cfg.ReconcileEvery,
		Owner:  fmt.Sprintf("crashsuite-w%d-%d/reconciler", cfg.Index, os.Getpid()),
		Logger: logger,
	})
	if err != nil {
		return fail(exitSetup, "reconciler: %v", err)
	}
	// The receiver of the provider's webhooks: it dies with the worker,
	// and a delivery it did not answer is delivered again.
	if cfg.Webhooks.URL != "" {
		stopWebhooks, err := serveWebhooks(client)
		if err != nil {
			return fail(exitSetup, "webhooks: %v", err)
		}
		defer stopWebhooks()
	}
	var recWG sync.WaitGroup
	recWG.Add(1)
	go func() {
		defer recWG.Done()
		_ = rec.Run(ctx)
	}()
	fmt.Println(markerWorkerUp)

	var calls counters
	var skipped atomic.Int64
	// call makes one call until the operation is recorded: a call whose
	// ledger write failed (the database restarting) recorded nothing, so it
	// is made again; any other answer leaves the rest to the reconcilers.
	call := func(what string, fn func() error) {
		err := retryIf(ctx, 2*time.Minute, fn, func(err error) bool {
			if classOf(err) != "error" {
				return false
			}
			// One line per call made again, for the driver's count.
			fmt.Println(markerCallRetry)
			return true
		})
		class := classOf(err)
		calls.add(what + ":" + class)
		switch class {
		case "error", "invalid", "fingerprint_mismatch":
			if ctx.Err() == nil {
				logger.Error("crashsuite: unexpected call error", "call", what, "error", err)
			}
		}
	}

	// Orders arrive on the schedule (see arrivals); each is charged, and
	// refunded once its charge succeeded when the list says so, refunds
	// running beside the charges of later orders.
	refunds := make(chan job, len(mine))
	var refundWG sync.WaitGroup
	for range cfg.Concurrency {
		refundWG.Add(1)
		go func() {
			defer refundWG.Done()
			for j := range refunds {
				if st := waitSettled(ctx, store, j.ChargeID, cfg.ChargeWait); st != ledger.StatusSucceeded {
					skipped.Add(1)
					// The driver excuses this refund's absence from the
					// ledger: it was never asked for.
					fmt.Println(markerRefundSkipped, j.RefundID, cmp.Or(string(st), "unread"))
					continue
				}
				p := j.refund()
				if j.RefundOver {
					// payonce refuses an over-refund it can see in the
					// ledger before anything is sent; with the charge's
					// PaymentRef nothing is read, so what runs here is the
					// provider's refusal, under faults and kills.
					if ch, _, err := store.Get(ctx, j.ChargeID); err == nil {
						p.PaymentRef = ch.ProviderRef
					}
				}
				call("refund", func() error {
					_, err := client.Refund(ctx, p)
					return err
				})
			}
		}()
	}
	parallel(ctx, cfg.Concurrency, arrivals(ctx, mine, cfg.Epoch, cfg.Spread), func(j job) {
		call("charge", func() error {
			_, err := client.Charge(ctx, j.chargeWith(prov))
			return err
		})
		if j.Refund {
			refunds <- j
		}
	})
	fmt.Println(markerWorkerCharged)
	close(refunds)
	refundWG.Wait()
	if ctx.Err() != nil {
		recWG.Wait()
		return exitOK
	}
	line, _ := json.Marshal(workerStats{Index: cfg.Index, Calls: calls.snapshot(), RefundsSkipped: skipped.Load(), Took: time.Since(start)})
	fmt.Printf("%s %s\n", markerWorkerDone, line)

	// Keep reconciling until told to stop.
	<-ctx.Done()
	recWG.Wait()
	return exitOK
}

// waitSettled polls the ledger until the operation is succeeded or failed,
// or has been in review for a while (a read-only lookup may still settle
// it), or until wait has passed. It returns the status it saw last.
func waitSettled(ctx context.Context, store ledger.Store, id string, wait time.Duration) ledger.Status {
	deadline := time.Now().Add(wait)
	var reviewSince time.Time
	var st ledger.Status
	for {
		op, _, err := store.Get(ctx, id)
		if err == nil {
			st = op.Status
			switch {
			case st.Final():
				return st
			case st == ledger.StatusManualReview && reviewSince.IsZero():
				reviewSince = time.Now()
			case st == ledger.StatusManualReview && time.Since(reviewSince) > 5*time.Second:
				return st
			}
		}
		if time.Now().After(deadline) || pause(ctx, 100*time.Millisecond) != nil {
			return st
		}
	}
}

// arrivals delivers the jobs as the orders arrive: job i of n at epoch +
// spread*i/n, on the wall clock that every incarnation of the worker shares,
// so that a restarted worker catches up at once on the orders that already
// arrived (calling again with the same identities) and then follows the
// schedule. The channel closes after the last job or when ctx ends.
func arrivals(ctx context.Context, jobs []job, epoch time.Time, spread time.Duration) <-chan job {
	ch := make(chan job)
	go func() {
		defer close(ch)
		for i, j := range jobs {
			at := epoch.Add(spread * time.Duration(i) / time.Duration(len(jobs)))
			if d := time.Until(at); d > 0 && pause(ctx, d) != nil {
				return
			}
			select {
			case ch <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// parallel runs fn on every job from jobs with n goroutines.
func parallel(ctx context.Context, n int, jobs <-chan job, fn func(job)) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if ctx.Err() == nil {
					fn(j)
				}
			}
		}()
	}
	wg.Wait()
}

// retry calls fn until it succeeds, ctx ends or wait has passed.
func retry(ctx context.Context, wait time.Duration, fn func() error) error {
	return retryIf(ctx, wait, fn, func(error) bool { return true })
}

// retryIf calls fn again while again(err) holds, until ctx ends or wait
// has passed, and returns fn's last error.
func retryIf(ctx context.Context, wait time.Duration, fn func() error, again func(error) bool) error {
	deadline := time.Now().Add(wait)
	delay := 50 * time.Millisecond
	for {
		err := fn()
		if err == nil || !again(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		if pause(ctx, delay) != nil {
			return err
		}
		delay = min(2*delay, time.Second)
	}
}

// pause waits d or until ctx ends: the polling step of a loop that has its
// own deadline.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
