package paypal_test

import (
	"testing"

	"github.com/payonce/payonce/providers/paypal"
	"github.com/payonce/payonce/providers/providertest"
)

// TestProviderSuite runs the provider conformance suite, webhooks
// included, against the fake PayPal (providertest.PayPalEnv: offline
// webhook verification, both key windows at the suite's).
func TestProviderSuite(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.PayPalEnv)
}

// TestProviderSuiteVerifiedByAPI runs the webhook scenarios with webhooks
// verified by PayPal's verify-webhook-signature call; the others are the
// same as TestProviderSuite's and are skipped here.
func TestProviderSuiteVerifiedByAPI(t *testing.T) {
	t.Parallel()
	providertest.Run(t, func(t *testing.T, o providertest.Options) *providertest.Env {
		e := providertest.PayPalEnvConfig{Verification: paypal.VerifyAPI}.Env(t, o)
		for _, name := range []string{
			providertest.ScenarioSuccessAndReplay, providertest.ScenarioAnswerDropped, providertest.ScenarioHangPastTimeout,
			providertest.ScenarioGatewayBefore, providertest.ScenarioGatewayAfter, providertest.ScenarioStoredErrors,
			providertest.ScenarioKeyInUse, providertest.ScenarioKeyMismatch, providertest.ScenarioDecline,
			providertest.ScenarioRefunds, providertest.ScenarioCaptureAndCancel, providertest.ScenarioLookupLag,
			providertest.ScenarioKeyWindowPassed, providertest.ScenarioSoak,
		} {
			e.Skip[name] = "no webhooks: TestProviderSuite runs it"
		}
		return e
	})
}

// TestSoakKindWindows is the soak with PayPal's windows apart, as on an
// account with the defaults: charges (Orders) keep their request id for
// 6 hours, refunds (Payments) for the suite's 24 hours. Every operation
// records its own kind's window, and no attempt starts outside it.
func TestSoakKindWindows(t *testing.T) {
	t.Parallel()
	cfg := providertest.SoakConfig{Name: "paypal orders 6h payments 24h", Charges: 150, Refunds: 50, Declines: 5}
	if testing.Short() {
		cfg = providertest.SoakConfig{Name: "paypal orders 6h payments 24h", Charges: 60, Refunds: 20, Declines: 3}
	}
	providertest.Soak(t, providertest.PayPalEnvConfig{OrdersKeyTTL: paypal.DefaultOrdersKeyTTL}.Env, cfg)
}
