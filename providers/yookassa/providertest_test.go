package yookassa_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/yookassa"
)

// TestProviderSuite runs the provider conformance suite against the fake
// YooKassa.
func TestProviderSuite(t *testing.T) {
	t.Parallel()
	providertest.Run(t, func(t *testing.T, o providertest.Options) *providertest.Env {
		fake := mocks.NewYooKassa(mocks.YooKassaOptions{
			Clock: o.Clock.Now, KeyTTL: o.KeyTTL, Seed: o.Seed,
			FaultRates: o.FaultRates, FaultGETs: o.FaultGETs,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.RetryAfter,
		})
		t.Cleanup(fake.Close)
		psp, err := yookassa.New(yookassa.Config{ShopID: fake.ShopID(), SecretKey: fake.SecretKey(), BaseURL: fake.URL(),
			KeyTTL: o.KeyTTL, ListLag: o.LookupLag, Now: o.Clock.Now})
		require.NoError(t, err)
		return &providertest.Env{
			Provider: psp,
			Fake:     fake,
			Charge:   mocks.Match{Method: "POST", Path: "/v3/payments"},
			Capture:  mocks.Match{Method: "POST", Path: "/v3/payments/{id}/capture"},
			Cancel:   mocks.Match{Method: "POST", Path: "/v3/payments/{id}/cancel"},
			Refund:   mocks.Match{Method: "POST", Path: "/v3/refunds"},

			Currency:         "RUB",
			GoodMethod:       mocks.YooKassaMethodSucceeds,
			DeclinedMethod:   mocks.YooKassaMethodInsufficientFunds,
			DeclineErrorCode: "canceled",
			DeclineCode:      "insufficient_funds",

			// "500: the result is unknown, repeat with the same key": the
			// key keeps the real outcome.
			StoredErrors: providertest.StoredErrorsRealOutcome,
			// A repeat while the first request runs: 202 with retry_after.
			KeyInUseStatus:     http.StatusAccepted,
			ReportsKeyMismatch: true,
			TwoStage:           true,
		}
	})
}
