package payonce_test

import (
	"context"
	"net/http"
	"path/filepath"
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

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// bundle is what one client test works with: a fake Stripe, the Stripe
// adapter pointed at it, a fresh ledger and a client on a manual clock.
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

// newSQLiteStore opens a fresh, migrated SQLite ledger in a temporary directory.
func newSQLiteStore(t testing.TB) ledger.Store {
	t.Helper()
	s, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"), ledgersqlite.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(context.Background()))
	return s
}

// newPGStore opens a fresh, migrated PostgreSQL ledger in a schema of its
// own (skipped without PAYONCE_TEST_DATABASE_URL unless it is required).
func newPGStore(t testing.TB) ledger.Store {
	t.Helper()
	pool := testkit.NewPool(t)
	s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: testkit.NewSchema(t, pool)})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(context.Background()))
	return s
}

func setup(t *testing.T, o setupOpts) *bundle {
	t.Helper()
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
	var store ledger.Store
	if o.postgres {
		store = newPGStore(t)
	} else {
		store = newSQLiteStore(t)
	}
	cfg := payonce.Config{
		Provider: psp, Store: store, Now: clock.Now,
		// Keep-alives off: a dropped answer must reach the client as a
		// dropped answer, not as Go's transparent resend on a fresh
		// connection.
		HTTPClient:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		AttemptTimeout: 2 * time.Second,
		Retry:          payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	}
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

func TestChargeSucceedsOnceAndReplays(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	res, err := b.client.Charge(b.ctx, charge("order-1", 1999))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.NotEmpty(t, res.ProviderRef)
	require.False(t, res.Replayed)
	require.Equal(t, 1, res.Attempts)
	require.Equal(t, 1, b.chargesOf(t, res.OperationID))

	requests := b.fake.Truth().Requests
	again, err := b.client.Charge(b.ctx, charge("order-1", 1999))
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, res.ProviderRef, again.ProviderRef)
	require.Equal(t, requests, b.fake.Truth().Requests, "a replay must not call the provider")

	op, atts, err := b.store.Get(b.ctx, res.OperationID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
	require.Len(t, atts, 1)
	require.Equal(t, ledger.OutcomeSuccess, atts[0].Outcome)
	require.Equal(t, t0, op.WindowStart)
	require.Equal(t, t0.Add(24*time.Hour), op.KeyExpiresAt)
}
