package adyen_test

import (
	"testing"

	"github.com/payonce/payonce/providers/providertest"
)

// TestProviderSuite runs the provider conformance suite against the fake
// Adyen (providertest.AdyenEnv). Adyen has no status lookup: the suite's
// receiver takes the fake's signed webhooks in every scenario, and they
// settle what a lookup finds at the other providers.
func TestProviderSuite(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.AdyenEnv)
}
