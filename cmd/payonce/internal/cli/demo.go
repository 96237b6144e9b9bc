package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// demoSettings are the timings the demo runs with: short, so that it
// settles within seconds; each is printed with the report.
type demoSettings struct {
	Provider                     demoProvider
	Orders, Refunds, Concurrency int
	Seed                         int64
	FaultRate                    float64
	KeyTTL                       time.Duration // fake and adapter
	FakeSearchLag                time.Duration
	AdapterSearchLag             time.Duration
	AttemptTimeout               time.Duration
	HangFor, SlowFor, RetryAfter time.Duration
	CheckInterval                time.Duration
	// ClockSkew is the clock-skew allowance (payonce.Config.ClockSkew):
	// small, since the fake runs on this process's clock. SafetyMargin is
	// the library's default margin that follows from it.
	ClockSkew       time.Duration
	SafetyMargin    time.Duration
	Retry           payonce.RetryPolicy
	Breaker         payonce.BreakerSettings
	DeclineEvery    int // one order in DeclineEvery pays with a declined card
	Ledger          string
	TemporaryLedger bool
	FakeURL         string
	// Webhooks turns the fake's webhooks on, delivered to a receiver in
	// this process with the faults below.
	Webhooks bool
	Hooks    demoHookFaults
}

// demoHookFaults are the faults of the fake's webhook deliveries: as
// providers deliver, late, at least once (some twice), not in order, and
// again after a failed attempt.
type demoHookFaults struct {
	Delay                                time.Duration
	DuplicateRate, ReorderRate, FailRate float64
	RetryAfter                           time.Duration
}

// delivery is the fake's WebhookDelivery to url with creds' secret or
// credentials and these faults.
func (f demoHookFaults) delivery(url string, creds mocks.WebhookDelivery) mocks.WebhookDelivery {
	d := creds
	d.URL, d.Delay, d.RetryAfter = url, f.Delay, f.RetryAfter
	d.DuplicateRate, d.ReorderRate, d.FailRate = f.DuplicateRate, f.ReorderRate, f.FailRate
	return d
}

func defaultDemoSettings() demoSettings {
	return demoSettings{
		Orders: 200, Refunds: 50, Concurrency: 16, Seed: 1, FaultRate: 0.20,
		KeyTTL:           20 * time.Second,
		FakeSearchLag:    time.Second,
		AdapterSearchLag: 2 * time.Second,
		AttemptTimeout:   time.Second,
		HangFor:          2 * time.Second,
		SlowFor:          300 * time.Millisecond,
		RetryAfter:       time.Second,
		CheckInterval:    time.Second,
		ClockSkew:        time.Second,
		Retry:            payonce.RetryPolicy{MaxAttempts: 3, BaseDelay: 50 * time.Millisecond, MaxDelay: 500 * time.Millisecond, MaxRetryAfter: 2 * time.Second},
		Breaker:          payonce.BreakerSettings{ConsecutiveFailures: 8, OpenFor: 500 * time.Millisecond},
		DeclineEvery:     40,
		// The delay lets a webhook race the call it reports: it arrives
		// while a hung answer is still awaited, or before the lookup of a
		// lost one.
		Webhooks: true,
		Hooks: demoHookFaults{Delay: 200 * time.Millisecond, DuplicateRate: 0.10, ReorderRate: 0.10, FailRate: 0.10,
			RetryAfter: 50 * time.Millisecond},
	}
}

func runDemo(ctx context.Context, a *App, args []string) error {
	return runDemoWith(ctx, a, args, demoSeam{})
}

// runDemoWith is runDemo with a test's seam.
func runDemoWith(ctx context.Context, a *App, args []string, seam demoSeam) error {
	s := defaultDemoSettings()
	f := newFlags("demo", "payonce demo [--provider stripe|yookassa|checkout|adyen|paypal] [--orders N] [--refunds M] [--concurrency C] [--seed S] [--webhooks=false] [--ledger DSN] [--json] [--console [--addr HOST:PORT]]",
		`Starts a fake provider in this process (Stripe, YooKassa, Checkout.com,
Adyen or PayPal, with its own test credentials) that fails about a fifth of the
requests that move money in the ways that matter there (answers lost after
the money moved, hangs, proxy 502s before and after processing, rate limits,
slow answers, 500s stored or produced after the money moved), charges
--orders orders with the provider's test payment methods (a few of them
declined) and refunds --refunds of them at --concurrency through payonce,
runs the reconciler until nothing is left to settle, and compares the ledger
with what the fake really did. It then audits the fake as "payonce audit"
would (stripe and yookassa list their objects, checkout is looked up; adyen
is audited from a downloaded report, and paypal's transaction search only
3 hours late, so not here) over the run's period,
recording what differs as findings in the demo's ledger. Its timings are
short (a key TTL of 20s instead of 24h, lookup lags of seconds) so that it
settles in about half a minute; they are printed with the report. Amounts are in USD for stripe and paypal,
RUB for yookassa, EUR for checkout and adyen.

The fake also sends its signed webhooks to a receiver the demo runs on
127.0.0.1 (payonce's webhook handler on a free port), late, some twice, some
out of order, some only after failed attempts; the report counts the
deliveries, what each event did, and how many operations were settled by the
call itself, by a status lookup and by a webhook. --webhooks=false shows the
same run settled by calls and lookups alone (not with adyen: Adyen has no
status lookup, its outcomes come only by webhook).

Exit code 0 when no reference was charged or refunded twice, every
operation settled (succeeded, failed, or in manual review) and the audit
found no difference; 1 otherwise.
Needs no credential and no setup: the ledger is a temporary SQLite file
unless --ledger (or PAYONCE_LEDGER) names one.

With --console the demo then serves its ledger in the operator console (as
"payonce console" does) on --addr, printing the URL and a one-time resolver
login to stderr, so that the review queue the run produced can be opened in
a browser; resends go to the demo's fake. SIGINT or SIGTERM stops it.`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print the report as one JSON object")
	provider := "stripe"
	f.StringVar(&provider, "provider", provider, "the fake to run against, `NAME`: "+demoProviderNames()+"; or PAYONCE_PROVIDER")
	f.IntVar(&s.Orders, "orders", s.Orders, "`N` orders to charge")
	f.IntVar(&s.Refunds, "refunds", s.Refunds, "refund `M` of the orders")
	f.IntVar(&s.Concurrency, "concurrency", s.Concurrency, "`C` calls at once (and operations the reconciler settles at once)")
	f.Int64Var(&s.Seed, "seed", s.Seed, "`S` seeds amounts, declines and the fake's faults")
	f.Float64Var(&s.FaultRate, "fault-rate", s.FaultRate, "`RATE` of the requests that move money the fake fails, 0 to 1")
	f.duration(&s.KeyTTL, "key-ttl", s.KeyTTL, "idempotency key TTL of the fake and the adapter (`D`); stored 500s reach\nreview once it has passed")
	f.BoolVar(&s.Webhooks, "webhooks", s.Webhooks, "have the fake deliver webhooks to a receiver on 127.0.0.1 (--webhooks=false: lookups only)")
	f.duration(&s.ClockSkew, "clock-skew", s.ClockSkew, "clock-skew allowance (`D`): resends stop the attempt timeout ("+s.AttemptTimeout.String()+") plus\n"+
		"the larger of this and 1% of --key-ttl before the key expires; small by default,\nsince the fake runs on this machine's clock")
	var withConsole bool
	consoleAddr := "127.0.0.1:8088"
	f.BoolVar(&withConsole, "console", false, "after the run, serve its ledger in the operator console (a one-time resolver\nlogin printed to stderr) until SIGINT or SIGTERM")
	f.StringVar(&consoleAddr, "addr", consoleAddr, "with --console: listen on `HOST:PORT` (loopback only)")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	if f.wasSet("addr") && !withConsole {
		return usageErrorf("--addr is the console's address: use it with --console")
	}
	if withConsole {
		if err := checkDemoConsoleAddr(consoleAddr); err != nil {
			return err
		}
	}
	if !f.wasSet("provider") {
		if v := a.Env("PAYONCE_PROVIDER"); v != "" {
			provider = v
		}
	}
	p, ok := findDemoProvider(provider)
	if !ok {
		return usageErrorf("unknown provider %q: the demo has fakes of %s", provider, demoProviderNames())
	}
	s.Provider = p
	if !s.Webhooks && p.webhookOnly {
		return usageErrorf("--provider %s needs webhooks: %s has no status lookup, so its outcomes arrive only by webhook; drop --webhooks=false", p.name, p.title)
	}
	if !p.fakeLag {
		s.FakeSearchLag = 0
	}
	if p.noLookupLag {
		s.AdapterSearchLag = 0
	}
	switch {
	case s.Orders < 1 || s.Orders > 100000:
		return usageErrorf("--orders must be between 1 and 100000, got %d", s.Orders)
	case s.Refunds < 0 || s.Refunds > s.Orders:
		return usageErrorf("--refunds must be between 0 and --orders (%d), got %d", s.Orders, s.Refunds)
	case s.Concurrency < 1 || s.Concurrency > 256:
		return usageErrorf("--concurrency must be between 1 and 256, got %d", s.Concurrency)
	case s.FaultRate < 0 || s.FaultRate > 1:
		return usageErrorf("--fault-rate must be between 0 and 1, got %v", s.FaultRate)
	case s.ClockSkew <= 0:
		return usageErrorf("--clock-skew must be greater than 0, got %s", fmtDuration(s.ClockSkew))
	case s.KeyTTL < 4*s.AttemptTimeout:
		return usageErrorf("--key-ttl must be at least %s, got %s", 4*s.AttemptTimeout, fmtDuration(s.KeyTTL))
	}
	if err := checkMargin(s.KeyTTL, "--key-ttl "+fmtDuration(s.KeyTTL), s.AttemptTimeout, "the demo's attempt timeout "+fmtDuration(s.AttemptTimeout),
		s.ClockSkew, "use a longer --key-ttl or a smaller --clock-skew"); err != nil {
		return err
	}
	s.SafetyMargin = safetyMargin(s.KeyTTL, s.AttemptTimeout, s.ClockSkew)

	start := time.Now()
	d, err := newDemo(ctx, a, s, lf)
	if err != nil {
		return err
	}
	defer d.close()
	runErr := d.run(ctx)
	// The report is read even after an interrupt.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	// The audit only once the run settled: an operation still open would
	// be judged on its way. From the second the run started in: Stripe
	// dates objects in whole seconds, and an earlier run on a kept ledger
	// (whose objects this run's fake never saw) stays outside the period.
	aud := newDemoAuditReport("the run did not finish")
	var auditErr error
	if runErr == nil {
		// A failed audit compared nothing: the report says so, and the
		// demo fails as for any check it could not make.
		if aud, auditErr = d.audit(ctx, start.Truncate(time.Second), seam); auditErr != nil {
			aud.Skipped = "failed: " + auditErr.Error()
		}
	}
	rep, err := d.report(rctx, time.Since(start), aud)
	if err != nil {
		return err
	}
	if asJSON {
		if err := writeJSON(a.Stdout, rep); err != nil {
			return err
		}
	} else {
		rep.print(a.Stdout)
	}
	var result error
	switch {
	case runErr != nil:
		result = withCode(ExitError, runErr)
	case auditErr != nil:
		result = withCode(ExitError, auditErr)
	case rep.DoubleCharges > 0 || rep.DoubleRefunds > 0:
		result = withCode(ExitError, fmt.Errorf("money moved twice: %d references charged twice, %d refunded twice", rep.DoubleCharges, rep.DoubleRefunds))
	case rep.Total.Unsettled > 0:
		result = withCode(ExitError, fmt.Errorf("%d operations did not settle", rep.Total.Unsettled))
	case rep.Audit.differs() > 0:
		result = withCode(ExitError, fmt.Errorf("%w: %d (%s)", errAuditDiffers, rep.Audit.differs(), strings.Join(rep.Audit.Listed, "; ")))
	}
	if withConsole && ctx.Err() == nil {
		if err := d.serveConsole(ctx, consoleAddr); err != nil {
			return err
		}
	}
	return result
}

// demo is one run of the demo.
type demo struct {
	a        *App
	s        demoSettings
	fake     demoFake
	psp      payonce.Provider // the adapter that talks to the fake
	ledger   *ledgerConn
	recv     *demoReceiver // nil without webhooks
	tempDir  string
	client   *payonce.Client
	rec      *payonce.Reconciler
	prog     *progress
	runID    string
	orders   []demoOrder
	refunded []bool // by order index: a refund was asked for

	passes, claimed, settled int

	errMu    sync.Mutex
	callErrs []string // calls that failed to act (not outcomes such as declined)
}

// noteErr keeps the error of a call that did not describe an outcome.
func (d *demo) noteErr(what string, err error) {
	if _, outcome := callExit(err); outcome {
		return
	}
	d.errMu.Lock()
	defer d.errMu.Unlock()
	if len(d.callErrs) < 20 {
		d.callErrs = append(d.callErrs, what+": "+err.Error())
	}
}

type demoOrder struct {
	id      string
	amount  int64
	decline bool
	method  string      // the payment method it pays with
	charged atomic.Bool // the charge call reported success
}

func newDemo(ctx context.Context, a *App, s demoSettings, lf *ledgerFlags) (*demo, error) {
	d := &demo{a: a, s: s, prog: a.newProgress(a.Stderr)}
	ok := false
	defer func() {
		if !ok {
			d.close()
		}
	}()
	var err error
	if lf.f.wasSet("ledger") || a.Env("PAYONCE_LEDGER") != "" {
		d.ledger, err = a.openLedger(ctx, lf, openCreate)
	} else {
		d.tempDir, err = os.MkdirTemp("", "payonce-demo-")
		if err != nil {
			return nil, fmt.Errorf("creating a temporary directory for the ledger: %w", err)
		}
		d.s.TemporaryLedger = true
		d.ledger, err = openSQLite(filepath.Join(d.tempDir, "ledger.db"), openCreate)
	}
	if err != nil {
		return nil, err
	}
	d.s.Ledger = d.ledger.desc
	if _, _, err := d.ledger.migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrating the ledger %s: %w", d.ledger.desc, err)
	}

	rates := s.Provider.faultRates(s.FaultRate)
	var wh demoHooks
	if s.Webhooks {
		if d.recv, err = listenWebhooks(s.Provider.name); err != nil {
			return nil, err
		}
		if wh, err = s.Provider.webhookCreds(); err != nil {
			return nil, err
		}
		wh.Delivery = s.Hooks.delivery(d.recv.URL(), wh.Delivery)
	}
	var psp payonce.Provider
	d.fake, psp, err = s.Provider.start(s, rates, wh)
	d.psp = psp
	if err != nil {
		return nil, fmt.Errorf("building the %s adapter for the fake: %w", s.Provider.name, err)
	}
	d.s.FakeURL = d.fake.URL()
	d.client, err = payonce.New(payonce.Config{
		Provider: psp, Store: d.ledger.store, Logger: a.logger(quiet),
		// Keep-alives off: a dropped answer reaches the client as a
		// dropped answer, not as Go's transparent resend on a new
		// connection, so the demo shows what a real network does.
		HTTPClient:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true, MaxConnsPerHost: 4 * s.Concurrency}},
		AttemptTimeout: s.AttemptTimeout, Retry: s.Retry, Breaker: s.Breaker,
		// SafetyMargin stays zero: the library's default, which is
		// s.SafetyMargin.
		CheckInterval: s.CheckInterval, ClockSkew: s.ClockSkew,
	})
	if err != nil {
		return nil, err
	}
	if d.recv != nil {
		if err := d.recv.serve(d.client); err != nil {
			return nil, fmt.Errorf("starting the demo's webhook receiver: %w", err)
		}
	}
	d.rec, err = payonce.NewReconciler(payonce.ReconcilerConfig{
		Store: d.ledger.store, Clients: []*payonce.Client{d.client}, BatchSize: 500, Concurrency: s.Concurrency,
	})
	if err != nil {
		return nil, err
	}

	// Order ids are unique per run, so that a demo on a kept ledger never
	// meets the orders of an earlier run.
	d.runID = "demo-" + strconv.FormatInt(time.Now().UnixMilli(), 36)
	rng := rand.New(rand.NewPCG(uint64(s.Seed), 0x5eed))
	d.orders = make([]demoOrder, s.Orders)
	d.refunded = make([]bool, s.Orders)
	for i := range d.orders {
		d.orders[i].id = fmt.Sprintf("%s-%05d", d.runID, i+1)
		d.orders[i].amount = 500 + 50*rng.Int64N(390) // 5.00 .. 199.50
		d.orders[i].decline = s.DeclineEvery > 0 && rng.IntN(s.DeclineEvery) == 0
		d.orders[i].method = s.Provider.good
		if d.orders[i].decline {
			d.orders[i].method = s.Provider.declines[0]
			if n := len(s.Provider.declines); n > 1 {
				d.orders[i].method = s.Provider.declines[rng.IntN(n)]
			}
		}
	}
	ok = true
	return d, nil
}

func (d *demo) close() {
	d.prog.stop()
	// The fake first: closing it stops its webhook sender, so that no
	// delivery is cut half-way by the receiver closing.
	if d.fake != nil {
		d.fake.Close()
	}
	d.recv.close()
	if d.ledger != nil {
		d.ledger.Close()
	}
	if d.tempDir != "" {
		_ = os.RemoveAll(d.tempDir)
	}
}

// run charges, refunds and reconciles until every operation is settled.
func (d *demo) run(ctx context.Context) error {
	d.prog.start("calling", d.s.Orders+d.s.Refunds)
	var reserved atomic.Int64
	var mu sync.Mutex
	d.parallel(ctx, len(d.orders), func(i int) {
		o := &d.orders[i]
		_, err := d.client.Charge(ctx, d.chargeParams(o))
		d.prog.add(1)
		if err != nil {
			d.noteErr("charge "+o.id, err)
			return
		}
		o.charged.Store(true)
		if reserved.Add(1) > int64(d.s.Refunds) {
			return
		}
		mu.Lock()
		d.refunded[i] = true
		mu.Unlock()
		_, err = d.client.Refund(ctx, d.refundParams(o))
		d.noteErr("refund "+o.id, err)
		d.prog.add(1)
	})
	d.prog.done(fmt.Sprintf("%d charge calls and %d refund calls returned", d.s.Orders, min(int(reserved.Load()), d.s.Refunds)))
	if ctx.Err() != nil {
		return ctx.Err()
	}

	deadline := time.Now().Add(max(2*time.Minute, 6*d.s.KeyTTL))
	for round := 0; ; round++ {
		if err := d.settle(ctx, deadline); err != nil {
			return err
		}
		// Top up the refunds with charges the reconciler settled.
		todo, err := d.moreRefunds(ctx)
		if err != nil {
			return err
		}
		if len(todo) == 0 || round == 3 {
			return d.flushWebhooks(ctx)
		}
		d.prog.start("refunding", len(todo))
		d.parallel(ctx, len(todo), func(j int) {
			o := &d.orders[todo[j]]
			_, err := d.client.Refund(ctx, d.refundParams(o))
			d.noteErr("refund "+o.id, err)
			d.prog.add(1)
		})
		d.prog.done(fmt.Sprintf("called %d more refunds of charges the reconciler settled", len(todo)))
	}
}

func (d *demo) chargeParams(o *demoOrder) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: o.id, Amount: o.amount, Currency: d.s.Provider.currency, PaymentMethod: o.method, Customer: d.s.Provider.customer}
}

// refundParams refunds the whole charge, with its amount given: YooKassa
// refunds need one.
func (d *demo) refundParams(o *demoOrder) payonce.RefundParams {
	return payonce.RefundParams{OrderID: o.id, RefundSeq: 1, Amount: o.amount, Currency: d.s.Provider.currency}
}

// parallel runs fn(0..n-1) on the configured number of workers.
func (d *demo) parallel(ctx context.Context, n int, fn func(int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(d.s.Concurrency, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				fn(i)
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

// flushWebhooks waits until the fake has delivered (or given up on) every
// webhook it queued, so that the report counts all of them: the ones that
// arrive after everything settled only confirm, or settle an operation in
// review.
func (d *demo) flushWebhooks(ctx context.Context) error {
	if d.recv == nil {
		return nil
	}
	d.prog.start("delivering webhooks", 0)
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := d.fake.FlushWebhooks(fctx)
	st := d.fake.WebhookStats()
	d.prog.done(fmt.Sprintf("webhooks: %d events sent, %d deliveries", st.Queued, st.Delivered))
	if err != nil {
		return fmt.Errorf("waiting for the fake's webhooks: %w", err)
	}
	return nil
}

// moreRefunds picks orders whose charge the reconciler settled as
// succeeded, to reach the number of refunds asked for.
func (d *demo) moreRefunds(ctx context.Context) ([]int, error) {
	want := d.s.Refunds
	for _, r := range d.refunded {
		if r {
			want--
		}
	}
	if want <= 0 {
		return nil, nil
	}
	var todo []int
	for i := range d.orders {
		if len(todo) == want {
			break
		}
		if d.refunded[i] {
			continue
		}
		id, err := payonce.Identity{Provider: d.s.Provider.name, Kind: payonce.KindCharge, References: []string{d.orders[i].id}}.OperationID()
		if err != nil {
			return nil, err
		}
		op, _, err := d.ledger.store.Get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("reading order %s: %w", d.orders[i].id, err)
		}
		if op.Status == ledger.StatusSucceeded {
			d.refunded[i] = true
			todo = append(todo, i)
		}
	}
	return todo, nil
}

// settle runs reconciler passes until no operation of the run is pending,
// unknown or in flight, waiting between passes exactly until the next one
// comes due.
func (d *demo) settle(ctx context.Context, deadline time.Time) error {
	d.prog.start("reconciling", 0)
	for {
		rep, err := d.rec.RunOnce(ctx)
		if err != nil {
			return err
		}
		d.passes++
		d.claimed += rep.Claimed
		d.settled += rep.Settled
		open, next, err := d.open(ctx)
		if err != nil {
			return err
		}
		if open == 0 {
			d.prog.done(fmt.Sprintf("reconciled: %d passes claimed %d operations, settled %d", d.passes, d.claimed, d.settled))
			return nil
		}
		wait := time.Until(next)
		d.prog.status(fmt.Sprintf("%d operations open", open), next)
		if time.Now().After(deadline) {
			d.prog.done("")
			return fmt.Errorf("%d operations still open when the demo's time ran out", open)
		}
		if rep.Claimed > 0 && wait <= 0 {
			continue
		}
		// With webhooks an operation may settle at any moment, not only
		// when it comes due: look again sooner.
		most := time.Second
		if d.recv != nil {
			most = 250 * time.Millisecond
		}
		wait = min(max(wait, 20*time.Millisecond), most)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			d.prog.done("")
			return ctx.Err()
		case <-t.C:
		}
	}
}

// open counts the run's operations that are not terminal, and returns the
// earliest time one of them is due.
func (d *demo) open(ctx context.Context) (int, time.Time, error) {
	n := 0
	var next time.Time
	for _, st := range []ledger.Status{ledger.StatusPending, ledger.StatusUnknown, ledger.StatusInFlight} {
		ops, err := d.listAll(ctx, ledger.ListFilter{Status: st, Provider: d.s.Provider.name})
		if err != nil {
			return 0, next, err
		}
		for _, op := range ops {
			n++
			due := op.NextCheckAt
			if st == ledger.StatusInFlight && op.LeaseExpiresAt.After(due) {
				due = op.LeaseExpiresAt
			}
			if next.IsZero() || due.Before(next) {
				next = due
			}
		}
	}
	return n, next, nil
}

// listAll lists every operation of this run matching f, page by page.
func (d *demo) listAll(ctx context.Context, f ledger.ListFilter) ([]ledger.Operation, error) {
	var out []ledger.Operation
	f.Limit = ledger.MaxLimit
	for {
		ops, err := d.ledger.store.List(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("listing operations: %w", err)
		}
		for _, op := range ops {
			if len(op.References) > 0 && len(op.References[0]) > len(d.runID) && op.References[0][:len(d.runID)] == d.runID {
				out = append(out, op)
			}
		}
		if len(ops) < f.Limit {
			return out, nil
		}
		f.AfterID = ops[len(ops)-1].ID
	}
}
