package cli_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

// A key TTL that leaves no time to resend once one attempt and the
// clock-skew allowance are taken off, a --key-ttl longer than the provider
// keeps keys, and a clock-skew allowance that is not positive are refused
// before anything is sent: exit 2, saying what to change.
func TestKeyWindowFlags(t *testing.T) {
	t.Parallel()
	ledger := "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")
	r := runMain(t, nil, "migrate", "--ledger", ledger)
	require.Equal(t, 0, r.code, "%s", r)
	env := map[string]string{
		"PAYONCE_LEDGER": ledger, "STRIPE_API_KEY": testKey,
		"YOOKASSA_SHOP_ID": "123456", "YOOKASSA_SECRET_KEY": "test_DoNotPrintMeEither0123456789",
		"CHECKOUT_SECRET_KEY": "sk_sbox_DoNotPrintMeEither012345",
	}
	// Nothing may be sent: the base URL points at a closed port.
	charge := []string{"charge", "--order", "o1", "--amount", "100", "--currency", "USD", "--base-url", "http://127.0.0.1:1"}
	with := func(base []string, extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"timeout plus skew longer than the TTL", with(charge, "--key-ttl", "5m30s", "--timeout", "5m"), []string{
			"--timeout 5m plus the 1m clock-skew allowance leaves no time to resend inside --key-ttl 5m30s",
			"resends stop 6m before the key expires", "use a longer --key-ttl, a shorter --timeout or a smaller --clock-skew"}},
		{"margin exactly the TTL", with(charge, "--key-ttl", "6m", "--timeout", "5m"), []string{"leaves no time to resend inside --key-ttl 6m"}},
		{"short TTL with the default skew", with(charge, "--key-ttl", "2s", "--timeout", "1s"), []string{
			"--timeout 1s plus the 1m clock-skew allowance leaves no time to resend inside --key-ttl 2s", "--clock-skew"}},
		{"short TTL with the default timeout", with(charge, "--key-ttl", "30s", "--clock-skew", "1s"), []string{
			"the default --timeout 30s plus the 1s clock-skew allowance leaves no time to resend inside --key-ttl 30s"}},
		{"skew larger than the TTL", with(charge, "--key-ttl", "10m", "--timeout", "1s", "--clock-skew", "10m"), []string{
			"--timeout 1s plus the 10m clock-skew allowance leaves no time to resend inside --key-ttl 10m"}},
		{"timeout too long for the provider's own TTL", with(charge, "--timeout", "23h50m"), []string{
			"--timeout 23h50m plus the 14m24s clock-skew allowance (1% of the key TTL, more than --clock-skew 1m)",
			"inside the 24h key TTL of stripe"}},
		{"key TTL beyond stripe's", with(charge, "--key-ttl", "48h"), []string{
			"--key-ttl 48h is longer than the key TTL stripe documents (24h)", "stripe forgets an idempotency key after 24h",
			"use --key-ttl 24h or less"}},
		{"key TTL just beyond stripe's", with(charge, "--key-ttl", "24h1s"), []string{"--key-ttl 24h0m1s is longer than the key TTL stripe documents (24h)"}},
		{"key TTL beyond yookassa's", with(charge, "--provider", "yookassa", "--key-ttl", "30d"), []string{
			"--key-ttl 720h is longer than the key TTL yookassa documents (24h)"}},
		{"key TTL beyond checkout's", with(charge, "--provider", "checkout", "--key-ttl", "25h"), []string{
			"--key-ttl 25h is longer than the key TTL checkout documents (24h)"}},
		{"zero skew", with(charge, "--clock-skew", "0"), []string{"--clock-skew must be greater than 0"}},
		{"negative skew", with(charge, "--clock-skew", "-1s"), []string{"-clock-skew", "negative"}},
		{"skew not a duration", with(charge, "--clock-skew", "a bit"), []string{"-clock-skew", "not a duration"}},
		{"refund", []string{"refund", "--order", "o1", "--amount", "1", "--currency", "USD", "--key-ttl", "90s", "--timeout", "45s"}, []string{
			"--timeout 45s plus the 1m clock-skew allowance leaves no time to resend inside --key-ttl 1m30s"}},
		{"reconcile", []string{"reconcile", "--once", "--key-ttl", "36h"}, []string{"--key-ttl 36h is longer than the key TTL stripe documents"}},
		{"cleanup", []string{"cleanup", "--retention", "30d", "--key-ttl", "1m", "--timeout", "1m"}, []string{"leaves no time to resend inside --key-ttl 1m"}},
		{"demo skew too large", []string{"demo", "--key-ttl", "6s", "--clock-skew", "5s"}, []string{
			"the demo's attempt timeout 1s plus the 5s clock-skew allowance leaves no time to resend inside --key-ttl 6s",
			"use a longer --key-ttl or a smaller --clock-skew"}},
		{"demo zero skew", []string{"demo", "--clock-skew", "0"}, []string{"--clock-skew must be greater than 0"}},
		{"demo TTL too short", []string{"demo", "--key-ttl", "3s"}, []string{"--key-ttl must be at least 4s, got 3s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runMain(t, env, tc.args...)
			require.Equal(t, 2, r.code, "%s", r)
			for _, w := range tc.want {
				require.Contains(t, r.stderr, w, "%s", r)
			}
			require.Empty(t, r.stdout)
			for _, secret := range []string{testKey, env["YOOKASSA_SECRET_KEY"], env["CHECKOUT_SECRET_KEY"]} {
				require.NotContains(t, r.stderr, secret)
			}
		})
	}
}

// What fits is accepted: --key-ttl 10m with --timeout 5m keeps a 6m margin
// (an attempt plus the skew allowance) and still charges; the provider's own
// TTL as --key-ttl is not "longer" than it; a small --clock-skew lets a short
// test TTL through.
func TestKeyWindowFlagsThatFit(t *testing.T) {
	t.Parallel()
	tg := sqliteTarget(t)
	fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
	for i, extra := range [][]string{
		{"--key-ttl", "10m", "--timeout", "5m"},
		{"--key-ttl", "24h"},
		{"--key-ttl", "3s", "--timeout", "1s", "--clock-skew", "200ms"},
		{"--clock-skew", "5m"},
	} {
		args := append([]string{"charge", "--base-url", fake.URL(), "--order", "fit-" + string(rune('a'+i)), "--amount", "100", "--currency", "USD",
			"--payment-method", "pm_card_visa", "--json"}, extra...)
		r := runBinary(t, env, args...)
		require.Equal(t, 0, r.code, "%v\n%s", extra, r)
		require.Equal(t, "succeeded", r.jsonObject(t)["status"])
	}
}
