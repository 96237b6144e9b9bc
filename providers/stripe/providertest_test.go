package stripe_test

import (
	"testing"

	"github.com/payonce/payonce/providers/providertest"
)

// TestProviderSuite runs the provider conformance suite against the fake
// Stripe (the environment is providertest.StripeEnv, which the root
// package's soak shares).
func TestProviderSuite(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.StripeEnv)
}
