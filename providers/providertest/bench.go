package providertest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
)

// start is the instant every scenario starts from, on the shared clock.
var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Defaults of the Options every scenario starts from.
const (
	defaultKeyTTL    = 24 * time.Hour
	defaultLookupLag = 2 * time.Minute
)

// newEnvFunc builds the environment of one subtest.
type newEnvFunc = func(t *testing.T, o Options) *Env

// suite is what every scenario gets from Run.
type suite struct {
	newEnv newEnvFunc
	// name is the scenario's name, the key of Env.Skip.
	name string
	// newStore opens the scenario's ledger; nil: a fresh SQLite file.
	newStore func(testing.TB) ledger.Store
}

// bench is what one scenario works with: the adapter and its fake, a fresh
// ledger (SQLite unless the suite says otherwise), and a client on the
// shared manual clock.
type bench struct {
	t      *testing.T
	env    *Env
	opts   Options
	clock  *mocks.ManualClock
	store  ledger.Store
	client *payonce.Client
	cfg    payonce.Config
	ctx    context.Context
	// hooks is the webhook receiver of the subtest, serving the client's
	// WebhookHandler (when the adapter implements payonce.WebhookParser).
	hooks *Receiver
}

// setup changes a scenario's Options and client Config.
type setup struct {
	opts   func(*Options)
	config func(*payonce.Config)
	// webhooks, when set, turns the fake's webhooks on, pointed at the
	// receiver, and may set their faults of delivery.
	webhooks func(*mocks.WebhookDelivery)
}

func defaultOptions() Options {
	return Options{
		Clock:     mocks.NewManualClock(start),
		KeyTTL:    defaultKeyTTL,
		LookupLag: defaultLookupLag,
		Seed:      1,
		// Far beyond the client's attempt timeout: a hang is seen as one.
		HangFor:    time.Minute,
		SlowFor:    500 * time.Millisecond,
		RetryAfter: 50 * time.Millisecond,
	}
}

// newBench builds the environment of a scenario, skips it if the adapter
// said it cannot run it, and builds the ledger and the client. Every bench
// checks at the end that the fake's truth shows no operation that moved
// money twice.
func newBench(t *testing.T, sc *suite, s setup) *bench {
	t.Helper()
	o := defaultOptions()
	// The receiver starts before the fake, which needs its URL; it
	// answers 503 until the client's handler is set below, and nothing
	// happens at the fake before that.
	hooks := StartReceiver(t)
	o.WebhookReceiver = hooks.URL()
	if s.webhooks != nil {
		o.Webhooks = hooks.Delivery()
		s.webhooks(&o.Webhooks)
	}
	if s.opts != nil {
		s.opts(&o)
	}
	env := sc.newEnv(t, o)
	if env == nil {
		t.Fatal("providertest: newEnv returned nil")
	}
	if msg := env.check(); msg != "" {
		t.Fatal("providertest: " + msg)
	}
	if reason, ok := env.Skip[sc.name]; ok {
		t.Skipf("%s: %s", env.Provider.Name(), reason)
	}
	if _, sub, ok := strings.Cut(t.Name(), "/"+sc.name+"/"); ok {
		if reason, ok := env.Skip[sc.name+"/"+sub]; ok {
			t.Skipf("%s: %s", env.Provider.Name(), reason)
		}
	}
	require.Equal(t, o.KeyTTL, env.Provider.Info().KeyTTL, "the environment must apply Options.KeyTTL to the adapter")

	newStore := sc.newStore
	if newStore == nil {
		newStore = NewSQLiteStore
	}
	store := newStore(t)
	cfg := ClientConfig(env.Provider, store, o.Clock.Now)
	// Attempts and lookups alike: generous, so that a lookup finishes on a
	// loaded machine (-race, other tests); hangs last longer.
	cfg.AttemptTimeout = 3 * time.Second
	if s.config != nil {
		s.config(&cfg)
	}
	client, err := payonce.New(cfg)
	require.NoError(t, err)
	if _, ok := env.Provider.(payonce.WebhookParser); ok {
		h, err := client.WebhookHandler(payonce.WebhookOptions{})
		require.NoError(t, err)
		hooks.Serve(h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	b := &bench{t: t, env: env, opts: o, clock: o.Clock, store: store, client: client, cfg: cfg, ctx: ctx, hooks: hooks}
	t.Cleanup(func() {
		if problems := moneyProblems(env.PaymentOperation, env.RefundOperation, env.Fake.Truth()); len(problems) > 0 {
			t.Errorf("%s moved money more than once:\n  %s", env.Provider.Name(), strings.Join(problems, "\n  "))
		}
	})
	return b
}

// NewSQLiteStore opens a fresh, migrated SQLite ledger in t.TempDir,
// closed when the test ends: the ledger of every scenario unless a soak
// is given another (SoakConfig.NewStore).
func NewSQLiteStore(t testing.TB) ledger.Store {
	t.Helper()
	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"), ledgersqlite.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Migrate(context.Background()))
	return store
}

func (b *bench) truth() mocks.Truth { return b.env.Fake.Truth() }

// pastLag moves the clock past the lookup lag since the last attempt, far
// inside the key window.
func (b *bench) pastLag() { b.clock.Advance(b.opts.LookupLag + time.Minute) }

// pastWindow moves the clock past the key window and its safety margin.
func (b *bench) pastWindow() { b.clock.Advance(b.opts.KeyTTL + time.Hour) }

// posts counts the POSTs the fake received on the endpoint m selects.
func (b *bench) posts(m mocks.Match) int { return b.truth().Requests["POST "+m.Path] }

// allPosts counts every POST the fake received, but Env.Auxiliary ones.
func (b *bench) allPosts() int {
	n := 0
	for route, c := range b.requests() {
		if strings.HasPrefix(route, "POST ") {
			n += c
		}
	}
	return n
}

// requests is the fake's Truth().Requests without Env.Auxiliary routes.
func (b *bench) requests() map[string]int {
	out := map[string]int{}
	for route, c := range b.truth().Requests {
		if !slices.ContainsFunc(b.env.Auxiliary, func(m mocks.Match) bool { return strings.ToUpper(m.Method)+" "+m.Path == route }) {
			out[route] = c
		}
	}
	return out
}

// charges counts the authorized payments the fake holds for operation op.
func (b *bench) charges(op string) int {
	n := 0
	for _, p := range b.truth().Payments {
		if p.Authorized && b.env.PaymentOperation(p) == op {
			n++
		}
	}
	return n
}

// refundsOf returns the refunds the fake holds for operation op.
func (b *bench) refundsOf(op string) []mocks.TruthRefund {
	var out []mocks.TruthRefund
	for _, r := range b.truth().Refunds {
		if b.env.RefundOperation(r) == op {
			out = append(out, r)
		}
	}
	return out
}

// payment returns the fake's payment with provider id ref.
func (b *bench) payment(ref string) mocks.TruthPayment {
	b.t.Helper()
	p, ok := b.truth().Payment(ref)
	require.True(b.t, ok, "the fake holds no payment %q", ref)
	return p
}

// get reads an operation and its attempts from the ledger.
func (b *bench) get(id string) (ledger.Operation, []ledger.Attempt) {
	b.t.Helper()
	op, atts, err := b.store.Get(b.ctx, id)
	require.NoError(b.t, err)
	return op, atts
}

// opID is the operation id of an identity of this provider.
func (b *bench) opID(kind payonce.Kind, refs ...string) string {
	b.t.Helper()
	id, err := payonce.Identity{Provider: b.env.Provider.Name(), Kind: kind, References: refs}.OperationID()
	require.NoError(b.t, err)
	return id
}

func (b *bench) charge(order string, amount int64) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: amount, Currency: b.env.Currency, PaymentMethod: b.env.GoodMethod,
		Customer: b.env.Customer}
}

// chargeAfter scripts fault f on the charge endpoint and charges order
// once.
func (b *bench) chargeAfter(f mocks.FaultKind, order string, amount int64) (payonce.ChargeParams, payonce.Result, error) {
	b.env.Fake.Script(b.env.Charge, f)
	p := b.charge(order, amount)
	res, err := b.client.Charge(b.ctx, p)
	return p, res, err
}

// skipWebhookOnly skips a scenario about failing lookups where the adapter
// has none (Env.WebhookOnly), saying why the scenario is not needed there.
func (b *bench) skipWebhookOnly(why string) {
	if b.env.WebhookOnly {
		b.t.Skipf("%s has no status lookup that could fail (Env.WebhookOnly): %s", b.env.Provider.Name(), why)
	}
}

// chargeBlind is chargeAfter with the status lookups failing (with a 502,
// more of them than one call makes), so that the client cannot tell what
// the charge did. Where the same-key repeat is the lookup
// (Env.RepeatIsLookup), the repeats fail the same way.
func (b *bench) chargeBlind(f mocks.FaultKind, order string, amount int64) (payonce.ChargeParams, payonce.Result, error) {
	b.failLookups()
	if !b.env.RepeatIsLookup {
		return b.chargeAfter(f, order, amount)
	}
	// The repeats carry the operation's key (generation 0's is its id);
	// another request to the endpoint (another system's) goes through.
	b.env.Fake.Script(b.env.Charge, f)
	repeat := b.env.Charge
	repeat.IdempotencyKey = b.env.WireKey(b.opID(payonce.KindCharge, order))
	b.env.Fake.Script(repeat, repeated(mocks.FaultGatewayBefore502, lookupFaults)...)
	p := b.charge(order, amount)
	res, err := b.client.Charge(b.ctx, p)
	return p, res, err
}

// failLookups makes the next status lookups fail with a 502, more of them
// than one call makes. Env.Auxiliary GETs (a webhook certificate) pass
// through untouched, ahead of them: they are no lookup.
func (b *bench) failLookups() {
	for _, m := range b.env.Auxiliary {
		if strings.EqualFold(m.Method, http.MethodGet) {
			b.env.Fake.Script(m, repeated(mocks.FaultNone, lookupFaults)...)
		}
	}
	b.env.Fake.Script(b.env.Lookup, repeated(mocks.FaultGatewayBefore502, lookupFaults)...)
}

// sentCharges is how many POSTs the charge endpoint may have received for
// the operations ids: one each where a lookup finds a lost charge; where
// the same-key repeat is the lookup (Env.RepeatIsLookup), one per attempt
// of theirs the ledger journaled as possibly reaching the provider (the
// first request and its repeats, never a second payment: the bench's end
// check and the scenarios' charge counts hold that).
func (b *bench) sentCharges(ids ...string) int {
	b.t.Helper()
	if !b.env.RepeatIsLookup {
		return len(ids)
	}
	n := 0
	for _, id := range ids {
		_, atts := b.get(id)
		for _, a := range atts {
			if a.MayHaveReached {
				n++
			}
		}
	}
	return n
}

// skipRepeatIsLookup skips a scenario about a lookup that cannot see a
// charge the client has no answer of, where the same-key repeat is that
// lookup (Env.RepeatIsLookup), saying why it is not needed there.
func (b *bench) skipRepeatIsLookup(why string) {
	if b.env.RepeatIsLookup {
		b.t.Skipf("%s repeats a charge with the same key to learn its outcome (Env.RepeatIsLookup): %s", b.env.Provider.Name(), why)
	}
}

// reviewPastWindow moves past the key window and charges p again: with the
// outcome still unknown the operation goes to review, and rule 5 holds (no
// POST outside the key window). It returns the review and the POST count.
func (b *bench) reviewPastWindow(p payonce.ChargeParams, why string) (payonce.Result, int) {
	b.t.Helper()
	b.pastWindow()
	posts := b.allPosts()
	res, err := b.client.Charge(b.ctx, p)
	require.ErrorIs(b.t, err, payonce.ErrManualReview, why)
	require.Equal(b.t, payonce.ResultManualReview, res.Status)
	require.Equal(b.t, payonce.ReasonWindowPassed, res.ReviewReason)
	require.Equal(b.t, posts, b.allPosts(), "rule 5: no POST outside the key window")
	return res, posts
}

func (b *bench) refund(order string, seq int, amount int64) payonce.RefundParams {
	return payonce.RefundParams{OrderID: order, RefundSeq: seq, Amount: amount, Currency: b.env.Currency}
}

// act runs a capture, cancel or refund that the provider accepts, with no
// fault (m selects its endpoint). Where the provider finishes actions later
// (Env.AcceptsActions) the first call must report the outcome unknown and
// the second settle it by a lookup, without a second POST; elsewhere the
// first call settles it.
func (b *bench) act(m mocks.Match, call func() (payonce.Result, error)) (payonce.Result, error) {
	b.t.Helper()
	if b.env.WebhookOnly {
		return b.found(m, call)
	}
	res, err := call()
	if !b.env.AcceptsActions {
		return res, err
	}
	require.ErrorIs(b.t, err, payonce.ErrOutcomeUnknown, "%s accepts actions and finishes them later", b.env.Provider.Name())
	require.Equal(b.t, payonce.ResultUnknown, res.Status)
	posts := b.posts(m)
	res, err = call()
	require.Equal(b.t, posts, b.posts(m), "an accepted action is looked up, never sent again")
	return res, err
}

// found makes a call whose outcome a lookup finds elsewhere (an answer
// lost, an action accepted). Where outcomes arrive only by webhook
// (Env.WebhookOnly) and the call could not tell, it waits for the fake's
// webhooks and calls again, which must send nothing: the webhook told.
func (b *bench) found(m mocks.Match, call func() (payonce.Result, error)) (payonce.Result, error) {
	b.t.Helper()
	res, err := call()
	if !b.env.WebhookOnly || !errors.Is(err, payonce.ErrOutcomeUnknown) {
		return res, err
	}
	b.flush()
	posts := b.posts(m)
	res, err = call()
	require.Equal(b.t, posts, b.posts(m), "settled by the webhook, never sent again")
	return res, err
}

// awaitWebhooks waits for the fake's webhooks where outcomes arrive only
// that way (Env.WebhookOnly), before a call that expects them known.
func (b *bench) awaitWebhooks() {
	if b.env.WebhookOnly {
		b.flush()
	}
}

// repeat sends the operation's request again, directly with the adapter
// and a plain HTTP client, under the operation's key, and classifies the
// answer: what a resend by a client that does not look up first would get.
func (b *bench) repeat(id string) payonce.Outcome {
	b.t.Helper()
	op, _ := b.get(id)
	req, err := payonce.ParseRequest(op.Request)
	require.NoError(b.t, err)
	sr := payonce.SendRequest{OperationID: op.ID, Key: op.Key, Request: req}
	return b.send(sr)
}

// send sends one request built by the adapter and classifies the answer.
func (b *bench) send(sr payonce.SendRequest) payonce.Outcome {
	b.t.Helper()
	hr, err := b.env.Provider.NewRequest(b.ctx, sr)
	require.NoError(b.t, err)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	if a, ok := b.env.Provider.(payonce.RequestAuthorizer); ok {
		// The credential the client would add (PayPal's access token).
		require.NoError(b.t, a.AuthorizeRequest(b.ctx, hc, hr))
	}
	resp, err := hc.Do(hr)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return b.env.Provider.Classify(sr, resp.StatusCode, resp.Header, body)
}

// waitFor polls cond on the real clock, for something the fake does on its
// own (a slow request finishing).
func (b *bench) waitFor(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("providertest: timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ClientConfig is the payonce.Config the suite's clients use against a fake:
// keep-alives off, so that a dropped answer reaches the client as a dropped
// answer, not as Go's transparent resend on a new connection; short
// backoffs, so that tests do not wait; a 2 s attempt timeout.
func ClientConfig(psp payonce.Provider, store ledger.Store, now func() time.Time) payonce.Config {
	return payonce.Config{
		Provider: psp, Store: store, Now: now,
		HTTPClient:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		AttemptTimeout: 2 * time.Second,
		Retry:          payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	}
}
