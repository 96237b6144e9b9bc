package providertest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// The soak's shape.
const (
	// soakFaultShare of the requests that move money meet a fault, spread
	// evenly over soakFaults.
	soakFaultShare = 0.20
	soakWorkers    = 12
	// soakAttemptTimeout is below the fake's hangs, and long enough for a
	// lookup on a loaded machine.
	soakAttemptTimeout = 2 * time.Second
	soakHangFor        = 5 * time.Second
	soakSlowFor        = 100 * time.Millisecond
	// soakFakeLag is how far the fake's search lags behind (where it has
	// one, Env.FakeLag): well inside the adapter's declared LookupLag.
	soakFakeLag = 10 * time.Second
	// soakEarlyRounds settle inside the key windows (past leases, lags and
	// check intervals each); later rounds jump past the key windows, so
	// what is still unknown goes to review.
	soakEarlyRounds = 5
	soakMaxRounds   = 40
	// soakSettleFor bounds the settling on the real clock; it only stops a
	// loop that would not end.
	soakSettleFor = 3 * time.Minute
	// soakReviewPasses bounds the reconciler passes over operations in
	// review.
	soakReviewPasses = 5
)

// soakOp is one operation of the soak and what its latest call said.
type soakOp struct {
	kind    payonce.Kind
	order   string
	amount  int64
	decline bool
	id      string
	res     payonce.Result
	err     error
	calls   int
}

func soakRates() map[mocks.FaultKind]float64 {
	rates := make(map[mocks.FaultKind]float64, len(soakFaults))
	for _, k := range soakFaults {
		rates[k] = soakFaultShare / float64(len(soakFaults))
	}
	return rates
}

// SoakConfig sizes a soak and says where its ledger lives.
type SoakConfig struct {
	// Name labels the run in the log line; empty: the provider's name.
	Name string
	// Charges, Refunds and Declines count the operations: Charges orders
	// are charged, Declines of them (spread evenly) with a payment method
	// that is declined, and Refunds of those that succeeded at once are
	// refunded in full.
	Charges, Refunds, Declines int
	// NewStore opens a fresh, migrated ledger, closed when the test ends;
	// nil: NewSQLiteStore.
	NewStore func(testing.TB) ledger.Store
}

// testSoak is the suite's soak scenario: SQLite, 300 charges and 100
// refunds (120 and 40 with -short).
func testSoak(t *testing.T, s *suite) {
	size := SoakConfig{Charges: 300, Refunds: 100, Declines: 6}
	if testing.Short() {
		size = SoakConfig{Charges: 120, Refunds: 40, Declines: 4}
	}
	soak(t, s, size)
}

// Soak runs the suite's soak scenario alone, sized by cfg and on its
// ledger, against the environment newEnv builds (as for Run): the root
// package runs it on PostgreSQL at a larger size. See soak.
func Soak(t *testing.T, newEnv func(t *testing.T, o Options) *Env, cfg SoakConfig) {
	t.Helper()
	soak(t, &suite{newEnv: newEnv, name: ScenarioSoak, newStore: cfg.NewStore}, cfg)
}

// soak charges and refunds through a fake that fails a fifth of the
// requests that move money, in every way mocks knows, with a lagging search
// where the fake has one, then settles every operation the way a caller
// without the background reconciler does (calling again with the same
// identity while the clock moves past leases and lags, then past the key
// windows), lets the reconciler look up what went to review, and checks the
// fake's truth: no operation charged or refunded twice, no refund beyond
// its charge, every operation succeeded, failed or in review, no attempt
// sent after its key window, and the ledger in agreement with what the
// provider did (CheckLedger).
func soak(t *testing.T, s *suite, size SoakConfig) {
	began := time.Now()
	b := newBench(t, s, setup{
		opts: func(o *Options) {
			o.Seed = 7
			o.FaultRates = soakRates()
			o.HangFor = soakHangFor
			o.SlowFor = soakSlowFor
			o.FakeLag = soakFakeLag
		},
		config: func(c *payonce.Config) {
			c.AttemptTimeout = soakAttemptTimeout
			c.SafetyMargin = max(time.Minute, defaultKeyTTL/100) + soakAttemptTimeout
			// A Retry-After beyond 200 ms ends the call; the next round
			// picks the operation up.
			c.Retry = payonce.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetryAfter: 200 * time.Millisecond}
			// A breaker that opens on a run of faults and recovers within
			// the test's time (gobreaker runs on the real clock).
			c.Breaker = payonce.BreakerSettings{ConsecutiveFailures: 8, OpenFor: 50 * time.Millisecond}
		},
	})
	ctx := b.ctx
	name := size.Name
	if name == "" {
		name = b.env.Provider.Name()
	}

	// Phase 1: every charge once; a worker whose charge succeeded at once
	// refunds it in full until the refund quota is reached, so charges and
	// refunds run side by side.
	charges := make([]*soakOp, size.Charges)
	every := size.Charges / size.Declines
	for i := range charges {
		op := &soakOp{kind: payonce.KindCharge, order: fmt.Sprintf("soak-%05d", i), amount: int64(1000 + i), decline: i%every == every/2}
		op.id = b.opID(payonce.KindCharge, op.order)
		charges[i] = op
	}
	var (
		mu       sync.Mutex
		refunds  []*soakOp
		reserved atomic.Int64
	)
	soakRun(ctx, charges, func(op *soakOp) {
		b.soakCall(ctx, op)
		if op.res.Status != payonce.ResultSucceeded || reserved.Add(1) > int64(size.Refunds) {
			return
		}
		r := &soakOp{kind: payonce.KindRefund, order: op.order, amount: op.amount}
		r.id = b.opID(payonce.KindRefund, op.order, "1")
		mu.Lock()
		refunds = append(refunds, r)
		mu.Unlock()
		b.soakCall(ctx, r)
	})
	require.Len(t, refunds, size.Refunds, "enough charges succeeded at once to refund")
	all := append(append([]*soakOp(nil), charges...), refunds...)
	firstCall := soakCount(all)

	// Phase 2: settle. Call again with the same identity whatever is not
	// yet terminal, moving the shared clock between rounds.
	rounds := 0
	deadline := time.Now().Add(soakSettleFor)
	for {
		open := soakOpen(all)
		if len(open) == 0 {
			break
		}
		if rounds >= soakMaxRounds || time.Now().After(deadline) {
			msg := soakDescribe(open, 5)
			for _, o := range open[:min(3, len(open))] {
				if op, atts, err := b.store.Get(ctx, o.id); err == nil {
					msg += "\n" + Describe(op, atts)
				}
			}
			require.FailNow(t, fmt.Sprintf("still open after %d rounds", rounds), msg)
		}
		rounds++
		if rounds <= soakEarlyRounds {
			b.pastLag()
		} else {
			b.pastWindow()
			// The breaker runs on the real clock: let it close.
			time.Sleep(60 * time.Millisecond)
		}
		b.awaitWebhooks()
		soakRun(ctx, open, func(op *soakOp) { b.soakCall(ctx, op) })
	}
	var unexpected []*soakOp
	for _, op := range all {
		if op.err != nil && !errors.Is(op.err, payonce.ErrDeclined) && !errors.Is(op.err, payonce.ErrManualReview) {
			unexpected = append(unexpected, op)
		}
	}
	require.Empty(t, unexpected, "calls ended with unexpected errors: %s", soakDescribe(unexpected, 10))
	for _, o := range all {
		op, _, err := b.store.Get(ctx, o.id)
		require.NoError(t, err)
		require.Equal(t, string(op.Status), string(o.res.Status), "operation %s: the last call reported the ledger's status", o.id)
	}
	settled := soakCount(all)

	// Phase 3: the reconciler's read-only lookups of operations in review
	// (as in production). A lookup that failed once the key window had
	// passed sent an operation to review although its payment exists; a
	// later lookup settles it. Nothing is ever sent again.
	posts := b.allPosts()
	rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: b.store, Clients: []*payonce.Client{b.client}, Now: b.clock.Now})
	require.NoError(t, err)
	resolved := 0
	for range soakReviewPasses {
		b.clock.Advance(2 * time.Hour) // past every review's next check
		rep, err := rec.RunOnce(ctx)
		require.NoError(t, err)
		require.Zero(t, rep.ErrorCount, "reconciler errors: %v", rep.Errors)
		resolved += rep.Settled
		if rep.Settled == 0 {
			break
		}
	}
	require.Equal(t, posts, b.allPosts(), "review lookups never post")

	// The ledger, in agreement with what the fake really did.
	truth := b.truth()
	expect := make(map[string]Expected, len(all))
	for _, o := range all {
		expect[o.id] = Expected{Kind: o.kind, Order: o.order, Amount: o.amount, Decline: o.decline}
	}
	checked := CheckLedger(t, ctx, Check{
		Store: b.store, Truth: truth, Expect: expect, Margin: b.cfg.SafetyMargin,
		PaymentOperation: b.env.PaymentOperation, RefundOperation: b.env.RefundOperation,
		NoLookupWithoutRef: b.env.RepeatIsLookup,
	})
	outcomes := map[string]int{} // attempts per outcome class
	final := map[string]int{}
	for _, c := range checked {
		final[c.Op.Kind+" "+string(c.Op.Status)]++
		for _, a := range c.Attempts {
			outcomes[string(a.Outcome)]++
		}
		if c.Expected.Kind == payonce.KindRefund && c.Op.Status == ledger.StatusFailed {
			require.Fail(t, "a full refund of a succeeded charge was refused", "%s: %s", c.Expected.Order, Describe(c.Op, c.Attempts))
		}
	}

	var faults []string
	total := 0
	for k, n := range truth.Faults {
		faults = append(faults, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(faults)
	t.Logf("soak %s: %d charges, %d refunds in %s, %d settle rounds; first call %s; settled by calls %s; settled by the reconciler %d; final [%s]; faults %d [%s]; attempts [%s]; POSTs %d, replays %d, key in use %d; double charges 0, double refunds 0",
		name, size.Charges, size.Refunds, time.Since(began).Round(time.Millisecond), rounds,
		firstCall, settled, resolved, joinCounts(final), total, strings.Join(faults, " "), joinCounts(outcomes), posts, truth.Replays, truth.KeyInUse)
}

// soakCall makes one call for op with its identity and records the answer.
func (b *bench) soakCall(ctx context.Context, op *soakOp) {
	op.calls++
	switch op.kind {
	case payonce.KindCharge:
		p := b.charge(op.order, op.amount)
		if op.decline {
			p.PaymentMethod = b.env.DeclinedMethod
		}
		op.res, op.err = b.client.Charge(ctx, p)
	case payonce.KindRefund:
		op.res, op.err = b.client.Refund(ctx, b.refund(op.order, 1, op.amount))
	}
}

// soakRun runs fn on every op with soakWorkers workers.
func soakRun(ctx context.Context, ops []*soakOp, fn func(*soakOp)) {
	jobs := make(chan *soakOp)
	var wg sync.WaitGroup
	for range soakWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := range jobs {
				fn(op)
			}
		}()
	}
	for _, op := range ops {
		if ctx.Err() != nil {
			break
		}
		jobs <- op
	}
	close(jobs)
	wg.Wait()
}

// soakOpen returns the operations whose last call left them unsettled.
func soakOpen(ops []*soakOp) []*soakOp {
	var open []*soakOp
	for _, op := range ops {
		switch op.res.Status {
		case payonce.ResultSucceeded, payonce.ResultFailed, payonce.ResultManualReview:
		default:
			open = append(open, op)
		}
	}
	return open
}

// soakCount renders the statuses of ops per kind, e.g.
// "charge{succeeded=290 unknown=10} refund{...}".
func soakCount(ops []*soakOp) string {
	counts := map[payonce.Kind]map[string]int{}
	for _, op := range ops {
		if counts[op.kind] == nil {
			counts[op.kind] = map[string]int{}
		}
		name := string(op.res.Status)
		if name == "" {
			name = "none"
		}
		counts[op.kind][name]++
	}
	var parts []string
	for _, k := range []payonce.Kind{payonce.KindCharge, payonce.KindRefund} {
		parts = append(parts, string(k)+"{"+joinCounts(counts[k])+"}")
	}
	return strings.Join(parts, " ")
}

func joinCounts(m map[string]int) string {
	var s []string
	for k, n := range m {
		if k == "" {
			k = "unfinished"
		}
		s = append(s, k+"="+strconv.Itoa(n))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func soakDescribe(ops []*soakOp, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d operations", len(ops))
	for i, op := range ops {
		if i == n {
			b.WriteString("\n  ...")
			break
		}
		fmt.Fprintf(&b, "\n  %s %s (%s): status %q after %d calls, error %v", op.kind, op.order, op.id, op.res.Status, op.calls, op.err)
	}
	return b.String()
}
