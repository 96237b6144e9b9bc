package payonce_test

import (
	"testing"

	"github.com/payonce/payonce/ledger"
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
		{providertest.NewSQLiteStore, providertest.SoakConfig{Name: "sqlite", Charges: 300, Refunds: 100, Declines: 6}, providertest.SoakConfig{Name: "sqlite", Charges: 150, Refunds: 50, Declines: 4}},
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
