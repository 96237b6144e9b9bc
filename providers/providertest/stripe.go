package providertest

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// StripeEnv is the environment of the Stripe adapter: a fresh fake Stripe
// built from o and the adapter pointed at it. providers/stripe runs the
// suite with it, and the root package its soak on PostgreSQL (Soak).
func StripeEnv(t *testing.T, o Options) *Env {
	fake := mocks.NewStripe(mocks.StripeOptions{
		Clock: o.Clock.Now, KeyTTL: o.KeyTTL, SearchLag: o.FakeLag, Seed: o.Seed,
		FaultRates: o.FaultRates, FaultGETs: o.FaultGETs,
		HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.RetryAfter,
	})
	t.Cleanup(fake.Close)
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(),
		KeyTTL: o.KeyTTL, SearchLag: o.LookupLag, Now: o.Clock.Now})
	require.NoError(t, err)
	return &Env{
		Provider: psp,
		Fake:     fake,
		Charge:   mocks.Match{Method: "POST", Path: "/v1/payment_intents"},
		Capture:  mocks.Match{Method: "POST", Path: "/v1/payment_intents/{id}/capture"},
		Cancel:   mocks.Match{Method: "POST", Path: "/v1/payment_intents/{id}/cancel"},
		Refund:   mocks.Match{Method: "POST", Path: "/v1/refunds"},

		Currency:         "USD",
		GoodMethod:       "pm_card_visa",
		DeclinedMethod:   "pm_card_chargeDeclinedInsufficientFunds",
		DeclineErrorCode: "card_declined",
		DeclineCode:      "insufficient_funds",
		DeclineMessage:   "Your card has insufficient funds.",

		// Stripe stores every executed answer, 500s included, and
		// replays it for the key.
		StoredErrors:       StoredErrorsReplayed,
		KeyInUseStatus:     http.StatusConflict,
		ReportsKeyMismatch: true,
		TwoStage:           true,
		// The fake's search lags behind creation by SearchLag.
		FakeLag: true,
	}
}
