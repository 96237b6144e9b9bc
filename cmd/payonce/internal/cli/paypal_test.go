package cli_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/cmd/payonce/internal/cli"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
)

// The PayPal adapter is built from PAYPAL_CLIENT_ID and
// PAYPAL_CLIENT_SECRET only, names what is missing, and never takes a
// longer window than PayPal keeps.
func TestPayPalCommands(t *testing.T) {
	t.Parallel()
	tg := sqliteTarget(t)
	require.Equal(t, 0, runBinary(t, tg.env(), "migrate").code)
	charge := []string{"charge", "--provider", "paypal", "--order", "o1", "--amount", "100", "--currency", "USD",
		"--payment-method", mocks.PayPalVaultApproved, "--base-url", "http://127.0.0.1:9"}
	creds := []string{"PAYPAL_CLIENT_ID", "AYfakeclient", "PAYPAL_CLIENT_SECRET", "EFfakesecret"}
	requireUsageErrors(t, []usageCase{
		{"no credentials", nil, charge, []string{"provider paypal needs PAYPAL_CLIENT_ID and PAYPAL_CLIENT_SECRET set", "never taken from flags"}},
		{"no secret", map[string]string{"PAYPAL_CLIENT_ID": "AYfakeclient"}, charge, []string{"needs PAYPAL_CLIENT_SECRET set"}},
		{"key ttl past 45 days", with(nil, creds...), append(charge, "--key-ttl", "1100h"), []string{"--key-ttl 1100h", "1080h"}},
		{"bad verification", with(nil, append(creds, "PAYPAL_WEBHOOK_VERIFICATION", "maybe")...), charge,
			[]string{"PAYPAL_WEBHOOK_VERIFICATION", `"offline"`, `"api"`}},
	}, func(t *testing.T, tc usageCase) result {
		r := runBinary(t, with(tg.env(), flatten(tc.env)...), tc.args...)
		require.Empty(t, r.stdout)
		requireNoCredential(t, []string{"EFfakesecret"}, r)
		return r
	})

	h := runBinary(t, nil, "help")
	require.Equal(t, 0, h.code, "%s", h)
	require.Contains(t, h.stdout, "PAYPAL_CLIENT_ID, PAYPAL_CLIENT_SECRET for paypal")
}

// --key-ttl shortens each of PayPal's windows (Orders: charges; Payments:
// the rest) to at most its value; without it the adapter keeps PayPal's.
func TestPayPalAdapterWindows(t *testing.T) {
	t.Parallel()
	env := map[string]string{paypal.EnvClientID: "AYfakeclient", paypal.EnvClientSecret: "EFfakesecret"}
	for _, tc := range []struct {
		keyTTL, orders, payments time.Duration
	}{
		{0, paypal.DefaultOrdersKeyTTL, paypal.DefaultPaymentsKeyTTL},
		{90 * time.Second, 90 * time.Second, 90 * time.Second},
		{240 * time.Hour, paypal.DefaultOrdersKeyTTL, 240 * time.Hour},
	} {
		p, err := cli.PayPalAdapter().New(cli.AdapterConfig{Env: env, BaseURL: "http://127.0.0.1:9", KeyTTL: tc.keyTTL})
		require.NoError(t, err)
		require.Equal(t, "paypal", p.Name())
		info := p.Info()
		require.Equal(t, tc.orders, info.KeyTTLFor(payonce.KindCharge), "--key-ttl %s", tc.keyTTL)
		for _, k := range []payonce.Kind{payonce.KindCapture, payonce.KindCancel, payonce.KindRefund} {
			require.Equal(t, tc.payments, info.KeyTTLFor(k), "--key-ttl %s: %s", tc.keyTTL, k)
		}
	}
}

// "payonce fake --provider paypal" prints the variables to export; a
// charge through the registry's PayPal adapter built from them is the one
// payment of the fake, under the operation's id (custom_id).
func TestPayPalFake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ready, stop := startFakeInProcess(t, "--provider", "paypal", "--seed", "7")
	require.Equal(t, "paypal", ready.Provider)
	require.Contains(t, ready.Note, "fake test credentials")
	for _, v := range []string{"PAYPAL_CLIENT_ID", "PAYPAL_CLIENT_SECRET", "PAYPAL_WEBHOOK_ID"} {
		require.NotEmpty(t, ready.Env[v], v)
	}
	require.Equal(t, "api", ready.Env["PAYPAL_WEBHOOK_VERIFICATION"], "the fake's root is no system root: ask the fake")

	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"), ledgersqlite.Config{})
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.Migrate(ctx))
	p, err := cli.PayPalAdapter().New(cli.AdapterConfig{Env: ready.Env, BaseURL: ready.URL})
	require.NoError(t, err)
	client, err := payonce.New(payonce.Config{Provider: p, Store: store, AttemptTimeout: 5 * time.Second})
	require.NoError(t, err)
	res, err := client.Charge(ctx, payonce.ChargeParams{OrderID: "fake-1", Amount: 1234, Currency: "USD", PaymentMethod: mocks.PayPalVaultApproved})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)

	truth := getTruth(t, ready.TruthURL)
	require.Len(t, truth.Payments, 1)
	pay := truth.Payments[0]
	require.Equal(t, res.OperationID, pay.Reference)
	require.Equal(t, res.ProviderRef, pay.ID)
	require.Equal(t, int64(1234), pay.AmountCaptured)
	require.Equal(t, map[string]int{res.OperationID: 1}, truth.ChargesByReference())

	code, stderr := stop()
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
}

// The demo against the fake PayPal, webhooks included: nothing moved twice,
// everything settled, the ledger agreeing with the fake; the audit at the
// end is not run, saying why (PayPal's search lag).
func TestPayPalDemo(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "demo", "--json", "--provider", "paypal", "--orders", "40", "--refunds", "10")
	checkDemo(t, r, 40, 10)
	rep := r.jsonObject(t)
	require.Equal(t, "paypal", rep["settings"].(map[string]any)["provider"], "%s", r)
	require.Equal(t, "USD", rep["money"].(map[string]any)["currency"], "%s", r)
	require.Contains(t, rep["faults"], "processed_500", "%s", r)
	// PayPal's transaction search lags up to 3 hours: the adapter refuses
	// to audit the run's period, and the demo says so instead.
	audit := rep["audit"].(map[string]any)
	require.Equal(t, false, audit["ran"], "%s", r)
	require.Contains(t, audit["skipped"], "transaction search", "%s", r)

	// The human summary: the fake's name, and the audit's line.
	h := runBinary(t, nil, "demo", "--provider", "paypal", "--orders", "10", "--refunds", "3", "--concurrency", "4", "--seed", "7")
	require.Equal(t, 0, h.code, "%s", h)
	for _, w := range []string{"fake PayPal", "money (USD)", "references charged twice: 0", "references refunded twice: 0",
		"audit of the fake: not run (PayPal's transaction search shows a transaction up to 3h0m0s late"} {
		require.Contains(t, h.stdout, w, "%s", h)
	}
}
