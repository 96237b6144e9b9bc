package payonce_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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
// binary re-executes itself with PAYONCE_CRASH_CHILD set (see TestMain in
// main_test.go), and the child performs one Charge against a fake Stripe
// served by the parent, on a ledger the parent can open too (an SQLite file
// or a PostgreSQL schema). After the kill, the parent plays the restarted
// service: a new client on the same ledger, with the same identity.

// Environment of a crash child.
const (
	// crashEnvChild, when set, makes the test binary run crashChild instead
	// of the tests.
	crashEnvChild = "PAYONCE_CRASH_CHILD"
	// crashEnvStripeURL and crashEnvStripeKey point the child at the fake.
	crashEnvStripeURL = "PAYONCE_CRASH_STRIPE_URL"
	crashEnvStripeKey = "PAYONCE_CRASH_STRIPE_KEY"
	// crashEnvSQLite is the SQLite ledger file; or crashEnvPGURL and
	// crashEnvPGSchema name a PostgreSQL ledger.
	crashEnvSQLite   = "PAYONCE_CRASH_SQLITE"
	crashEnvPGURL    = "PAYONCE_CRASH_PG_URL"
	crashEnvPGSchema = "PAYONCE_CRASH_PG_SCHEMA"
	// crashEnvOrder is the order the child charges (crashAmount USD).
	crashEnvOrder = "PAYONCE_CRASH_ORDER"
	// crashEnvTransport set to "block" installs a transport that prints
	// crashMarkerSending when asked to send and then blocks forever
	// without sending anything.
	crashEnvTransport = "PAYONCE_CRASH_TRANSPORT"
	// crashEnvWaitGo, when set, makes the child print crashMarkerReady once
	// its client is built and wait for a line on stdin before charging, so
	// that several children can be released at the same moment.
	crashEnvWaitGo = "PAYONCE_CRASH_WAIT_GO"
)

// Lines a child prints on stdout besides its JSON result.
const (
	crashMarkerSending = "PAYONCE_CRASH_SENDING" // + method, path, idempotency key
	crashMarkerReady   = "PAYONCE_CRASH_READY"
)

// Exit codes of a crash child, one per outcome class. They avoid 1 and 2
// (the test binary's own failures) and 66 (the race detector's).
const (
	crashExitSucceeded   = 0
	crashExitDeclined    = 10
	crashExitInProgress  = 11
	crashExitUnknown     = 12
	crashExitUnavailable = 13
	crashExitReview      = 14
	crashExitError       = 15
	crashExitSetup       = 16
)

const (
	crashAmount = 1999
	// crashAttemptTimeout is long: a child must still be waiting for its
	// answer when the parent kills it.
	crashAttemptTimeout = time.Minute
	// crashLease is the child's lease; the restarted service moves its clock
	// past it to take the operation over.
	crashLease  = 3 * time.Minute
	crashCharge = "POST /v1/payment_intents"
	crashSearch = "GET /v1/payment_intents/search"
)

// crashChildResult is the JSON line a child prints when its Charge returns.
type crashChildResult struct {
	Status      string `json:"status"`
	Class       string `json:"class"`
	Error       string `json:"error,omitempty"`
	OperationID string `json:"operation_id,omitempty"`
	Key         string `json:"key,omitempty"`
	ProviderRef string `json:"provider_ref,omitempty"`
	Attempts    int    `json:"attempts"`
	Replayed    bool   `json:"replayed,omitempty"`
}

// crashClassOf names the class of a Charge error and the child's exit code.
func crashClassOf(err error) (string, int) {
	switch {
	case err == nil:
		return "succeeded", crashExitSucceeded
	case errors.Is(err, payonce.ErrDeclined):
		return "declined", crashExitDeclined
	case errors.Is(err, payonce.ErrInProgress):
		return "in_progress", crashExitInProgress
	case errors.Is(err, payonce.ErrOutcomeUnknown):
		return "unknown", crashExitUnknown
	case errors.Is(err, payonce.ErrProviderUnavailable):
		return "unavailable", crashExitUnavailable
	case errors.Is(err, payonce.ErrManualReview):
		return "manual_review", crashExitReview
	}
	return "error", crashExitError
}

// crashChild is the child process: one Charge, one JSON line, one exit code.
// It uses the real clock.
func crashChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	setupFailed := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
		return crashExitSetup
	}

	var store ledger.Store
	switch {
	case os.Getenv(crashEnvSQLite) != "":
		s, err := ledgersqlite.Open(os.Getenv(crashEnvSQLite))
		if err != nil {
			return setupFailed("opening the SQLite ledger: %v", err)
		}
		defer s.Close()
		store = s
	case os.Getenv(crashEnvPGURL) != "":
		pool, err := pgxpool.New(ctx, os.Getenv(crashEnvPGURL))
		if err != nil {
			return setupFailed("opening the PostgreSQL pool: %v", err)
		}
		defer pool.Close()
		s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: os.Getenv(crashEnvPGSchema)})
		if err != nil {
			return setupFailed("opening the PostgreSQL ledger: %v", err)
		}
		store = s
	default:
		return setupFailed("no ledger: set %s or %s", crashEnvSQLite, crashEnvPGURL)
	}
	// A service migrates at start-up; the schema is current, so this is
	// a no-op (safe from several processes at once).
	if err := store.Migrate(ctx); err != nil {
		return setupFailed("migrating: %v", err)
	}

	psp, err := stripe.New(stripe.Config{APIKey: os.Getenv(crashEnvStripeKey), BaseURL: os.Getenv(crashEnvStripeURL)})
	if err != nil {
		return setupFailed("stripe adapter: %v", err)
	}
	var rt http.RoundTripper = &http.Transport{DisableKeepAlives: true}
	if os.Getenv(crashEnvTransport) == "block" {
		rt = crashBlockingTransport{}
	}
	client, err := payonce.New(payonce.Config{
		Provider: psp, Store: store,
		HTTPClient:     &http.Client{Transport: rt},
		AttemptTimeout: crashAttemptTimeout,
		LeaseDuration:  crashLease,
		Retry:          payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	})
	if err != nil {
		return setupFailed("client: %v", err)
	}

	if os.Getenv(crashEnvWaitGo) != "" {
		fmt.Println(crashMarkerReady)
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return setupFailed("waiting for the go line on stdin: %v", err)
		}
	}

	res, err := client.Charge(ctx, charge(os.Getenv(crashEnvOrder), crashAmount))
	class, code := crashClassOf(err)
	out := crashChildResult{
		Status: string(res.Status), Class: class, OperationID: res.OperationID, Key: res.Key,
		ProviderRef: res.ProviderRef, Attempts: res.Attempts, Replayed: res.Replayed,
	}
	if err != nil {
		out.Error = err.Error()
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	return code
}

// crashBlockingTransport announces each request on stdout and then never
// sends it: the child is stuck between journaling an attempt and sending it.
type crashBlockingTransport struct{}

func (crashBlockingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	fmt.Printf("%s %s %s %s\n", crashMarkerSending, req.Method, req.URL.Path, req.Header.Get("Idempotency-Key"))
	for {
		// Forever, deaf to the request's context: only SIGKILL ends this.
		time.Sleep(time.Hour)
	}
}

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
	// childEnv tells a child where the fake and the ledger are.
	childEnv []string
	// reopen opens the ledger again, as a restarted process would.
	reopen func(t *testing.T) ledger.Store
	ctx    context.Context
}

// crashEachStore runs fn on SQLite and on PostgreSQL (which skips without
// PAYONCE_TEST_DATABASE_URL unless PAYONCE_REQUIRE_POSTGRES=1).
func crashEachStore(t *testing.T, fn func(t *testing.T, pg bool)) {
	for _, pg := range []bool{false, true} {
		name := "sqlite"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, pg)
		})
	}
}

func newCrashEnv(t *testing.T, pg bool, opts mocks.StripeOptions) *crashEnv {
	t.Helper()
	e := &crashEnv{clock: &crashClock{}, log: &crashRequestLog{}}
	opts.Clock = e.clock.Now
	opts.Logger = slog.New(e.log)
	e.fake = mocks.NewStripe(opts)
	t.Cleanup(e.fake.Close)
	e.childEnv = []string{
		crashEnvChild + "=1",
		crashEnvStripeURL + "=" + e.fake.URL(),
		crashEnvStripeKey + "=" + e.fake.APIKey(),
	}
	if pg {
		e.store = newPGStore(t)
		schema := e.store.(*ledgerpg.Store).Schema()
		e.childEnv = append(e.childEnv, crashEnvPGURL+"="+testkit.URL(t), crashEnvPGSchema+"="+schema)
		e.reopen = func(t *testing.T) ledger.Store {
			s, err := ledgerpg.New(testkit.NewPool(t), ledgerpg.Config{Schema: schema})
			require.NoError(t, err)
			return s
		}
	} else {
		path := filepath.Join(t.TempDir(), "ledger.db")
		e.reopen = func(t *testing.T) ledger.Store {
			s, err := ledgersqlite.Open(path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			require.NoError(t, s.Migrate(context.Background()))
			return s
		}
		e.store = e.reopen(t)
		e.childEnv = append(e.childEnv, crashEnvSQLite+"="+path)
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
	id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{order}}.OperationID()
	require.NoError(t, err)
	return id
}

// crashProc is one child process.
type crashProc struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *crashOutput
	stderr  *crashOutput
	done    chan struct{} // closed once the child has exited and been waited for
	waitErr error         // valid after done
}

// crashOutput collects a child's output; it is written by exec's copying
// goroutine while the test reads it.
type crashOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *crashOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *crashOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// lines returns the complete lines written so far.
func (o *crashOutput) lines() []string {
	s := o.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

// startChild starts the test binary as a child charging order, with env
// added to its environment. The
// child is killed when the test ends if it is still running.
func (e *crashEnv) startChild(t *testing.T, name, order string, env ...string) *crashProc {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	p := &crashProc{name: name, stdout: &crashOutput{}, stderr: &crashOutput{}, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, exe, "-test.run=^$")
	p.cmd.Env = append(append(append(os.Environ(), e.childEnv...), crashEnvOrder+"="+order), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.WaitDelay = 10 * time.Second
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	if err := p.cmd.Start(); err != nil {
		cancel()
		require.NoError(t, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		cancel()
	})
	return p
}

func (p *crashProc) describe() string {
	return fmt.Sprintf("child %s\n--- stdout:\n%s\n--- stderr:\n%s", p.name, p.stdout.String(), p.stderr.String())
}

func (p *crashProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitLine waits for a stdout line starting with prefix and returns it. It
// fails if the child exits first.
func (p *crashProc) waitLine(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, l := range p.stdout.lines() {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		if p.exited() {
			require.FailNow(t, "child exited before printing "+prefix, "%v\n%s", p.waitErr, p.describe())
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "timed out waiting for "+prefix, p.describe())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits until the child is gone.
func (p *crashProc) kill(t *testing.T) {
	t.Helper()
	require.False(t, p.exited(), "the child exited before it could be killed:\n%s", p.describe())
	require.NoError(t, p.cmd.Process.Signal(os.Kill))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the killed child did not go away", p.describe())
	}
	require.Equal(t, -1, p.cmd.ProcessState.ExitCode(), "the child must die of the signal, not exit: %v\n%s", p.cmd.ProcessState, p.describe())
}

// release lets a child waiting on crashEnvWaitGo charge.
func (p *crashProc) release(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(p.stdin, "go\n")
	require.NoError(t, err, p.describe())
}

// finish waits for the child to exit and returns its exit code and result.
func (p *crashProc) finish(t *testing.T, timeout time.Duration) (int, crashChildResult) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		require.FailNow(t, "timed out waiting for the child to exit", p.describe())
	}
	var res crashChildResult
	found := false
	for _, l := range p.stdout.lines() {
		if strings.HasPrefix(l, "{") {
			require.NoError(t, json.Unmarshal([]byte(l), &res), p.describe())
			found = true
		}
	}
	require.True(t, found, "the child printed no result line: %v\n%s", p.waitErr, p.describe())
	return p.cmd.ProcessState.ExitCode(), res
}

// TestCrashBetweenJournalAndSend kills a process after it journaled an
// attempt and before a byte of the request left. The restarted service must
// not assume either way: it waits out the dead process's lease, looks the
// operation up, finds nothing, and resends with the same key.
func TestCrashBetweenJournalAndSend(t *testing.T) {
	t.Parallel()
	crashEachStore(t, func(t *testing.T, pg bool) {
		e := newCrashEnv(t, pg, mocks.StripeOptions{SearchLag: 20 * time.Second})
		const order = "order-crash-journal"
		opID := crashOpID(t, order)

		child := e.startChild(t, "journal", order, crashEnvTransport+"=block")
		marker := strings.Fields(child.waitLine(t, crashMarkerSending, time.Minute))
		child.kill(t)
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
		require.Zero(t, e.fake.Truth().Requests[crashCharge], "the child never sent")

		client := e.restarted(t)
		// While the dead process's lease lives, nobody may act on it.
		res, err := client.Charge(e.ctx, charge(order, crashAmount))
		require.ErrorIs(t, err, payonce.ErrInProgress)
		require.Equal(t, payonce.ResultInProgress, res.Status)
		require.Zero(t, e.log.len(), "nothing is sent or looked up under a live lease")

		e.clock.Skip(crashLease + time.Minute)
		res, err = client.Charge(e.ctx, charge(order, crashAmount))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.False(t, res.Replayed)
		require.Equal(t, 2, res.Attempts)
		require.Equal(t, []string{crashSearch, "POST /v1/payment_intents"}, e.log.since(0),
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

		again, err := client.Charge(e.ctx, charge(order, crashAmount))
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
	crashEachStore(t, func(t *testing.T, pg bool) {
		e := newCrashEnv(t, pg, mocks.StripeOptions{SearchLag: 20 * time.Second, HangFor: 10 * time.Minute})
		e.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultHangAfterProcessing)
		const order = "order-crash-record"
		opID := crashOpID(t, order)

		child := e.startChild(t, "record", order)
		deadline := time.Now().Add(time.Minute)
		for len(e.fake.Truth().Payments) == 0 {
			require.False(t, child.exited(), "the child exited before the charge was made:\n%s", child.describe())
			require.True(t, time.Now().Before(deadline), "the charge never reached the fake:\n%s", child.describe())
			time.Sleep(5 * time.Millisecond)
		}
		child.kill(t)

		truth := e.fake.Truth()
		require.Len(t, truth.Payments, 1)
		pi := truth.Payments[0]
		require.True(t, pi.Authorized)
		require.Equal(t, opID, pi.Metadata[stripe.MetaOperation])
		require.Equal(t, 1, truth.Requests[crashCharge])

		op, atts := e.get(t, opID)
		require.Equal(t, ledger.StatusInFlight, op.Status, "the answer never reached the ledger")
		require.Empty(t, op.ProviderRef)
		require.Len(t, atts, 1)
		require.True(t, atts[0].FinishedAt.IsZero())
		require.Equal(t, pi.IdempotencyKey, atts[0].Key)

		client := e.restarted(t)
		n := e.log.len()
		_, err := client.Charge(e.ctx, charge(order, crashAmount))
		require.ErrorIs(t, err, payonce.ErrInProgress, "the dead process's lease still lives")

		e.clock.Skip(crashLease + time.Minute)
		res, err := client.Charge(e.ctx, charge(order, crashAmount))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.Equal(t, pi.ID, res.ProviderRef)
		require.Equal(t, 1, res.Attempts, "found by lookup: no new attempt")
		require.Equal(t, []string{crashSearch, "GET /v1/payment_intents/" + pi.ID}, e.log.since(n), "a lookup (the search hit re-read by id), and no POST")

		truth = e.fake.Truth()
		require.Equal(t, 1, truth.Requests[crashCharge], "no new POST")
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
	crashEachStore(t, func(t *testing.T, pg bool) {
		e := newCrashEnv(t, pg, mocks.StripeOptions{SlowFor: 5 * time.Second})
		e.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultSlow)
		const order = "order-crash-race"
		opID := crashOpID(t, order)

		children := []*crashProc{
			e.startChild(t, "a", order, crashEnvWaitGo+"=1"),
			e.startChild(t, "b", order, crashEnvWaitGo+"=1"),
		}
		for _, c := range children {
			c.waitLine(t, crashMarkerReady, time.Minute)
		}
		for _, c := range children {
			c.release(t)
		}
		classes := map[string]int{}
		var ref string
		for _, c := range children {
			code, res := c.finish(t, 2*time.Minute)
			switch code {
			case crashExitSucceeded:
				require.Equal(t, string(payonce.ResultSucceeded), res.Status, c.describe())
				require.NotEmpty(t, res.ProviderRef, c.describe())
				if ref != "" {
					require.Equal(t, ref, res.ProviderRef, "both saw one charge")
				}
				ref = res.ProviderRef
			case crashExitInProgress, crashExitUnknown:
			default:
				require.FailNow(t, fmt.Sprintf("child exited %d (%s)", code, res.Class), c.describe())
			}
			require.Equal(t, opID, res.OperationID, c.describe())
			classes[res.Class]++
		}
		t.Logf("children: %v", classes)
		require.Equal(t, 1, classes["succeeded"], "the slow first request overlaps the second process: one charges, the other is refused")
		require.Equal(t, 1, classes["in_progress"])

		truth := e.fake.Truth()
		require.Equal(t, 1, truth.Requests[crashCharge], "only the lease holder sent")
		require.Len(t, truth.Payments, 1)
		require.Equal(t, 1, truth.ChargesBy(stripe.MetaOperation)[opID])

		res, err := e.restarted(t).Charge(e.ctx, charge(order, crashAmount))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.True(t, res.Replayed)
		require.Equal(t, ref, res.ProviderRef)
		require.Equal(t, 1, e.fake.Truth().Requests[crashCharge])
	})
}
