package payonce_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/stripe"
)

// The fixture every client and reconciler test of this package builds on:
// a fake Stripe, the Stripe adapter pointed at it, a fresh ledger and a
// client on a manual clock.

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// bundle is what one client test works with.
type bundle struct {
	fake   *mocks.Stripe
	clock  *mocks.ManualClock
	store  ledger.Store
	psp    *stripe.Provider
	client *payonce.Client
	ctx    context.Context
}

type setupOpts struct {
	fake     mocks.StripeOptions
	postgres bool
	config   func(*payonce.Config)
	baseURL  string
}

const chargePath = "/v1/payment_intents"

// newPGStore is testkit.NewPGLedger as a ledger.Store alone.
func newPGStore(tb testing.TB) ledger.Store {
	tb.Helper()
	_, store := testkit.NewPGLedger(tb, context.Background())
	return store
}

// setup builds a bundle on a fresh SQLite ledger, or PostgreSQL with
// o.postgres.
func setup(t *testing.T, o setupOpts) *bundle {
	t.Helper()
	return setupOn(t, o, newStore(t, o.postgres))
}

// newStore opens a fresh, migrated ledger: PostgreSQL (newPGStore) or
// SQLite (providertest.NewSQLiteStore).
func newStore(tb testing.TB, postgres bool) ledger.Store {
	tb.Helper()
	if postgres {
		return newPGStore(tb)
	}
	return providertest.NewSQLiteStore(tb)
}

// setupPGPool is setup on a fresh PostgreSQL schema, with the pool and the
// store exposed (a test that writes its own tables or transactions needs
// them).
func setupPGPool(t *testing.T, o setupOpts) (*bundle, *pgxpool.Pool, *ledgerpg.Store) {
	t.Helper()
	pool, store := testkit.NewPGLedger(t, context.Background())
	return setupOn(t, o, store), pool, store
}

// setupOn builds a bundle on the given ledger.
func setupOn(t *testing.T, o setupOpts, store ledger.Store) *bundle {
	t.Helper()
	clock := mocks.NewManualClock(t0)
	o.fake.Clock = clock.Now
	fake := mocks.NewStripe(o.fake)
	t.Cleanup(fake.Close)
	base := fake.URL()
	if o.baseURL != "" {
		base = o.baseURL
	}
	psp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: fake.APIKey(), BaseURL: base, Now: clock.Now})
	require.NoError(t, err)
	cfg := providertest.ClientConfig(psp, store, clock.Now)
	if o.config != nil {
		o.config(&cfg)
	}
	client, err := payonce.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &bundle{fake: fake, clock: clock, store: store, psp: psp, client: client, ctx: ctx}
}

// eachSetup runs fn as two parallel subtests, on a bundle over SQLite and
// over PostgreSQL (testkit.EachStore), each built from o.
func eachSetup(t *testing.T, o setupOpts, fn func(t *testing.T, b *bundle)) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		o := o
		o.postgres = pg
		fn(t, setup(t, o))
	})
}

func charge(order string, amount int64) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "USD", PaymentMethod: "pm_card_visa"}
}

// chargesOf counts the PaymentIntents the fake holds for an operation.
func (b *bundle) chargesOf(t *testing.T, opID string) int {
	t.Helper()
	return b.fake.Truth().ChargesBy(stripe.MetaOperation)[opID]
}

func postsOf(b *bundle) int { return b.fake.Truth().Requests["POST "+chargePath] }

func attemptsOf(t *testing.T, b *bundle, id string) (ledger.Operation, []ledger.Attempt) {
	t.Helper()
	op, atts, err := b.store.Get(b.ctx, id)
	require.NoError(t, err)
	return op, atts
}

// chargeLostWhileLookupsFail charges p with Stripe charging and the answer
// lost (a 502 after processing) while the next lookups lookups fail (a 502
// before processing): the call ends unknown.
func chargeLostWhileLookupsFail(t *testing.T, b *bundle, p payonce.ChargeParams, lookups int) payonce.Result {
	t.Helper()
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultGatewayAfter502)
	b.fake.Script(mocks.Match{Method: "GET"}, slices.Repeat([]mocks.FaultKind{mocks.FaultGatewayBefore502}, lookups)...)
	res, err := b.client.Charge(b.ctx, p)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	return res
}

func newReconciler(t *testing.T, b *bundle, tweak func(*payonce.ReconcilerConfig)) *payonce.Reconciler {
	t.Helper()
	cfg := payonce.ReconcilerConfig{Store: b.store, Clients: []*payonce.Client{b.client}, Now: b.clock.Now, Owner: "reconciler-test"}
	if tweak != nil {
		tweak(&cfg)
	}
	r, err := payonce.NewReconciler(cfg)
	require.NoError(t, err)
	return r
}

// drain runs the reconciler until a pass claims nothing, moving the clock so
// that scheduled checks come due.
func drain(t *testing.T, b *bundle, r *payonce.Reconciler, step time.Duration) payonce.ReconcileReport {
	t.Helper()
	total := payonce.ReconcileReport{Transitions: map[string]int{}}
	for range 50 {
		rep, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
		total.Claimed += rep.Claimed
		total.Settled += rep.Settled
		total.ErrorCount += rep.ErrorCount
		for k, v := range rep.Transitions {
			total.Transitions[k] += v
		}
		require.Empty(t, rep.Errors)
		if rep.Claimed == 0 {
			return total
		}
		b.clock.Advance(step)
	}
	t.Fatal("reconciler did not drain")
	return total
}

func orderID(prefix string, i int) string { return prefix + "-" + time.Duration(i).String() }
