package crashsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// The crash tests run real processes and kill them with SIGKILL: the test
// binary re-executes itself as a "charge" child (charger_test.go, see
// TestMain), and the child performs one Charge against a fake Stripe
// served by the parent, on a ledger the parent can open too (an SQLite file
// or a PostgreSQL schema). After the kill, the parent plays the restarted
// service: a new client on the same ledger, with the same identity.

const (
	routeCharge = "POST /v1/payment_intents"
	// A lost answer is found by listing the window (consistent), not by
	// the search.
	routeSearch = "GET /v1/payment_intents"
)

// crashClock is real time plus an offset the test moves: the children use
// the real clock, and the restarted service (and the fake) jump ahead of
// it to pass a dead child's lease.
type crashClock struct{ offset atomic.Int64 }

func (c *crashClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *crashClock) Skip(d time.Duration) { c.offset.Add(int64(d)) }

// crashRequestLog records, in order, the requests the fake answered
// ("METHOD /path"), from the fake's per-request log records.
type crashRequestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *crashRequestLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *crashRequestLog) Handle(_ context.Context, r slog.Record) error {
	var method, path string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "method":
			method = a.Value.String()
		case "path":
			path = a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, method+" "+path)
	return nil
}

func (l *crashRequestLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *crashRequestLog) WithGroup(string) slog.Handler      { return l }

// since returns the requests answered after the first n.
func (l *crashRequestLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs[n:]...)
}

func (l *crashRequestLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// crashEnv is one crash test's world: the fake Stripe, the ledger, and how
// a child or a restarted service reaches both.
type crashEnv struct {
	clock *crashClock
	fake  *mocks.Stripe
	log   *crashRequestLog
	// store is the parent's view of the ledger, opened before any child.
	store ledger.Store
	// child tells a child where the fake and the ledger are.
	child childConfig
	// reopen opens the ledger again, as a restarted process would.
	reopen func(t *testing.T) ledger.Store
	ctx    context.Context
}

func newCrashEnv(t *testing.T, pg bool, opts mocks.StripeOptions) *crashEnv {
	t.Helper()
	e := &crashEnv{clock: &crashClock{}, log: &crashRequestLog{}}
	opts.Clock = e.clock.Now
	opts.Logger = slog.New(e.log)
	e.fake = mocks.NewStripe(opts)
	t.Cleanup(e.fake.Close)
	e.child = childConfig{FakeURL: e.fake.URL(), APIKey: e.fake.APIKey()}
	if pg {
		_, s := testkit.NewPGLedger(t, context.Background())
		schema := s.Schema()
		e.store = s
		e.child.PGURL, e.child.Schema = testkit.URL(t), schema
		e.reopen = func(t *testing.T) ledger.Store {
			s, err := ledgerpg.New(testkit.NewPool(t), ledgerpg.Config{Schema: schema})
			require.NoError(t, err)
			return s
		}
	} else {
		path := filepath.Join(t.TempDir(), "ledger.db")
		e.reopen = func(t *testing.T) ledger.Store {
			s, err := ledgersqlite.Open(path, ledgersqlite.Config{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			require.NoError(t, s.Migrate(context.Background()))
			return s
		}
		e.store = e.reopen(t)
		e.child.SQLite = path
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e.ctx = ctx
	return e
}

// restarted is the service after the crash: a new client on a newly
// opened ledger, on the test's clock.
func (e *crashEnv) restarted(t *testing.T) *payonce.Client {
	t.Helper()
	psp, err := stripe.New(stripe.Config{APIKey: e.fake.APIKey(), BaseURL: e.fake.URL(), Now: e.clock.Now})
	require.NoError(t, err)
	c, err := payonce.New(payonce.Config{
		Provider: psp, Store: e.reopen(t), Now: e.clock.Now,
		HTTPClient:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		AttemptTimeout: 5 * time.Second,
		Retry:          payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	})
	require.NoError(t, err)
	return c
}

func (e *crashEnv) get(t *testing.T, id string) (ledger.Operation, []ledger.Attempt) {
	t.Helper()
	op, atts, err := e.store.Get(e.ctx, id)
	require.NoError(t, err)
	return op, atts
}

func crashOpID(t *testing.T, order string) string {
	t.Helper()
	id, err := opID(payonce.KindCharge, order)
	require.NoError(t, err)
	return id
}

// chargeChild is a charging child (charger_test.go).
type chargeChild struct{ *child }

// startCharger starts a charging child for order, configured by set on top
// of e.child. It is killed when the test ends if it still runs.
func (e *crashEnv) startCharger(t *testing.T, name, order string, set func(*childConfig)) chargeChild {
	t.Helper()
	cfg := e.child
	cfg.Order = order
	if set != nil {
		set(&cfg)
	}
	return chargeChild{startChild(t, name, modeCharger, cfg)}
}

// killNow sends SIGKILL to a child that must still run and checks that it
// died of the signal.
func (c chargeChild) killNow(t *testing.T) {
	t.Helper()
	require.False(t, c.Exited(), "the child exited before it could be killed:\n%s", c.Describe())
	c.kill(t)
	require.Equal(t, -1, c.ExitCode(), "the child must die of the signal, not exit: %v\n%s", c.Err(), c.Describe())
}

// release lets a child waiting on WaitGo charge.
func (c chargeChild) release(t *testing.T) {
	t.Helper()
	require.NoError(t, c.WriteLine("go"), c.Describe())
}

// finish waits for the child to exit and returns its exit code and result.
func (c chargeChild) finish(t *testing.T, timeout time.Duration) (int, chargeResult) {
	t.Helper()
	if err := c.Wait(timeout); err != nil && !c.Exited() {
		require.FailNow(t, "timed out waiting for the child to exit", c.Describe())
	}
	var res chargeResult
	found := false
	for _, l := range c.Stdout().Lines() {
		if strings.HasPrefix(l, "{") {
			require.NoError(t, json.Unmarshal([]byte(l), &res), c.Describe())
			found = true
		}
	}
	require.True(t, found, "the child printed no result line: %v\n%s", c.Err(), c.Describe())
	return c.ExitCode(), res
}

// TestCrashBetweenJournalAndSend kills a process after it journaled an
// attempt and before a byte of the request left. The restarted service must
// not assume either way: it waits out the dead process's lease, looks the
// operation up, finds nothing, and resends with the same key.
func TestCrashBetweenJournalAndSend(t *testing.T) {
	t.Parallel()
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		e := newCrashEnv(t, pg, mocks.StripeOptions{SearchLag: 20 * time.Second})
		const order = "order-crash-journal"
		opID := crashOpID(t, order)

		child := e.startCharger(t, "journal", order, func(c *childConfig) { c.BlockTransport = true })
		marker := strings.Fields(child.waitLine(t, markerSending, time.Minute))
		child.killNow(t)
		require.Len(t, marker, 4, "marker: method, path, key")
		require.Equal(t, "POST", marker[1])
		require.Equal(t, "/v1/payment_intents", marker[2])
		sentKey := marker[3]
		require.Equal(t, opID, sentKey, "generation 0: the key is the operation id")

		// The journal holds the attempt, unfinished: the dead process may
		// have sent it for all the ledger knows.
		op, atts := e.get(t, opID)
		require.Equal(t, ledger.StatusInFlight, op.Status)
		require.Equal(t, 1, op.Attempts)
		require.Len(t, atts, 1)
		require.Equal(t, sentKey, atts[0].Key)
		require.True(t, atts[0].FinishedAt.IsZero(), "the outcome was never recorded")
		require.Empty(t, atts[0].Outcome)
		require.True(t, atts[0].MayHaveReached)
		require.False(t, op.WindowStart.IsZero(), "the key window opens when the attempt is journaled")
		require.NotEmpty(t, op.LeaseOwner)
		require.Zero(t, e.fake.Truth().Requests[routeCharge], "the child never sent")

		client := e.restarted(t)
		// While the dead process's lease lives, nobody may act on it.
		res, err := client.Charge(e.ctx, crashCharge(order))
		require.ErrorIs(t, err, payonce.ErrInProgress)
		require.Equal(t, payonce.ResultInProgress, res.Status)
		require.Zero(t, e.log.len(), "nothing is sent or looked up under a live lease")

		e.clock.Skip(crashLease + time.Minute)
		res, err = client.Charge(e.ctx, crashCharge(order))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.False(t, res.Replayed)
		require.Equal(t, 2, res.Attempts)
		require.Equal(t, []string{routeSearch, "POST /v1/payment_intents"}, e.log.since(0),
			"unknown first: look up, and only then resend")

		truth := e.fake.Truth()
		require.Equal(t, 1, truth.ChargesBy(stripe.MetaOperation)[opID])
		require.Len(t, truth.Payments, 1)
		p, ok := truth.Payment(res.ProviderRef)
		require.True(t, ok)
		require.Equal(t, sentKey, p.IdempotencyKey, "the resend carries the key the dead process journaled")
		require.Equal(t, opID, p.Metadata[stripe.MetaOperation])

		op, atts = e.get(t, opID)
		require.Equal(t, ledger.StatusSucceeded, op.Status)
		require.Equal(t, res.ProviderRef, op.ProviderRef)
		require.Len(t, atts, 2)
		require.Equal(t, atts[0].Key, atts[1].Key, "same key on the second attempt")
		require.Equal(t, ledger.OutcomeSuccess, atts[1].Outcome)

		again, err := client.Charge(e.ctx, crashCharge(order))
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Equal(t, res.ProviderRef, again.ProviderRef)
		require.Len(t, e.log.since(0), 2, "a replay calls nobody")
	})
}

// TestCrashBetweenSendAndRecord kills a process after the provider charged
// the card and before the process recorded the answer. The restarted
// service must find the charge by looking it up, never by charging again.
func TestCrashBetweenSendAndRecord(t *testing.T) {
	t.Parallel()
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		e := newCrashEnv(t, pg, mocks.StripeOptions{Options: mocks.Options{HangFor: 10 * time.Minute}, SearchLag: 20 * time.Second})
		e.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultHangAfterProcessing)
		const order = "order-crash-record"
		opID := crashOpID(t, order)

		child := e.startCharger(t, "record", order, nil)
		deadline := time.Now().Add(time.Minute)
		for len(e.fake.Truth().Payments) == 0 {
			require.False(t, child.Exited(), "the child exited before the charge was made:\n%s", child.Describe())
			require.True(t, time.Now().Before(deadline), "the charge never reached the fake:\n%s", child.Describe())
			time.Sleep(5 * time.Millisecond)
		}
		child.killNow(t)

		truth := e.fake.Truth()
		require.Len(t, truth.Payments, 1)
		pi := truth.Payments[0]
		require.True(t, pi.Authorized)
		require.Equal(t, opID, pi.Metadata[stripe.MetaOperation])
		require.Equal(t, 1, truth.Requests[routeCharge])

		op, atts := e.get(t, opID)
		require.Equal(t, ledger.StatusInFlight, op.Status, "the answer never reached the ledger")
		require.Empty(t, op.ProviderRef)
		require.Len(t, atts, 1)
		require.True(t, atts[0].FinishedAt.IsZero())
		require.Equal(t, pi.IdempotencyKey, atts[0].Key)

		client := e.restarted(t)
		n := e.log.len()
		_, err := client.Charge(e.ctx, crashCharge(order))
		require.ErrorIs(t, err, payonce.ErrInProgress, "the dead process's lease still lives")

		e.clock.Skip(crashLease + time.Minute)
		res, err := client.Charge(e.ctx, crashCharge(order))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.Equal(t, pi.ID, res.ProviderRef)
		require.Equal(t, 1, res.Attempts, "found by lookup: no new attempt")
		require.Equal(t, []string{routeSearch, "GET /v1/payment_intents/" + pi.ID}, e.log.since(n), "a lookup (the search hit re-read by id), and no POST")

		truth = e.fake.Truth()
		require.Equal(t, 1, truth.Requests[routeCharge], "no new POST")
		require.Len(t, truth.Payments, 1)
		require.Equal(t, 1, truth.ChargesBy(stripe.MetaOperation)[opID])

		op, atts = e.get(t, opID)
		require.Equal(t, ledger.StatusSucceeded, op.Status)
		require.Equal(t, pi.ID, op.ProviderRef)
		require.Len(t, atts, 1)
	})
}

// TestCrashConcurrentProcesses starts two processes charging one identity
// at the same moment, while the provider is slow to answer the first: one
// charges, the other is told the operation is in progress, and the card is
// charged once.
func TestCrashConcurrentProcesses(t *testing.T) {
	t.Parallel()
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		e := newCrashEnv(t, pg, mocks.StripeOptions{Options: mocks.Options{SlowFor: 5 * time.Second}})
		e.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultSlow)
		const order = "order-crash-race"
		opID := crashOpID(t, order)

		waitGo := func(c *childConfig) { c.WaitGo = true }
		children := []chargeChild{e.startCharger(t, "a", order, waitGo), e.startCharger(t, "b", order, waitGo)}
		for _, c := range children {
			c.waitLine(t, markerChargeReady, time.Minute)
		}
		for _, c := range children {
			c.release(t)
		}
		classes := map[string]int{}
		var ref string
		for _, c := range children {
			code, res := c.finish(t, 2*time.Minute)
			switch code {
			case exitOK:
				require.Equal(t, string(payonce.ResultSucceeded), res.Status, c.Describe())
				require.NotEmpty(t, res.ProviderRef, c.Describe())
				if ref != "" {
					require.Equal(t, ref, res.ProviderRef, "both saw one charge")
				}
				ref = res.ProviderRef
			case exitInProgress, exitUnknown:
			default:
				require.FailNow(t, fmt.Sprintf("child exited %d (%s)", code, res.Class), c.Describe())
			}
			require.Equal(t, opID, res.OperationID, c.Describe())
			classes[res.Class]++
		}
		t.Logf("children: %v", classes)
		require.Equal(t, 1, classes["succeeded"], "the slow first request overlaps the second process: one charges, the other is refused")
		require.Equal(t, 1, classes["in_progress"])

		truth := e.fake.Truth()
		require.Equal(t, 1, truth.Requests[routeCharge], "only the lease holder sent")
		require.Len(t, truth.Payments, 1)
		require.Equal(t, 1, truth.ChargesBy(stripe.MetaOperation)[opID])

		res, err := e.restarted(t).Charge(e.ctx, crashCharge(order))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.True(t, res.Replayed)
		require.Equal(t, ref, res.ProviderRef)
		require.Equal(t, 1, e.fake.Truth().Requests[routeCharge])
	})
}
