package telemetrytest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/stripe"
)

// The fixture of the root package's client tests (its helpers_test.go),
// the part these tests use: a fake Stripe, the Stripe adapter pointed at
// it, a fresh SQLite ledger and a client on a manual clock.

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
	fake    mocks.StripeOptions
	config  func(*payonce.Config)
	baseURL string
}

const chargePath = "/v1/payment_intents"

// setup builds a bundle on a fresh SQLite ledger.
func setup(t *testing.T, o setupOpts) *bundle {
	t.Helper()
	store := providertest.NewSQLiteStore(t)
	clock := mocks.NewManualClock(t0)
	o.fake.Clock = clock.Now
	fake := mocks.NewStripe(o.fake)
	t.Cleanup(fake.Close)
	base := fake.URL()
	if o.baseURL != "" {
		base = o.baseURL
	}
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: base, Now: clock.Now})
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

func charge(order string, amount int64) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "USD", PaymentMethod: "pm_card_visa"}
}

// chargesOf counts the PaymentIntents the fake holds for an operation.
func (b *bundle) chargesOf(t *testing.T, opID string) int {
	t.Helper()
	return b.fake.Truth().ChargesBy(stripe.MetaOperation)[opID]
}

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
