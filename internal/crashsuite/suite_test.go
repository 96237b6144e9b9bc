package crashsuite

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/mocks"
)

var longFlag = flag.Bool("long", false, "run the long crash suite (10,000+ operations); same as PAYONCE_CRASH_LONG=1")

// Environment of the driver.
const (
	// envLong=1 runs the long suite.
	envLong = "PAYONCE_CRASH_LONG"
	// envSeed fixes the seed (work list, kill schedule, fake's faults);
	// otherwise it is random and logged.
	envSeed = "PAYONCE_CRASH_SEED"
	// envLogDir, when set, names a directory where every child's stdout
	// and stderr (head and tail) are saved at the end.
	envLogDir = "PAYONCE_CRASH_LOGDIR"
)

// suiteSize is how much one run does.
type suiteSize struct {
	name        string
	orders      int
	workers     int
	concurrency int // calls at once per worker
	kills       int
	// gapMin..gapMax is the wait before each kill; restartMin..restartMax
	// how long a killed worker stays down.
	gapMin, gapMax         time.Duration
	restartMin, restartMax time.Duration
	// spread is how long the orders take to arrive (see arrivals).
	spread time.Duration
	// budget bounds the work phase (all workers done after the last kill);
	// settle bounds the wait until every operation is terminal.
	budget, settle time.Duration
	// Every webhookKillEvery-th kill (the 2nd, the 5th, ...) is a kill
	// between a receiver's commit of an event and its reply (see
	// killAfterCommit); 0: none.
	webhookKillEvery int
}

func pickSize() suiteSize {
	s := suiteSize{
		name: "ci", orders: 1200, workers: 4, concurrency: 6, kills: 8,
		gapMin: 2 * time.Second, gapMax: 5 * time.Second,
		restartMin: 200 * time.Millisecond, restartMax: 2 * time.Second,
		spread: 30 * time.Second, budget: 5 * time.Minute, settle: 3 * time.Minute,
		webhookKillEvery: 3,
	}
	switch {
	case *longFlag || os.Getenv(envLong) == "1":
		s.name, s.orders, s.kills = "long", 8000, 30
		s.gapMax = 6 * time.Second
		s.spread, s.budget, s.settle = 2*time.Minute, 20*time.Minute, 5*time.Minute
	case testing.Short():
		s.name, s.orders, s.kills = "short", 300, 4
		s.gapMin, s.gapMax = 1500*time.Millisecond, 3*time.Second
		s.spread = 10 * time.Second
	}
	return s
}

// Timing shared by the fake and the workers. The key TTL is short, so that
// key windows pass during the run: an operation still unknown 18 s after its
// first attempt goes to review, and no attempt may start after that. The
// fake runs on the same machine's clock, so the clock-skew allowance is
// small; the safety margin is at least one attempt timeout plus it, as the
// library requires (payonce.Config.SafetyMargin).
const (
	keyTTL         = 20 * time.Second
	clockSkew      = time.Second
	safetyMargin   = 2 * time.Second
	searchLag      = 2 * time.Second
	attemptTimeout = 300 * time.Millisecond
	checkInterval  = 500 * time.Millisecond
	leaseDuration  = 2 * time.Second
	reconcileEvery = 250 * time.Millisecond
)

// suiteFaults injects a fault into about 20 % of the requests, every kind
// the fake knows, lookups (GETs) included.
func suiteFaults() faultRates {
	return faultRates{
		mocks.FaultDropAfterProcessing.String(): 0.03,
		mocks.FaultHangAfterProcessing.String(): 0.03,
		mocks.FaultGatewayBefore502.String():    0.03,
		mocks.FaultGatewayAfter502.String():     0.03,
		mocks.FaultRateLimit429.String():        0.02,
		mocks.FaultSlow.String():                0.03,
		mocks.FaultStored500.String():           0.015,
		mocks.FaultProcessed500.String():        0.015,
	}
}

// suiteWebhooks is how the fake delivers its events: a little late, some
// twice, some out of order, some attempts failing on the way, and retried
// for long enough (40 attempts, backoff from 100 ms up to 1.6 s: about a
// minute) to outlast every receiver being down during the PostgreSQL
// outage. Stripe itself retries for up to three days
// (https://docs.stripe.com/webhooks#retries); the fake must give up
// within a test.
func suiteWebhooks(url, secret string) mocks.WebhookDelivery {
	return mocks.WebhookDelivery{
		URL: url, Secret: secret,
		Delay:         100 * time.Millisecond,
		DuplicateRate: 0.05, FailRate: 0.05, ReorderRate: 0.05,
		MaxAttempts: 40, RetryAfter: 100 * time.Millisecond,
	}
}

// webhookForgeRate is the share of deliveries the front also sends forged
// (see webhookFront).
const webhookForgeRate = 0.02

// suiteStats counts what the driver did.
type suiteStats struct {
	kills, killsWorking, restarts, pgRestarts int
	// killsAfterCommit counts the kills between a receiver's commit and
	// its reply (every kill kills a receiver: they run in the workers).
	killsAfterCommit int
	// outageFrom..outageTo is when PostgreSQL was down (stop to start).
	outageFrom, outageTo time.Time
	// callRetries counts calls the workers made again because they failed
	// without an outcome (markerCallRetry), in every incarnation.
	callRetries int
	// refundsSkipped counts the refunds a worker did not ask for because
	// the charge had not succeeded in time (markerRefundSkipped), keyed by
	// the charge's status then.
	refundsSkipped map[string]int
	// ledgerErrors counts the log lines of the children about failed ledger
	// calls (while PostgreSQL was down).
	ledgerErrors           int
	workPhase, settlePhase time.Duration
	reviewsLeftWithObject  int
}

// TestCrashSuite runs the crash-and-fault suite: a fake Stripe in its own
// process failing a fifth of the requests, several worker processes charging
// and refunding a shared work list on a private PostgreSQL cluster, random
// SIGKILLs and restarts of workers, one PostgreSQL restart, then
// reconciliation until nothing is due; and it checks that money moved at
// most once per operation, in agreement with the ledger. See doc.go.
func TestCrashSuite(t *testing.T) {
	size := pickSize()
	seed := time.Now().UnixNano() % 1_000_000_000
	if s := os.Getenv(envSeed); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", envSeed, s, err)
		}
	}
	prov, err := suiteProvider()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("crashsuite %s on %s: seed %d (repeat with %s=%d)", size.name, prov.name, seed, envSeed, seed)
	start := time.Now()

	pg := startPostgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pcfg, err := pgxpool.ParseConfig(pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	pcfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	const schema = "crashsuite"
	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}

	front, err := startWebhookFront(seed, webhookForgeRate, prov)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(front.close)

	work := workConfig{Provider: prov.name, Seed: seed, Orders: size.orders, Workers: size.workers, DeclineEvery: 40, RefundShare: 0.3, OverShare: 0.1}
	jobs, err := work.jobs()
	if err != nil {
		t.Fatal(err)
	}
	cfg := childConfig{
		Work: work, Provider: prov.name,
		FakeSeed: seed, FaultRates: suiteFaults(), FaultGETs: true,
		// Hangs and slow answers both outlast the client's timeout: the
		// slow request is processed after the client gave up on it.
		HangFor: time.Second, SlowFor: 2 * attemptTimeout, RetryAfter: time.Second,
		KeyTTL: keyTTL, FakeSearchLag: searchLag,
		PGURL: pg.URL(), Schema: schema, Concurrency: size.concurrency,
		AttemptTimeout: attemptTimeout, SafetyMargin: safetyMargin, ClockSkew: clockSkew, SearchLag: searchLag,
		CheckInterval: checkInterval, LeaseDuration: leaseDuration, ReconcileEvery: reconcileEvery,
		ChargeWait: 2 * keyTTL,
		// A signing secret of this run only (where the provider signs
		// with one): the fake signs with it, the receivers verify.
		Webhooks: suiteWebhooks(front.url, prov.webhookSecret()),
	}

	fake := startChild(t, "fake", modeFake, cfg)
	ready := strings.Fields(fake.waitLine(t, markerFakeReady, time.Minute))
	if len(ready) != 3 {
		t.Fatalf("fake's ready line %q", ready)
	}
	cfg.FakeURL, cfg.APIKey = ready[1], ready[2]
	cfg.Epoch, cfg.Spread = time.Now(), size.spread

	workers := make([]*child, size.workers)
	incarnation := make([]int, size.workers)
	children := []*child{fake} // every process started, for the final scan
	startWorker := func(i int) {
		wc := cfg
		wc.Index = i
		incarnation[i]++
		workers[i] = startChild(t, fmt.Sprintf("worker %d#%d", i, incarnation[i]), modeWorker, wc)
		children = append(children, workers[i])
	}
	for i := range workers {
		startWorker(i)
	}
	// watch fails the test at once if a child died on its own (a panic, a
	// race report, a setup failure), makes the receivers that came up
	// since known to the webhook front, and otherwise waits d.
	watch := func(d time.Duration) {
		t.Helper()
		end := time.Now().Add(d)
		for {
			for _, c := range append([]*child{fake}, workers...) {
				if err := c.UnexpectedExit(); err != nil {
					t.Fatal(err)
				}
			}
			for i, w := range workers {
				front.register(i, w)
			}
			if !time.Now().Before(end) {
				return
			}
			time.Sleep(min(50*time.Millisecond, time.Until(end)))
		}
	}

	// The kill schedule: seeded, so a failing run can be repeated.
	var st suiteStats
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	between := func(a, b time.Duration) time.Duration { return a + time.Duration(rng.Int64N(int64(b-a)+1)) }
	// PostgreSQL goes down once, at a random kill of the first half of the
	// schedule, or earlier if half the workers are done charging: the
	// outage must meet calls.
	pgAt := 1 + rng.IntN(max(1, size.kills/2))
	for k := range size.kills {
		watch(between(size.gapMin, size.gapMax))
		charging := 0
		for _, w := range workers {
			if _, ok := w.Stdout().Line(markerWorkerCharged); !ok {
				charging++
			}
		}
		if st.pgRestarts == 0 && (k >= pgAt || 2*charging <= size.workers) {
			// Down for a few seconds: calls fail, operations stay pending
			// or unknown, the workers keep running.
			t0 := time.Now()
			down := between(time.Second, 4*time.Second)
			if err := pg.Restart(func() { watch(down) }); err != nil {
				t.Fatal(err)
			}
			st.outageFrom, st.outageTo = t0, time.Now()
			st.pgRestarts++
			t.Logf("+%s PostgreSQL restarted (%d workers were charging): down %s, %s in all", time.Since(start).Round(time.Millisecond),
				charging, down.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
		}
		i := rng.IntN(size.workers)
		moment := "at random"
		var held *frontHold
		if size.webhookKillEvery > 0 && k%size.webhookKillEvery == 1 {
			// The receiver that answers the next delivery with a 2xx is
			// killed before its answer leaves the front.
			if h, hd, ok := killAfterCommit(front, watch); ok {
				held, i = h, hd.worker
				moment = fmt.Sprintf("after its receiver committed webhook %s, before the reply", hd.eventID)
				st.killsAfterCommit++
			}
		}
		_, done := workers[i].Stdout().Line(markerWorkerDone)
		phase := "reconciling"
		if !done {
			phase = "working"
			st.killsWorking++
		}
		workers[i].kill(t)
		front.remove(i)
		if held != nil {
			close(held.release) // the front drops the answer
		}
		st.kills++
		down := between(size.restartMin, size.restartMax)
		t.Logf("+%s SIGKILL %s while %s, %s; restarting in %s", time.Since(start).Round(time.Millisecond), workers[i].Name(), phase, moment, down.Round(time.Millisecond))
		watch(down)
		startWorker(i)
		st.restarts++
	}

	// Every worker finishes its list (a restarted one goes through it again).
	deadline := time.Now().Add(size.budget)
	for {
		n := 0
		for _, w := range workers {
			if _, ok := w.Stdout().Line(markerWorkerDone); ok {
				n++
			}
		}
		if n == len(workers) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d workers finished their work lists within %v", n, len(workers), size.budget)
		}
		watch(100 * time.Millisecond)
	}
	st.workPhase = time.Since(start)
	for _, w := range workers {
		l, _ := w.Stdout().Line(markerWorkerDone)
		t.Logf("%s done: %s", w.Name(), strings.TrimPrefix(l, markerWorkerDone+" "))
	}

	// The reconcilers run until nothing is due: every operation succeeded,
	// failed or in review (what is still unknown when its key window passes
	// goes to review by the decision table).
	settleStart := time.Now()
	deadline = time.Now().Add(size.settle)
	for {
		open, err := countOpen(ctx, store)
		if err == nil && open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("operations still open %v after the work: %d (%v)", size.settle, open, err)
			break
		}
		watch(200 * time.Millisecond)
	}
	// Every webhook is delivered: a 2xx for each event and each duplicate
	// (or the sender gave up, which the invariants report).
	deadline = time.Now().Add(time.Minute)
	for {
		obs, err := fetchObserved(ctx, cfg.FakeURL)
		if err == nil && webhooksSettled(obs.Webhooks) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("webhooks still being delivered a minute after the work: %+v (%v)", obs.Webhooks, err)
			break
		}
		watch(100 * time.Millisecond)
	}
	// Operations in review whose object the provider does hold are settled
	// by the reconcilers' read-only lookups; give them a little time. What
	// is left stays in review, which is allowed (and reported).
	deadline = time.Now().Add(30 * time.Second)
	for {
		truth, err := fetchTruth(ctx, cfg.FakeURL)
		if err != nil {
			t.Fatalf("fetching the truth: %v", err)
		}
		var reviews []ledger.Operation
		err = retry(ctx, 30*time.Second, func() (err error) {
			reviews, err = store.ListReview(ctx, ledger.ReviewFilter{Limit: ledger.MaxLimit})
			return err
		})
		if err != nil {
			t.Fatalf("listing reviews: %v", err)
		}
		st.reviewsLeftWithObject = 0
		has := objectsByOp(prov, truth)
		for _, op := range reviews {
			if has[op.ID] {
				st.reviewsLeftWithObject++
			}
		}
		if st.reviewsLeftWithObject == 0 || time.Now().After(deadline) {
			break
		}
		watch(500 * time.Millisecond)
	}
	st.settlePhase = time.Since(settleStart)
	for _, w := range workers {
		w.terminate(t, 30*time.Second)
	}

	truth, err := fetchTruth(ctx, cfg.FakeURL)
	if err != nil {
		t.Fatalf("fetching the truth: %v", err)
	}
	wh := webhookInput{front: front.stats(), receivers: map[string]*receiverEvents{}, outageFrom: st.outageFrom, outageTo: st.outageTo,
		verifiesAtProvider: prov.verifiesAtProvider}
	if wh.observed, err = fetchObserved(ctx, cfg.FakeURL); err != nil {
		t.Fatalf("fetching the fake's observations: %v", err)
	}
	// The audit of the fake (Client.Audit, as "payonce audit" runs it),
	// while the fake still serves: its own records against the ledger over
	// the run's period. Again from the start when it fails (the driver's
	// connections may predate the database restart): a failed audit
	// compared nothing, and its differences so far are dropped with it.
	var auditBad violations
	var aud auditSummary
	err = retry(ctx, 30*time.Second, func() (err error) {
		auditBad = violations{}
		aud, err = auditFake(ctx, prov, store, cfg.FakeURL, cfg.APIKey, start.Add(-time.Minute), time.Now().Add(time.Minute), &auditBad)
		return err
	})
	if err != nil {
		t.Errorf("%v", err)
	}
	if prov.auditSkip != "" {
		t.Logf("the audit of the fake %s does not run: %s", prov.name, prov.auditSkip)
	}
	fake.terminate(t, 30*time.Second)
	front.close()
	// A killed child's exit status says nothing: look for what the race
	// detector or the runtime wrote.
	logDir := os.Getenv(envLogDir)
	for i, c := range children {
		if logDir != "" {
			name := filepath.Join(logDir, fmt.Sprintf("%02d-%s", i, strings.NewReplacer(" ", "-", "#", "-").Replace(c.Name())))
			_ = os.WriteFile(name+".stdout", []byte(c.Stdout().String()), 0o644)
			_ = os.WriteFile(name+".stderr", []byte(c.Stderr().String()), 0o644)
		}
		st.ledgerErrors += c.Stderr().Count(ledgerErrorMark)
		st.callRetries += c.Stdout().Count(markerCallRetry)
		markSkippedRefunds(c.Stdout().Lines(), jobs, &st)
		parseReceiverEvents(c.Stdout().Lines(), wh.receivers)
		if e := c.Stderr().String(); strings.Contains(e, "WARNING: DATA RACE") || strings.Contains(e, "panic:") || strings.Contains(e, "fatal error:") {
			t.Errorf("%s reported a race or a crash:\n%s", c.Name(), e)
		}
	}
	view, err := readLedger(ctx, store)
	if err != nil {
		t.Fatalf("reading the ledger: %v", err)
	}
	if err := readWebhooks(ctx, pool, schema, &view); err != nil {
		t.Fatalf("reading the webhook inbox: %v", err)
	}
	sum := check(t, prov, jobs, truth, view, wh)
	auditBad.report(t)
	sum.audit = aud
	for _, ex := range auditBad.byKind {
		sum.broken += len(ex)
	}
	line := sum.line(size.name+" "+prov.name, seed, st, time.Since(start))
	t.Log(line)
	fmt.Println(line)
}

// countOpen counts operations that are not terminal (capped per status).
func countOpen(ctx context.Context, store ledger.Store) (int, error) {
	n := 0
	for _, s := range []ledger.Status{ledger.StatusPending, ledger.StatusInFlight, ledger.StatusUnknown} {
		ops, err := store.List(ctx, ledger.ListFilter{Status: s, Limit: 1000})
		if err != nil {
			return -1, err
		}
		n += len(ops)
	}
	return n, nil
}

// objectsByOp reports the operations the provider holds an object for.
func objectsByOp(prov crashProvider, t mocks.Truth) map[string]bool {
	m := map[string]bool{}
	for _, p := range t.Payments {
		if id := prov.paymentOp(p); id != "" {
			m[id] = true
		}
	}
	for _, r := range t.Refunds {
		if id := prov.refundOp(r); id != "" {
			m[id] = true
		}
	}
	return m
}

// killAfterCommit arms the webhook front and waits up to 1 s for a
// receiver to answer a delivery with a 2xx, which means it has committed
// the event (the handler answers after the commit). It returns the hold and
// the delivery; the caller kills the receiver's worker, then releases the
// hold, and the front drops the answer: the sender sees no reply and
// delivers the event again. ok is false when no delivery came (no events
// flowing; while orders arrive, several a second do): the caller kills at
// random instead.
func killAfterCommit(front *webhookFront, watch func(time.Duration)) (*frontHold, heldDelivery, bool) {
	h := front.arm()
	deadline := time.Now().Add(time.Second)
	for {
		select {
		case hd := <-h.held:
			return h, hd, true
		default:
		}
		if time.Now().After(deadline) {
			if front.disarm(h) {
				return nil, heldDelivery{}, false
			}
			// The front took the hold meanwhile: its delivery is coming.
			return h, <-h.held, true
		}
		watch(5 * time.Millisecond)
	}
}
