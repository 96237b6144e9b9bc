package payonce_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// TestStoredErrorStripeNeverFailed (review rev3): Stripe documents a stored
// 500 as indeterminate: "You should treat the result of a 500 request as
// indeterminate ... Stripe engineers examine failed requests and try to
// appropriately reconcile the results of any mutations that result in 500s.
// While the idempotency-cached response to those requests won't change,
// we'll try to fire webhooks for any new objects created as part of Stripe's
// reconciliation ... if creating a charge returns a 500 error but we detect
// that the information has gone out a payment network, we'll try to roll it
// forward" (https://docs.stripe.com/error-low-level, Server errors). Two
// lookups minutes after the replay cannot see a charge Stripe's remediation
// rolls forward hours later, so Config.FailStoredErrors must not record such
// a charge failed (the service would then charge the order again under a
// new operation): it goes to review (stored_error), read-only lookups
// continuing, as without the policy.
func TestStoredErrorStripeNeverFailed(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{config: func(c *payonce.Config) { c.FailStoredErrors = true }}, func(t *testing.T, b *bundle) {
		require.False(t, b.psp.Info().StoredErrorsFinal, "Stripe's stored 500 is indeterminate")
		p := charge("order-rollforward", 1200)
		id, end := stored500Replayed(t, b, p)
		b.clock.Set(end.Add(61 * time.Second))
		require.Equal(t, ledger.StatusUnknown, storedStep(t, b, p, id).Status)
		b.clock.Set(end.Add(91 * time.Second))
		_, err := b.client.Charge(b.ctx, p)
		var de *payonce.DeclinedError
		require.NotErrorAs(t, err, &de, "a stored 500 at Stripe was recorded failed: the service would charge again")
		op, _ := attemptsOf(t, b, id)
		require.Equal(t, ledger.StatusManualReview, op.Status)
		require.Equal(t, ledger.ReviewCodeStoredError, op.ReviewCode)
		require.False(t, op.NextCheckAt.IsZero(), "lookups continue: a rolled-forward charge settles it")
	})
}

// finalStoredErrors is an adapter that declares its stored errors final
// (ProviderInfo.StoredErrorsFinal), for tests of Config.FailStoredErrors: no
// built-in adapter may.
type finalStoredErrors struct{ payonce.Provider }

func (f finalStoredErrors) Info() payonce.ProviderInfo {
	i := f.Provider.Info()
	i.StoredErrorsFinal = true
	return i
}

// Replayed keeps the wrapped adapter's replay marker (payonce.ReplayDetector).
func (f finalStoredErrors) Replayed(status int, h http.Header) bool {
	return f.Provider.(payonce.ReplayDetector).Replayed(status, h)
}
