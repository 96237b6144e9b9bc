package payonce_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/childproc"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/stripe"
)

// Proof tests of the background work: transactional enqueue, reconcilers in
// separate processes sharing one PostgreSQL ledger, the lookup schedule
// while the provider cannot answer, and a large backlog drained in bounded
// memory. The process-level tests run reconcilers as child processes (see
// reconcile_child_test.go).

// TestEnqueueTxRollback enqueues a charge with ledgerpg's CreateOrGetTx in
// the transaction that writes the order it pays for. Rolled back, neither
// exists and nothing is ever sent; committed, both exist and the reconciler
// sends the charge exactly once. While the transaction is open, the
// operation is invisible to the reconciler.
func TestEnqueueTxRollback(t *testing.T) {
	t.Parallel()
	b, pool, store := setupPGPool(t, setupOpts{})
	orders := pgx.Identifier{store.Schema(), "orders"}.Sanitize()
	_, err := pool.Exec(b.ctx, "CREATE TABLE "+orders+" (id text PRIMARY KEY, amount bigint NOT NULL)")
	require.NoError(t, err)
	countOrders := func() int {
		var n int
		require.NoError(t, pool.QueryRow(b.ctx, "SELECT count(*) FROM "+orders).Scan(&n))
		return n
	}
	r := newReconciler(t, b, nil)
	params := charge("order-tx", 4200)
	op, err := b.client.PrepareCharge(b.ctx, params)
	require.NoError(t, err)

	// enqueue writes the order and its charge in one transaction; while it
	// is open, a reconciler pass (another connection) sees nothing due.
	enqueue := func(commit bool) {
		tx, err := pool.Begin(b.ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(context.Background()) }()
		_, err = tx.Exec(b.ctx, "INSERT INTO "+orders+" (id, amount) VALUES ($1, $2)", params.OrderID, params.Amount)
		require.NoError(t, err)
		got, created, err := store.CreateOrGetTx(b.ctx, tx, op, b.clock.Now())
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, ledger.StatusPending, got.Status)
		require.Equal(t, op.ID, got.ID)

		rep, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Zero(t, rep.Claimed, "an uncommitted operation is invisible to background work")
		if commit {
			require.NoError(t, tx.Commit(b.ctx))
		} else {
			require.NoError(t, tx.Rollback(b.ctx))
		}
	}

	enqueue(false)
	require.Zero(t, countOrders(), "the order was rolled back")
	_, _, err = store.Get(b.ctx, op.ID)
	require.ErrorIs(t, err, ledger.ErrNotFound, "the charge was rolled back with the order")
	for range 3 {
		rep, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Zero(t, rep.Claimed)
		b.clock.Advance(time.Hour)
	}
	truth := b.fake.Truth()
	require.Empty(t, truth.Payments, "nothing was ever sent")
	require.Empty(t, truth.Requests, "the provider was never called")

	enqueue(true)
	require.Equal(t, 1, countOrders())
	got, atts, err := store.Get(b.ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusPending, got.Status)
	require.Empty(t, atts, "recorded, not sent")
	require.Empty(t, b.fake.Truth().Requests, "enqueueing sends nothing")

	rep, err := r.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Claimed)
	require.Equal(t, 1, rep.Settled)
	require.Equal(t, map[string]int{"pending->succeeded": 1}, rep.Transitions)
	for range 3 {
		b.clock.Advance(time.Hour)
		rep, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Zero(t, rep.Claimed, "a settled operation is never claimed again")
	}

	got, atts, err = store.Get(b.ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, got.Status)
	require.Len(t, atts, 1)
	truth = b.fake.Truth()
	require.Equal(t, 1, truth.Requests["POST "+chargePath], "sent once")
	require.Len(t, truth.Payments, 1)
	require.Equal(t, map[string]int{op.ID: 1}, truth.ChargesBy(stripe.MetaOperation))
	require.Equal(t, truth.Payments[0].ID, got.ProviderRef)
	require.Equal(t, op.Key, truth.Payments[0].IdempotencyKey)

	// Enqueued again in a later transaction (a retried request handler):
	// the recorded operation comes back unchanged, nothing is sent.
	tx, err := pool.Begin(b.ctx)
	require.NoError(t, err)
	again, created, err := store.CreateOrGetTx(b.ctx, tx, op, b.clock.Now())
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, ledger.StatusSucceeded, again.Status)
	require.NoError(t, tx.Commit(b.ctx))
	rep, err = r.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Claimed)
	res, err := b.client.Charge(b.ctx, params)
	require.NoError(t, err)
	require.True(t, res.Replayed, "the synchronous call derives the same key: a replay")
	require.Equal(t, 1, b.fake.Truth().Requests["POST "+chargePath])

	// The same order with another amount is refused inside the caller's
	// transaction without aborting it: the business logic decides.
	changed := params
	changed.Amount++
	other, err := b.client.PrepareCharge(b.ctx, changed)
	require.NoError(t, err)
	tx, err = pool.Begin(b.ctx)
	require.NoError(t, err)
	_, _, err = store.CreateOrGetTx(b.ctx, tx, other, b.clock.Now())
	require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
	_, err = tx.Exec(b.ctx, "INSERT INTO "+orders+" (id, amount) VALUES ($1, $2)", "order-tx-note", 0)
	require.NoError(t, err, "the transaction is still usable")
	require.NoError(t, tx.Commit(b.ctx))
	require.Equal(t, 2, countOrders())
	got, _, err = store.Get(b.ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, got.Status)
	require.Equal(t, op.Fingerprint, got.Fingerprint, "unchanged")
}

// inflightTracker wraps the fake Stripe and records, for every POST that
// carries an idempotency key, which worker (reconWorkerHeader) had one in
// flight at the same time as another.
type inflightTracker struct {
	next http.Handler

	mu       sync.Mutex
	inflight map[string]map[string]int // key -> worker -> requests in flight
	senders  map[string]map[string]bool
	// cross lists POSTs of one key in flight from two workers at once: two
	// processes acting on one operation at the same time.
	cross []string
	// self counts overlaps within one worker (the server still finishing a
	// request its client gave up on).
	self int
}

func newInflightTracker(next http.Handler) *inflightTracker {
	return &inflightTracker{next: next, inflight: map[string]map[string]int{}, senders: map[string]map[string]bool{}}
}

func (tr *inflightTracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if r.Method != http.MethodPost || key == "" {
		tr.next.ServeHTTP(w, r)
		return
	}
	worker := r.Header.Get(reconWorkerHeader)
	if worker == "" {
		worker = "parent"
	}
	tr.mu.Lock()
	if tr.inflight[key] == nil {
		tr.inflight[key] = map[string]int{}
		tr.senders[key] = map[string]bool{}
	}
	for other, n := range tr.inflight[key] {
		switch {
		case n == 0:
		case other != worker:
			tr.cross = append(tr.cross, fmt.Sprintf("key %s: %s sent while %s's request was in flight", key, worker, other))
		default:
			tr.self++
		}
	}
	tr.inflight[key][worker]++
	tr.senders[key][worker] = true
	tr.mu.Unlock()
	defer func() {
		tr.mu.Lock()
		tr.inflight[key][worker]--
		tr.mu.Unlock()
	}()
	tr.next.ServeHTTP(w, r)
}

// handovers counts keys POSTed by more than one worker (one after another).
func (tr *inflightTracker) handovers() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, s := range tr.senders {
		if len(s) > 1 {
			n++
		}
	}
	return n
}

// TestReconcilersInSeparateProcesses drains one backlog with four
// reconciler processes sharing one PostgreSQL schema, against a fake Stripe
// in the parent that fails a fifth of the requests that move money in every
// way it knows. Afterwards every operation is succeeded, failed or in
// manual review, in agreement with what the fake really did: no reference
// charged twice, no refund beyond its charge, no attempt of one operation
// overlapping another (in the ledger, and at the fake across processes),
// every resend inside its key window, each operation brought to a terminal
// state exactly once, and the work shared between the processes.
func TestReconcilersInSeparateProcesses(t *testing.T) {
	t.Parallel()
	const (
		workers  = 4
		charges  = 1200
		declines = 20
		refunds  = 300 // of charges settled synchronously beforehand
		// Short key windows (fake and adapter agree), so that operations
		// whose answer is a stored 500 pass their window, and land in
		// review, within the test's time.
		keyTTL         = 10 * time.Second
		margin         = time.Second
		attemptTimeout = 300 * time.Millisecond
		lease          = 2 * time.Second
	)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool, store := testkit.NewPGLedger(t, ctx)
	schema := store.Schema()

	// A fifth of the requests that move money meet a fault, of every kind.
	rates := map[mocks.FaultKind]float64{
		mocks.FaultDropAfterProcessing: 0.03,
		mocks.FaultHangAfterProcessing: 0.03,
		mocks.FaultGatewayBefore502:    0.03,
		mocks.FaultGatewayAfter502:     0.03,
		mocks.FaultRateLimit429:        0.02,
		mocks.FaultSlow:                0.02,
		mocks.FaultStored500:           0.02,
		mocks.FaultProcessed500:        0.02,
	}
	h := mocks.NewStripeHandler(mocks.StripeOptions{
		Options: mocks.Options{
			Seed: 42, KeyTTL: keyTTL,
			HangFor: time.Second, SlowFor: 100 * time.Millisecond, FaultRates: rates,
		},
		SearchLag: 200 * time.Millisecond,
	})
	tracker := newInflightTracker(h)
	srv := httptest.NewServer(tracker)
	t.Cleanup(func() { h.Release(); srv.Close() })

	psp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: h.APIKey(), BaseURL: srv.URL, KeyTTL: keyTTL, SearchLag: 500 * time.Millisecond})
	require.NoError(t, err)
	client, err := payonce.New(payonce.Config{
		Provider: psp, Store: store, Owner: "parent",
		HTTPClient:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		AttemptTimeout: attemptTimeout, LeaseDuration: lease, SafetyMargin: margin, ClockSkew: margin - attemptTimeout, CheckInterval: 200 * time.Millisecond,
		Retry:   payonce.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
		Breaker: payonce.BreakerSettings{ConsecutiveFailures: 8, OpenFor: 50 * time.Millisecond},
	})
	require.NoError(t, err)

	expect := map[string]providertest.Expected{}
	opID := func(kind payonce.Kind, refs ...string) string {
		id, err := payonce.Identity{Provider: "stripe", Kind: kind, References: refs}.OperationID()
		require.NoError(t, err)
		return id
	}

	// The charges to refund are settled synchronously first, with the
	// fake's random faults held off by a script of clean passes.
	h.Script(mocks.Match{Method: "POST", Path: chargePath}, make([]mocks.FaultKind, refunds)...)
	paid := make([]string, refunds)
	for i := range paid {
		paid[i] = fmt.Sprintf("paid-%04d", i)
		expect[opID(payonce.KindCharge, paid[i])] = providertest.Expected{Kind: payonce.KindCharge, Order: paid[i], Amount: 5000 + int64(i)}
	}
	runConcurrent(t, 16, len(paid), func(i int) error {
		_, _ = client.Charge(ctx, charge(paid[i], 5000+int64(i)))
		return nil // checked in the ledger below
	})
	h.ClearScripts()
	for _, id := range paid {
		op, _, err := store.Get(ctx, opID(payonce.KindCharge, id))
		require.NoError(t, err)
		require.Equal(t, ledger.StatusSucceeded, op.Status, "charge %s before the backlog", id)
	}

	// The backlog, enqueued in one transaction: charges (a few declined)
	// and one full refund of each charge settled above.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	every := charges / declines
	for i := range charges {
		p := charge(fmt.Sprintf("proc-%04d", i), 1000+int64(i))
		decline := i%every == every/2
		if decline {
			p.PaymentMethod = "pm_card_chargeDeclined"
		}
		op, err := client.PrepareCharge(ctx, p)
		require.NoError(t, err)
		_, created, err := store.CreateOrGetTx(ctx, tx, op, time.Now())
		require.NoError(t, err)
		require.True(t, created)
		expect[op.ID] = providertest.Expected{Kind: payonce.KindCharge, Order: p.OrderID, Amount: p.Amount, Decline: decline}
	}
	for i, order := range paid {
		amount := 5000 + int64(i)
		op, err := client.PrepareRefund(ctx, payonce.RefundParams{OrderID: order, RefundSeq: 1, Amount: amount, Currency: "USD"})
		require.NoError(t, err)
		_, created, err := store.CreateOrGetTx(ctx, tx, op, time.Now())
		require.NoError(t, err)
		require.True(t, created)
		expect[op.ID] = providertest.Expected{Kind: payonce.KindRefund, Order: order, Amount: amount}
	}
	require.NoError(t, tx.Commit(ctx))
	backlog := charges + refunds
	t.Logf("backlog of %d operations ready after %s", backlog, time.Since(start).Round(time.Millisecond))

	cfg := reconChildConfig{
		PGURL: testkit.URL(t), PGSchema: schema, PoolConns: 5,
		StripeURL: srv.URL, StripeKey: h.APIKey(), KeyTTL: keyTTL, SearchLag: 500 * time.Millisecond,
		AttemptTimeout: attemptTimeout, LeaseDuration: lease, SafetyMargin: margin, CheckInterval: 200 * time.Millisecond,
		MaxAttempts: 3, BreakerFailures: 8, BreakerOpenFor: 50 * time.Millisecond,
		BatchSize: 25, Concurrency: 5,
		IdleFor: 1500 * time.Millisecond, Poll: 50 * time.Millisecond, StopWhenOnlyReview: true,
		Deadline: 40 * time.Second, WaitGo: true,
	}
	procs := make([]*childproc.Proc, workers)
	for i := range procs {
		procs[i] = startReconChild(t, fmt.Sprintf("worker-%d", i+1), cfg)
	}
	for _, p := range procs {
		waitReady(t, p, time.Minute)
	}
	released := time.Now()
	for _, p := range procs {
		goLine(t, p)
	}
	results := make([]reconChildResult, workers)
	total := map[string]int{}
	busy := 0
	for i, p := range procs {
		results[i] = reconResult(t, p, cfg.Deadline+time.Minute)
		res := results[i]
		t.Logf("%s: stop=%s after %s (work %s), %d passes, claimed %d, settled %d, skipped %d, errors %d %v, transitions %v",
			res.Worker, res.Stop, res.Total.Round(time.Millisecond), res.Elapsed.Round(time.Millisecond), res.Passes,
			res.Claimed, res.Settled, res.Skipped, res.ErrorCount, res.Errors, res.Transitions)
		require.Zero(t, res.PassErrors, "claiming failed: %v", res.Errors)
		for k, v := range res.Transitions {
			total[k] += v
		}
		if res.Settled > 0 {
			busy++
		}
	}
	t.Logf("children done %s after the go", time.Since(released).Round(time.Millisecond))
	require.GreaterOrEqual(t, busy, 2, "the processes shared the backlog")

	// A final pass in the parent for anything the children left to
	// automation (they stop when idle): on the real clock, until only
	// succeeded, failed and review are left.
	left, err := automationLeft(ctx, store)
	require.NoError(t, err)
	if left {
		r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{client}, BatchSize: 100, Concurrency: 8, Owner: "parent-settle"})
		require.NoError(t, err)
		deadline := time.Now().Add(2 * keyTTL)
		passes := 0
		for left {
			require.True(t, time.Now().Before(deadline), "the parent's settle did not finish")
			rep, err := r.RunOnce(ctx)
			require.NoError(t, err)
			passes++
			for k, v := range rep.Transitions {
				total[k] += v
			}
			if rep.Claimed == 0 {
				time.Sleep(50 * time.Millisecond)
			}
			left, err = automationLeft(ctx, store)
			require.NoError(t, err)
		}
		t.Logf("parent settle: %d passes", passes)
	}
	// An operation that went to review because its key window passed with
	// the outcome unknown goes on being looked up, read-only, and is settled
	// by the first lookup that finds its payment or refund; the children
	// stop once only review is left, which on a busy machine can come before
	// that lookup. So the parent goes on until no operation still waiting
	// for its lookup in review has moved money, bounded like the settle
	// above; the checks below then hold the ledger to the fake's truth.
	if waiting := reviewsWithMoney(t, ctx, store, h.Truth()); waiting > 0 {
		r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{client}, BatchSize: 100, Concurrency: 8, Owner: "parent-review"})
		require.NoError(t, err)
		deadline := time.Now().Add(2 * keyTTL)
		t.Logf("%d operations in review with money moved, waiting for their lookups", waiting)
		for waiting > 0 {
			require.True(t, time.Now().Before(deadline), "%d operations in review with money moved were not settled by their lookups", waiting)
			rep, err := r.RunOnce(ctx)
			require.NoError(t, err)
			if rep.Claimed == 0 {
				time.Sleep(100 * time.Millisecond)
			}
			waiting = reviewsWithMoney(t, ctx, store, h.Truth())
		}
	}

	// Each operation reached a terminal state exactly once, by whichever
	// process held it.
	toTerminal := 0
	for k, v := range total {
		from, to, _ := strings.Cut(k, "->")
		if from != string(ledger.StatusManualReview) && ledger.Status(to).Terminal() {
			toTerminal += v
		}
	}
	require.Equal(t, backlog, toTerminal, "operations brought to a terminal state, over all processes: %v", total)

	// The ledger against what the fake really did; attempts: one key, and
	// every one that may have reached Stripe still in flight at most an
	// attempt timeout, sent while Stripe remembered the key.
	truth := h.Truth()
	checked := providertest.CheckLedger(t, ctx, providertest.Check{Store: store, Truth: truth, Expect: expect, Margin: attemptTimeout})

	// Attempts never two in flight at once.
	statuses := map[ledger.Status]int{}
	attempts, handedOver := 0, 0
	for _, c := range checked {
		op, atts := c.Op, c.Attempts
		statuses[op.Status]++
		attempts += len(atts)
		for i, a := range atts {
			if i == 0 {
				continue
			}
			prev := atts[i-1]
			if prev.FinishedAt.IsZero() {
				// Its worker lost the lease before recording the outcome:
				// the next attempt waited for that lease to end.
				handedOver++
				require.False(t, a.StartedAt.Before(prev.StartedAt.Add(lease)),
					"rule 3: attempt %d of %s started while attempt %d's lease lived\n%s", a.Number, op.ID, prev.Number, providertest.Describe(op, atts))
			} else {
				require.False(t, a.StartedAt.Before(prev.FinishedAt),
					"rule 3: attempt %d of %s started before attempt %d finished\n%s", a.Number, op.ID, prev.Number, providertest.Describe(op, atts))
			}
		}
	}
	tracker.mu.Lock()
	cross, self := tracker.cross, tracker.self
	tracker.mu.Unlock()
	require.Empty(t, cross, "two processes had a request of one operation in flight at once")

	var faults []string
	for k, n := range truth.Faults {
		faults = append(faults, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(faults)
	t.Logf("%d operations by %d processes in %s: %v; %d attempts (%d after a lost lease); faults [%s]; POSTs %d, replays %d, key in use %d; keys sent by more than one process %d; same-process overlaps at the fake %d",
		backlog, workers, time.Since(start).Round(time.Millisecond), statuses, attempts, handedOver, strings.Join(faults, " "),
		truth.Requests["POST /v1/payment_intents"]+truth.Requests["POST /v1/refunds"], truth.Replays, truth.KeyInUse, tracker.handovers(), self)
}

// TestLookupsFailThenRecover: an operation whose answer was lost (Stripe
// charged, the client saw a 502) while every lookup fails. Inside the key
// window the reconciler only looks up, spacing its lookups out as the
// operation ages (a tenth of its age, at least CheckInterval, at most an
// hour: asserted on the ledger's next check time), is not due in between,
// sends nothing, and leaves one audit entry per lookup. When lookups work
// again, the next one settles it: unknown -> succeeded inside the window;
// past the window it went to review on the way, with hourly read-only
// lookups, and the answer settles it there with a resolution entry.
func TestLookupsFailThenRecover(t *testing.T) {
	t.Parallel()
	const checkInterval = 30 * time.Second
	schedule := func(age time.Duration) time.Duration { return min(max(age/10, checkInterval), time.Hour) }
	for _, pastWindow := range []bool{false, true} {
		name := "inside window"
		if pastWindow {
			name = "past window"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachSetup(t, setupOpts{config: func(c *payonce.Config) {
				c.CheckInterval = checkInterval
				// The breaker runs on the real clock: keep it closed,
				// this test is about the ledger's schedule.
				c.Breaker.ConsecutiveFailures = 1000
			}}, func(t *testing.T, b *bundle) {
				res := chargeLostWhileLookupsFail(t, b, charge("order-lookups", 3100), 1000)
				require.Equal(t, 1, b.chargesOf(t, res.OperationID), "Stripe charged; the client does not know")
				const searches = "GET /v1/payment_intents/search"
				lookupsOf := func() []ledger.Event {
					evs, err := b.store.Events(b.ctx, res.OperationID)
					require.NoError(t, err)
					var out []ledger.Event
					for _, e := range evs {
						if e.Kind == ledger.EventLookup {
							out = append(out, e)
						}
					}
					return out
				}

				op, _ := attemptsOf(t, b, res.OperationID)
				require.Equal(t, ledger.StatusUnknown, op.Status)
				require.Equal(t, t0, op.WindowStart)
				require.Equal(t, t0.Add(schedule(0)), op.NextCheckAt, "the call's own lookup failed: first check after CheckInterval")
				require.Len(t, lookupsOf(), 1)
				gets := b.fake.Truth().Requests[searches]
				require.Equal(t, 3, gets, "a lookup is one GET and two retries")

				r := newReconciler(t, b, nil)
				// Ages at which the reconciler looks (clock jumps; each is
				// at or after the previous next check). Inside Stripe's
				// 24 h window, margin 14m26s: the last is 23h.
				ages := []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 3 * time.Hour, 8 * time.Hour, 10 * time.Hour, 15 * time.Hour, 23 * time.Hour}
				if pastWindow {
					ages = append(ages, 24*time.Hour, 25*time.Hour, 30*time.Hour)
				}
				window := t0.Add(24*time.Hour - 14*time.Minute - 26*time.Second)
				var prev time.Duration
				for i, age := range ages {
					now := t0.Add(age)
					require.False(t, now.Before(op.NextCheckAt), "age %s is before the next check", age)
					// Just before the next check nothing is due.
					b.clock.Set(op.NextCheckAt.Add(-time.Second))
					rep, err := r.RunOnce(b.ctx)
					require.NoError(t, err)
					require.Zero(t, rep.Claimed, "age %s: claimed before its next check %s", age, op.NextCheckAt)

					b.clock.Set(now)
					rep, err = r.RunOnce(b.ctx)
					require.NoError(t, err)
					require.Equal(t, 1, rep.Claimed, "age %s", age)
					require.Empty(t, rep.Errors)
					op, _ = attemptsOf(t, b, res.OperationID)
					wantStatus := ledger.StatusUnknown
					if !now.Before(window) {
						wantStatus = ledger.StatusManualReview
						require.Equal(t, payonce.ReasonWindowPassed, op.ReviewReason)
					}
					require.Equal(t, wantStatus, op.Status, "age %s", age)
					next := op.NextCheckAt.Sub(now)
					require.Equal(t, schedule(age), next, "age %s: next check", age)
					require.GreaterOrEqual(t, next, prev, "lookups never come closer together")
					prev = next

					lookups := lookupsOf()
					require.Len(t, lookups, i+2, "one audit entry per lookup")
					last := lookups[len(lookups)-1]
					require.True(t, strings.HasPrefix(last.Detail, "lookup failed: "), "age %s: %q", age, last.Detail)
					require.Equal(t, now, last.At)
					require.Equal(t, gets+3*(i+1), b.fake.Truth().Requests[searches], "age %s: one lookup per pass", age)
					require.Equal(t, 1, postsOf(b), "age %s: nothing is sent while the answer is unknown", age)
				}
				require.Equal(t, time.Hour, prev, "capped at an hour")

				// The provider answers again.
				b.fake.ClearScripts()
				now := op.NextCheckAt
				b.clock.Set(now)
				rep, err := r.RunOnce(b.ctx)
				require.NoError(t, err)
				from := "unknown"
				if pastWindow {
					from = "manual_review"
				}
				require.Equal(t, map[string]int{from + "->succeeded": 1}, rep.Transitions)
				op, atts := attemptsOf(t, b, res.OperationID)
				require.Equal(t, ledger.StatusSucceeded, op.Status)
				truth := b.fake.Truth()
				require.Len(t, truth.Payments, 1)
				require.Equal(t, truth.Payments[0].ID, op.ProviderRef, "the lookup found Stripe's charge")
				require.Len(t, atts, 1, "found, not resent")
				require.Equal(t, 1, postsOf(b))
				require.True(t, op.NextCheckAt.IsZero(), "nothing more to do")
				lookups := lookupsOf()
				require.Len(t, lookups, len(ages)+2)
				require.True(t, strings.HasPrefix(lookups[len(lookups)-1].Detail, "state=succeeded ref="+op.ProviderRef), lookups[len(lookups)-1].Detail)
				if pastWindow {
					require.NotNil(t, op.Resolution)
					require.Equal(t, "payonce-reconciler", op.Resolution.Actor)
					require.Equal(t, ledger.ResolveSucceeded, op.Resolution.Outcome)
				} else {
					require.Nil(t, op.Resolution)
				}
				b.clock.Advance(2 * time.Hour)
				rep, err = r.RunOnce(b.ctx)
				require.NoError(t, err)
				require.Zero(t, rep.Claimed)
			})
		})
	}
}

// backlogSizes returns the small and the large backlog of TestBacklog100k.
func backlogSizes() (small, large int) {
	switch {
	case os.Getenv("PAYONCE_LONG") == "1":
		return 10_000, 100_000
	case testing.Short():
		return 1_000, 3_000
	}
	return 2_000, 10_000
}

// TestBacklog100k drains a backlog of unknown charges (their answers were
// lost; the PaymentIntents exist at Stripe and the ledger knows their ids,
// except for a few that never reached Stripe and are resent once) with one
// reconciler of BatchSize 200 in a child process, for a small and a large
// backlog. Everything settles with no duplicate, and the reconciler's peak
// heap does not grow with the backlog. The reconciler runs in a child so
// that its MemStats exclude the fake Stripe in the parent, whose truth
// grows with every PaymentIntent. The large backlog is 10,000 (3,000 with
// -short); PAYONCE_LONG=1 makes it 100,000.
func TestBacklog100k(t *testing.T) {
	t.Parallel()
	testkit.URL(t) // skip early without a database
	small, large := backlogSizes()
	drain := func(t *testing.T, n int) reconChildResult {
		const notFound = 50
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		pool, store := testkit.NewPGLedger(t, ctx)
		schema := store.Schema()
		fake := mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Seed: int64(n)}})
		t.Cleanup(fake.Close)
		psp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: fake.APIKey(), BaseURL: fake.URL()})
		require.NoError(t, err)
		client, err := payonce.New(payonce.Config{Provider: psp, Store: store})
		require.NoError(t, err)

		now := time.Now()
		rows := prepareBacklog(t, client, fmt.Sprintf("backlog%d", n), n, ledger.StatusUnknown, now.Add(-10*time.Minute))
		found := make([]*backlogRow, 0, n-notFound)
		for i := range rows[:n-notFound] {
			found = append(found, &rows[i])
		}
		createIntents(t, ctx, psp, found, 8)
		insertBacklog(t, ctx, pool, schema, rows, now.Add(-time.Second))
		require.Equal(t, map[string]int{"unknown": n}, statusCounts(t, ctx, pool, schema))
		posts := fake.Truth().Requests["POST "+chargePath]
		require.Equal(t, n-notFound, posts)
		t.Logf("backlog of %d ready in %s", n, time.Since(start).Round(time.Millisecond))

		p := startReconChild(t, fmt.Sprintf("drain-%d", n), reconChildConfig{
			PGURL: testkit.URL(t), PGSchema: schema, PoolConns: 8,
			StripeURL: fake.URL(), StripeKey: fake.APIKey(), KeepAlive: true,
			AttemptTimeout: 5 * time.Second, BatchSize: 200, Concurrency: 8,
			// A claimed batch of 200 looked up 8 at a time outlasts the
			// default lease (3 AttemptTimeouts) on a loaded machine; the
			// rows whose lease ended would be skipped and claimed again
			// (TestReconcilerSkipsLeaseEndedWhileWaiting), which is safe
			// but not what this test counts.
			LeaseDuration: 5 * time.Minute,
			IdleFor:       200 * time.Millisecond, Poll: 20 * time.Millisecond, Deadline: 8 * time.Minute,
		})
		res := reconResult(t, p, 10*time.Minute)
		t.Logf("N=%d: drained in %s (%.0f ops/s), %d passes, claimed %d, settled %d, errors %d %v; peak heap in use %.1f MiB, peak heap alloc %.1f MiB, peak live heap %.1f MiB, peak RSS %.1f MiB",
			n, res.Elapsed.Round(time.Millisecond), float64(n)/res.Elapsed.Seconds(), res.Passes, res.Claimed, res.Settled, res.ErrorCount, res.Errors,
			mib(res.PeakHeapInuse), mib(res.PeakHeapAlloc), mib(res.PeakLiveHeap), float64(res.VmHWMKiB)/1024)
		require.Equal(t, "idle", res.Stop)
		require.Zero(t, res.PassErrors)
		require.Zero(t, res.ErrorCount, "%v", res.Errors)
		require.Equal(t, n, res.Claimed, "each operation claimed once")
		require.Equal(t, n, res.Settled)
		require.Equal(t, map[string]int{"unknown->succeeded": n}, res.Transitions)

		require.Equal(t, map[string]int{"succeeded": n}, statusCounts(t, ctx, pool, schema))
		truth := fake.Truth()
		require.Empty(t, truth.Duplicates(stripe.MetaOperation))
		chargesBy := truth.ChargesBy(stripe.MetaOperation)
		require.Len(t, chargesBy, n, "every operation charged once")
		require.Equal(t, n, truth.Requests["POST "+chargePath], "only the operations that never reached Stripe were resent")
		byOp := make(map[string]string, n)
		for _, pi := range truth.Payments {
			byOp[pi.Metadata[stripe.MetaOperation]] = pi.ID
		}
		refs, err := pool.Query(ctx, "SELECT id, provider_ref, attempts FROM "+pgx.Identifier{schema, "payonce_operations"}.Sanitize())
		require.NoError(t, err)
		resent := 0
		for refs.Next() {
			var (
				id, ref  string
				attempts int
			)
			require.NoError(t, refs.Scan(&id, &ref, &attempts))
			require.Equal(t, byOp[id], ref, "operation %s", id)
			if attempts == 2 {
				resent++
			}
		}
		require.NoError(t, refs.Err())
		require.Equal(t, notFound, resent)
		return res
	}

	var rs, rl reconChildResult
	t.Run("N="+strconv.Itoa(small), func(t *testing.T) { rs = drain(t, small) })
	t.Run("N="+strconv.Itoa(large), func(t *testing.T) { rl = drain(t, large) })
	if rs.Worker == "" || rl.Worker == "" {
		return // a subtest failed
	}
	// Bounded memory: the peak heap of the large backlog stays within half
	// again of the small one's (plus 2 MiB for GC pacing noise), and so
	// does the heap that survives a collection.
	require.LessOrEqual(t, float64(rl.PeakHeapInuse), 1.5*float64(rs.PeakHeapInuse)+2<<20,
		"peak heap in use grew with the backlog: %.1f MiB for %d, %.1f MiB for %d", mib(rs.PeakHeapInuse), small, mib(rl.PeakHeapInuse), large)
	require.LessOrEqual(t, float64(rl.PeakLiveHeap), 1.5*float64(rs.PeakLiveHeap)+2<<20,
		"live heap grew with the backlog: %.1f MiB for %d, %.1f MiB for %d", mib(rs.PeakLiveHeap), small, mib(rl.PeakLiveHeap), large)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// postHook runs hook once, on the first POST, before sending it.
type postHook struct {
	base http.RoundTripper
	once sync.Once
	hook func()
}

func (h *postHook) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost {
		h.once.Do(h.hook)
	}
	return h.base.RoundTrip(req)
}

// TestReconcilerSkipsLeaseEndedWhileWaiting shows a defect of
// Reconciler.RunOnce (reconcile.go, runProvider). ARCHITECTURE.md: "an
// operation whose lease would end before it can be settled is skipped and
// becomes due again when the lease ends", and runProvider's comment: "A
// lease about to end would let another worker take the operation
// mid-settlement; leave it". But the check runs before the loop waits for a
// free worker slot (and for the rate limiter), not when the operation's
// settlement starts. With a batch larger than Concurrency, an operation
// whose batch lease ended while it waited is settled anyway, from its stale
// claimed snapshot, while another worker may already have taken it over.
//
// Here reconciler A (Concurrency 1) claims two pending charges; the first
// one's send takes longer than the batch lease (the test clock moves 11 s
// past a 10 s lease while it is in flight), and meanwhile the customer's
// own retry (a synchronous Charge of the second order) takes the second
// operation over, as its expired lease allows, and charges it. A then
// starts on the second operation anyway, after its lease ended: it should
// have skipped it. The store's compare-and-set stops A from sending (no
// double charge: asserted below, and it holds), so the harm is wasted work
// (lookups of operations another worker holds, for unknown ones) and a
// spurious "in progress: lease lost" error in the report.
func TestReconcilerSkipsLeaseEndedWhileWaiting(t *testing.T) {
	t.Parallel()
	const lease = 10 * time.Second
	hook := &postHook{base: &http.Transport{DisableKeepAlives: true}}
	b := setup(t, setupOpts{config: func(c *payonce.Config) {
		c.HTTPClient = &http.Client{Transport: hook}
		c.LeaseDuration = lease
	}})
	first, second := charge("order-lease-first", 1100), charge("order-lease-second", 2200)
	for i, p := range []payonce.ChargeParams{first, second} {
		b.clock.Set(t0.Add(time.Duration(i) * time.Second)) // first is due first
		op, err := b.client.PrepareCharge(b.ctx, p)
		require.NoError(t, err)
		_, err = b.client.Enqueue(b.ctx, op)
		require.NoError(t, err)
	}
	psp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: b.fake.APIKey(), BaseURL: b.fake.URL(), Now: b.clock.Now})
	require.NoError(t, err)
	retrying, err := payonce.New(payonce.Config{Provider: psp, Store: b.store, Now: b.clock.Now,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, AttemptTimeout: 2 * time.Second})
	require.NoError(t, err)
	var (
		retried    payonce.Result
		retriedErr error
	)
	hook.hook = func() {
		// The first send is slow: the batch lease (10 s) ends meanwhile,
		// and the customer retries the second order.
		b.clock.Advance(lease + time.Second)
		retried, retriedErr = retrying.Charge(b.ctx, second)
	}

	r := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.Concurrency = 1; c.Owner = "reconciler-a" })
	rep, err := r.RunOnce(b.ctx)
	require.NoError(t, err)
	require.NoError(t, retriedErr, "the retry took the expired lease over and charged")
	require.Equal(t, payonce.ResultSucceeded, retried.Status)
	require.Equal(t, 1, b.chargesOf(t, retried.OperationID), "charged once: the store's lease check held")
	require.Equal(t, 2, postsOf(b))
	require.Equal(t, 2, rep.Claimed)
	require.Empty(t, rep.Errors, "reconciler A worked on an operation after its lease had ended and another worker took it over")
	require.Equal(t, 1, rep.Skipped, "the second operation's lease ended while it waited for a worker: it should have been skipped")
}

// reviewsWithMoney counts the operations in review that still want their
// read-only lookups (NextCheckAt set) and whose payment or refund the fake
// holds: those a lookup will settle.
func reviewsWithMoney(t *testing.T, ctx context.Context, store ledger.Store, truth mocks.Truth) int {
	t.Helper()
	ops, err := store.ListReview(ctx, ledger.ReviewFilter{Limit: ledger.MaxLimit})
	require.NoError(t, err)
	charged, refunded := truth.ChargesBy(stripe.MetaOperation), truth.RefundsBy(stripe.MetaOperation)
	n := 0
	for _, op := range ops {
		if !op.NextCheckAt.IsZero() && charged[op.ID]+refunded[op.ID] > 0 {
			n++
		}
	}
	return n
}
