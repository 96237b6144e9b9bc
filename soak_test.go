package payonce_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
)

// TestSoak is the conformance suite's soak (providertest.Soak) with the
// Stripe adapter on both ledgers, PostgreSQL at the larger size: charges
// and refunds through a fake Stripe that fails a fifth of the requests in
// every way it knows, settled the way a caller without the background
// reconciler does (calling again with the same identity as the clock
// moves) and then by the reconciler's read-only lookups of what went to
// review; it checks that no reference was charged twice, no refund exceeds
// its charge, and every operation ended succeeded, failed or in manual
// review in agreement with the provider (providertest.CheckLedger).
func TestSoak(t *testing.T) {
	t.Parallel()
	for _, run := range []struct {
		store       func(testing.TB) ledger.Store
		size, short providertest.SoakConfig
	}{
		{newPGStore, providertest.SoakConfig{Name: "postgres", Charges: 2000, Refunds: 500, Declines: 20}, providertest.SoakConfig{Name: "postgres", Charges: 400, Refunds: 100, Declines: 8}},
		{newSQLiteStore, providertest.SoakConfig{Name: "sqlite", Charges: 300, Refunds: 100, Declines: 6}, providertest.SoakConfig{Name: "sqlite", Charges: 150, Refunds: 50, Declines: 4}},
	} {
		t.Run(run.size.Name, func(t *testing.T) {
			cfg := run.size
			if testing.Short() {
				cfg = run.short
			}
			cfg.NewStore = run.store
			providertest.Soak(t, providertest.StripeEnv, cfg)
		})
	}
}

// TestNotSentResendStaysUnknown is the regression test of a defect the soak
// found: an operation that is unknown (an earlier attempt may have reached
// the provider) is resent after a lookup, the resend is refused before
// processing (429, breaker open, connection refused: not_sent), and the
// operation was recorded as pending. A pending operation is "safe to send at
// any time", so the next call sent it with no lookup and no key-window check,
// even a day later, when the provider had forgotten the key: a second charge.
// Unknown never returns to pending.
func TestNotSentResendStaysUnknown(t *testing.T) {
	t.Parallel()
	// A 429 asking for 1 s ends the call at once (MaxRetryAfter 1 ms): the
	// operation is left to the next call as the resend's outcome made it.
	shortRetryAfter := func(c *payonce.Config) { c.Retry.MaxRetryAfter = time.Millisecond }

	t.Run("post after the key window", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{config: shortRetryAfter})
		b.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultStored500, mocks.FaultRateLimit429)
		p := charge("order-window", 1500)
		id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{p.OrderID}}.OperationID()
		require.NoError(t, err)

		_, err = b.client.Charge(b.ctx, p) // 500: maybe sent
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		b.clock.Advance(2 * time.Minute)
		_, err = b.client.Charge(b.ctx, p) // lookup: not found; resend: 429
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		op, _, err := b.store.Get(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, t0, op.WindowStart, "attempt 1 may have reached Stripe: the window stays open")
		require.Equal(t, ledger.StatusUnknown, op.Status,
			"an operation whose first attempt may have reached the provider never goes back to pending")

		b.clock.Advance(25 * time.Hour) // past Stripe's 24 h key memory
		posts := b.fake.Truth().Requests["POST /v1/payment_intents"]
		res, err := b.client.Charge(b.ctx, p)
		require.Equal(t, posts, b.fake.Truth().Requests["POST /v1/payment_intents"], "rule 5: no POST outside the key window")
		require.ErrorIs(t, err, payonce.ErrManualReview)
		require.Equal(t, payonce.ReasonWindowPassed, res.ReviewReason)
	})

	t.Run("double charge", func(t *testing.T) {
		t.Parallel()
		// Stripe's search runs behind by more than the adapter's default
		// one minute, as Stripe says it may during incidents.
		b := setup(t, setupOpts{config: shortRetryAfter, fake: mocks.StripeOptions{SearchLag: 30 * time.Minute}})
		b.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing, mocks.FaultRateLimit429)
		p := charge("order-twice", 2500)
		id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{p.OrderID}}.OperationID()
		require.NoError(t, err)

		_, err = b.client.Charge(b.ctx, p) // charged; the answer is lost
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		require.Equal(t, 1, b.chargesOf(t, id))
		b.clock.Advance(2 * time.Minute)
		_, err = b.client.Charge(b.ctx, p) // search: not yet; resend (same key, safe): 429
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

		b.clock.Advance(25 * time.Hour)
		res, err := b.client.Charge(b.ctx, p)
		// A lookup (search has long caught up) finds the first
		// PaymentIntent; a POST with the forgotten key would charge again.
		require.Equal(t, 1, b.chargesOf(t, id), "order charged twice; Stripe holds %v", b.fake.Truth().Payments)
		require.NoError(t, err)
		require.Equal(t, b.fake.Truth().Payments[0].ID, res.ProviderRef)
	})
}
