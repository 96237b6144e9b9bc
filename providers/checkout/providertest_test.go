package checkout_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/checkout"
	"github.com/payonce/payonce/providers/providertest"
)

// TestProviderSuite runs the provider conformance suite against the fake
// Checkout.com.
func TestProviderSuite(t *testing.T) {
	t.Parallel()
	providertest.Run(t, func(t *testing.T, o providertest.Options) *providertest.Env {
		fake := mocks.NewCheckout(mocks.CheckoutOptions{
			Clock: o.Clock.Now, KeyTTL: o.KeyTTL, Seed: o.Seed,
			FaultRates: o.FaultRates, FaultGETs: o.FaultGETs,
			HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.RetryAfter,
		})
		t.Cleanup(fake.Close)
		psp, err := checkout.New(checkout.Config{SecretKey: fake.SecretKey(), BaseURL: fake.URL(),
			KeyTTL: o.KeyTTL, SettleLag: o.LookupLag, Now: o.Clock.Now})
		require.NoError(t, err)
		return &providertest.Env{
			Provider: psp,
			Fake:     fake,
			Charge:   mocks.Match{Method: "POST", Path: "/payments"},
			Capture:  mocks.Match{Method: "POST", Path: "/payments/{id}/captures"},
			Cancel:   mocks.Match{Method: "POST", Path: "/payments/{id}/voids"},
			Refund:   mocks.Match{Method: "POST", Path: "/payments/{id}/refunds"},

			Currency:         "USD",
			GoodMethod:       mocks.CheckoutSourceApproved,
			DeclinedMethod:   mocks.CheckoutSourceInsufficientFunds,
			DeclineErrorCode: "declined",
			DeclineCode:      "20051",
			DeclineMessage:   "Insufficient Funds",

			// Only 2xx answers are kept under Cko-Idempotency-Key: after a
			// 5xx the same key is processed as a new payment.
			StoredErrors:   providertest.StoredErrorsForgotten,
			KeyInUseStatus: http.StatusConflict,
			// Checkout.com documents no answer for a key reused with
			// another body; the fake replays the first request's 2xx (the
			// documented "same status and body"), which the adapter reads
			// as key_mismatch with a Contradiction. The client sends that
			// to review with ReasonContradicted, not ReasonKeyMismatch, so
			// the suite's scenario (which expects the latter) is skipped;
			// TestE2ESameKeyOtherRequest covers it.
			ReportsKeyMismatch: false,
			TwoStage:           true,
			// Captures, voids and refunds: 202 Accepted, finished later.
			AcceptsActions: true,
		}
	})
}
