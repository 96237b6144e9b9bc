package mocks_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/mocks"
)

// TestOptionsValidate checks every fake's options: the zero value works,
// and each unusable option is named in the error.
func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string // a part of the error, "" for none
	}{
		{"stripe zero", mocks.StripeOptions{}.Validate(), ""},
		{"stripe KeyTTL", mocks.StripeOptions{Options: mocks.Options{KeyTTL: -time.Second}}.Validate(), "KeyTTL"},
		{"stripe rates sum", mocks.StripeOptions{
			Options: mocks.Options{
				FaultRates: map[mocks.FaultKind]float64{
					mocks.FaultSlow: 0.6, mocks.FaultStored500: 0.6},
			},
		}.Validate(), "at most 1"},
		{"stripe rate kind", mocks.StripeOptions{
			Options: mocks.Options{
				FaultRates: map[mocks.FaultKind]float64{
					mocks.FaultNone: 0.1},
			},
		}.Validate(), "unknown fault kind"},
		{"stripe live key", mocks.StripeOptions{APIKeys: []string{"sk_live_123"}}.Validate(), "test-mode"},
		{"yookassa zero", mocks.YooKassaOptions{}.Validate(), ""},
		{"yookassa KeyTTL", mocks.YooKassaOptions{Options: mocks.Options{KeyTTL: -1}}.Validate(), "KeyTTL"},
		{"yookassa live key", mocks.YooKassaOptions{SecretKey: "live_x"}.Validate(), "test_"},
		{"yookassa ShopID", mocks.YooKassaOptions{ShopID: "1:2"}.Validate(), "ShopID"},
		{"yookassa rate", mocks.YooKassaOptions{Options: mocks.Options{FaultRates: map[mocks.FaultKind]float64{mocks.FaultProcessed500: 2}}}.Validate(), "probability"},
		{"checkout zero", mocks.CheckoutOptions{}.Validate(), ""},
		{"checkout SlowFor", mocks.CheckoutOptions{Options: mocks.Options{SlowFor: -1}}.Validate(), "SlowFor"},
	} {
		if tc.want == "" {
			require.NoError(t, tc.err, tc.name)
		} else {
			require.ErrorContains(t, tc.err, tc.want, tc.name)
		}
	}
	require.Panics(t, func() { mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{SlowFor: -1}}) })
	require.Panics(t, func() { mocks.NewCheckout(mocks.CheckoutOptions{SecretKey: "sk_live_x"}) })
}

func TestLoggerNeverSeesTheKey(t *testing.T) {
	t.Parallel()
	var buf testkit.SyncBuffer
	b := setup(t, mocks.StripeOptions{Options: mocks.Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}})
	b.f.Script(createPI, mocks.FaultGatewayAfter502)
	b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "k")
	b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "k")
	wrong := newClient(t, b.f, b.f.Client())
	wrong.key = "sk_test_not_the_right_key_1234"
	wrong.get("/v1/payment_intents")
	out := buf.String()
	require.Contains(t, out, "fault=gateway_after_502")
	require.Contains(t, out, "replayed=true")
	require.Contains(t, out, "status=401")
	require.NotContains(t, out, b.f.APIKey())
	require.NotContains(t, out, "not_the_right_key")
}

func TestYooKassaLogsNoSecrets(t *testing.T) {
	t.Parallel()
	var buf testkit.SyncBuffer
	b := ykSetup(t, mocks.YooKassaOptions{Options: mocks.Options{Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}})
	b.c.post("/v3/payments", ykPayment("1.00", "RUB", mocks.YooKassaMethodSucceeds, true), "k")
	require.Contains(t, buf.String(), `"provider":"yookassa"`)
	require.NotContains(t, buf.String(), b.f.SecretKey())
}

// The same Seed and the same request order give the same ids and keys.
func TestSeededIDsRepeat(t *testing.T) {
	t.Parallel()
	ids := func() []string {
		b := setup(t, mocks.StripeOptions{Options: mocks.Options{Seed: 5}})
		var out []string
		for range 3 {
			r := b.c.post("/v1/payment_intents", charge("100", "pm_card_visa"), "")
			out = append(out, r.pi(t).ID, r.header.Get("Request-Id"))
		}
		return append(out, b.f.APIKey())
	}
	require.Equal(t, ids(), ids())
}
