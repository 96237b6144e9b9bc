package cli_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/cli"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/checkout"
	"github.com/payonce/payonce/providers/yookassa"
)

// The demo against the fake YooKassa and the fake Checkout.com: no double
// charge or refund, everything settled or in review, the ledger agreeing
// with the fake.
func TestDemoOtherProviders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ provider, currency string }{{"yookassa", "RUB"}, {"checkout", "EUR"}} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			r := runBinary(t, nil, "demo", "--json", "--provider", tc.provider, "--orders", "40", "--refunds", "10")
			checkDemo(t, r, 40, 10)
			rep := r.jsonObject(t)
			require.Equal(t, tc.provider, rep["settings"].(map[string]any)["provider"], "%s", r)
			require.Equal(t, tc.currency, rep["money"].(map[string]any)["currency"], "%s", r)
			require.Contains(t, rep["faults"], "processed_500", "the fake's own 500 after the money moved is in the mix")
			require.Less(t, rep["elapsed_seconds"].(float64), 30.0, "%s", r)
		})
	}
}

// The human summary names the fake and its currency.
func TestDemoHumanOtherProviders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ provider, title, lag, currency string }{
		{"yookassa", "fake YooKassa", "list lag 2s (adapter)", "money (RUB)"},
		{"checkout", "fake Checkout.com", "settle lag 2s (adapter)", "money (EUR)"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			// The provider from the environment, as for the other commands.
			r := runBinary(t, map[string]string{"PAYONCE_PROVIDER": tc.provider}, "demo", "--orders", "10", "--refunds", "3", "--concurrency", "4", "--seed", "7")
			require.Equal(t, 0, r.code, "%s", r)
			for _, w := range []string{tc.title, tc.lag, tc.currency, "processed_500", "references charged twice: 0", "references refunded twice: 0"} {
				require.Contains(t, r.stdout, w, "%s", r)
			}
		})
	}
}

// charge and refund through --provider yookassa against a fake YooKassa,
// with the credentials from the environment.
func TestYooKassaCommands(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake := mocks.NewYooKassa(mocks.YooKassaOptions{})
		env := with(tg.env(), "PAYONCE_PROVIDER", "yookassa", "YOOKASSA_SHOP_ID", fake.ShopID(), "YOOKASSA_SECRET_KEY", fake.SecretKey())
		base := migrated(t, fake, env)

		r := runBinary(t, env, "charge", "--provider", "yookassa", base, "--order", "yk-1", "--amount", "120000", "--currency", "RUB",
			"--payment-method", mocks.YooKassaMethodSucceeds, "--json")
		res := wantJSON(t, r, 0)
		require.Equal(t, "succeeded", res["status"], "%s", r)
		require.Equal(t, "yookassa", res["provider"])
		require.Equal(t, providerOpID(t, "yookassa", payonce.KindCharge, "yk-1"), res["operation_id"])
		require.NotEmpty(t, res["provider_ref"])
		p, ok := fake.Truth().Payment(res["provider_ref"].(string))
		require.True(t, ok, "%s", r)
		require.EqualValues(t, 120000, p.AmountCaptured)
		require.Equal(t, "RUB", p.Currency)

		again := runBinary(t, env, "charge", base, "--order", "yk-1", "--amount", "120000", "--currency", "RUB",
			"--payment-method", mocks.YooKassaMethodSucceeds, "--json")
		require.Equal(t, 0, again.code, "%s", again)
		require.Equal(t, true, again.jsonObject(t)["replayed"])

		d := runBinary(t, env, "charge", base, "--order", "yk-2", "--amount", "5000", "--currency", "RUB",
			"--payment-method", mocks.YooKassaMethodInsufficientFunds, "--json")
		require.Equal(t, 3, d.code, "%s", d)
		require.Equal(t, "failed", d.jsonObject(t)["status"])

		// YooKassa refunds need an amount.
		noAmt := runBinary(t, env, "refund", base, "--order", "yk-1", "--json")
		require.Equal(t, 2, noAmt.code, "%s", noAmt)
		require.Contains(t, noAmt.stderr, "YooKassa refunds need the amount", "%s", noAmt)
		require.Empty(t, fake.Truth().Refunds)
		rf := runBinary(t, env, "refund", base, "--order", "yk-1", "--amount", "20000", "--currency", "RUB", "--json")
		require.Equal(t, 0, rf.code, "%s", rf)
		require.Equal(t, "succeeded", rf.jsonObject(t)["status"], "%s", rf)
		tr := fake.Truth()
		require.Len(t, tr.Refunds, 1)
		require.EqualValues(t, 20000, tr.Refunds[0].Amount)
		require.Empty(t, tr.Duplicates(yookassa.MetaOperation))
		requireNoCredential(t, []string{fake.ShopID(), fake.SecretKey()}, r, again, d, noAmt, rf)
	})
}

// charge, refund and reconcile through --provider checkout against a fake
// Checkout.com.
func TestCheckoutCommands(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake := mocks.NewCheckout(mocks.CheckoutOptions{})
		env := with(tg.env(), "CHECKOUT_SECRET_KEY", fake.SecretKey())
		base := migrated(t, fake, env)

		r := runBinary(t, env, "charge", "--provider", "checkout", base, "--order", "ck-1", "--amount", "1999", "--currency", "EUR",
			"--payment-method", mocks.CheckoutSourceApproved, "--json")
		res := wantJSON(t, r, 0)
		require.Equal(t, "succeeded", res["status"], "%s", r)
		require.Equal(t, "checkout", res["provider"])
		require.True(t, strings.HasPrefix(res["provider_ref"].(string), "pay_"), "%s", r)
		id := providerOpID(t, "checkout", payonce.KindCharge, "ck-1")
		require.Equal(t, id, res["operation_id"])
		require.Equal(t, map[string]int{id: 1}, fake.Truth().ChargesByReference())

		d := runBinary(t, env, "charge", "--provider", "checkout", base, "--order", "ck-2", "--amount", "500", "--currency", "EUR",
			"--payment-method", mocks.CheckoutSourceDoNotHonour, "--json")
		require.Equal(t, 3, d.code, "%s", d)
		require.Equal(t, "failed", d.jsonObject(t)["status"])

		// Checkout.com accepts a refund with 202: the outcome is unknown until
		// a lookup finds the action; the same command again looks it up.
		refund := []string{"refund", "--provider", "checkout", base, "--order", "ck-1", "--json"}
		rf := runBinary(t, env, refund...)
		require.Equal(t, 4, rf.code, "%s", rf)
		rfRes := rf.jsonObject(t)
		require.Equal(t, "unknown", rfRes["status"], "%s", rf)
		rf2 := runBinary(t, env, refund...)
		require.Equal(t, 0, rf2.code, "%s", rf2)
		require.Equal(t, "succeeded", rf2.jsonObject(t)["status"], "%s", rf2)
		require.Equal(t, rfRes["provider_ref"], rf2.jsonObject(t)["provider_ref"])
		list := runBinary(t, env, "ops", "list", "--provider", "checkout", "--kind", "refund", "--status", "succeeded", "--json")
		require.Equal(t, 0, list.code, "%s", list)
		require.Len(t, list.jsonLines(t), 1, "%s", list)
		tr := fake.Truth()
		require.Len(t, tr.Refunds, 1)
		require.Equal(t, "succeeded", tr.Refunds[0].Status)
		for ref, n := range tr.ChargesByReference() {
			require.Equal(t, 1, n, "charged twice: %s", ref)
		}
		requireNoCredential(t, []string{fake.SecretKey()}, r, d, rf, rf2)
	})
}

// Each provider names its own missing credential variables; an unknown
// provider lists all three.
func TestProviderCredentials(t *testing.T) {
	t.Parallel()
	tg := sqliteTarget(t)
	require.Equal(t, 0, runBinary(t, tg.env(), "migrate").code)
	charge := []string{"charge", "--order", "o1", "--amount", "100", "--currency", "EUR"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"stripe", nil, charge, []string{"provider stripe needs STRIPE_API_KEY set"}},
		{"yookassa", nil, append(charge, "--provider", "yookassa"), []string{"provider yookassa needs YOOKASSA_SHOP_ID and YOOKASSA_SECRET_KEY set"}},
		{"yookassa without key", map[string]string{"YOOKASSA_SHOP_ID": "123456"}, append(charge, "--provider", "yookassa"), []string{"needs YOOKASSA_SECRET_KEY set"}},
		{"yookassa without shop", map[string]string{"YOOKASSA_SECRET_KEY": "test_abcdefghijklmnopqrstuvwxyz"}, append(charge, "--provider", "yookassa"), []string{"needs YOOKASSA_SHOP_ID set"}},
		{"checkout", nil, append(charge, "--provider", "checkout"), []string{"provider checkout needs CHECKOUT_SECRET_KEY set"}},
		{"checkout from env", map[string]string{"PAYONCE_PROVIDER": "checkout", "STRIPE_API_KEY": "sk_test_x"}, charge, []string{"CHECKOUT_SECRET_KEY"}},
		{"unknown provider", nil, append(charge, "--provider", "paypal"), []string{`unknown provider "paypal"`, "known providers are checkout, stripe, yookassa"}},
		{"unknown demo provider", nil, []string{"demo", "--provider", "paypal"}, []string{`unknown provider "paypal"`, "stripe, yookassa, checkout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runBinary(t, with(tg.env(), flatten(tc.env)...), tc.args...)
			require.Equal(t, 2, r.code, "%s", r)
			for _, w := range tc.want {
				require.Contains(t, r.stderr, w, "%s", r)
			}
			require.Empty(t, r.stdout)
		})
	}

	// The help lists every provider's variables.
	h := runBinary(t, nil, "help")
	require.Equal(t, 0, h.code, "%s", h)
	for _, w := range []string{"STRIPE_API_KEY for stripe", "YOOKASSA_SHOP_ID, YOOKASSA_SECRET_KEY for yookassa", "CHECKOUT_SECRET_KEY for checkout"} {
		require.Contains(t, h.stdout, w)
	}
	c := runBinary(t, nil, "charge", "-h")
	require.Equal(t, 0, c.code, "%s", c)
	for _, w := range []string{"stripe, yookassa or checkout", "yookassa's list lag", "checkout's settle lag"} {
		require.Contains(t, c.stdout, w)
	}
	dh := runBinary(t, nil, "demo", "-h")
	require.Equal(t, 0, dh.code, "%s", dh)
	require.Contains(t, dh.stdout, "stripe, yookassa, checkout")
}

// --base-url, --key-ttl and --search-lag reach each adapter's own config:
// Stripe's SearchLag, YooKassa's ListLag, Checkout.com's SettleLag.
func TestAdapterConfigMapping(t *testing.T) {
	t.Parallel()
	cfg := cli.AdapterConfig{BaseURL: "http://127.0.0.1:9", KeyTTL: 90 * time.Second, SearchLag: 7 * time.Second}

	cfg.Env = map[string]string{"YOOKASSA_SHOP_ID": "123456", "YOOKASSA_SECRET_KEY": "test_abcdefghijklmnopqrstuvwxyz"}
	yk, err := cli.YooKassaAdapter().New(cfg)
	require.NoError(t, err)
	require.Equal(t, "yookassa", yk.Name())
	require.Equal(t, 90*time.Second, yk.Info().KeyTTL)
	require.Equal(t, 7*time.Second, yk.(*yookassa.Provider).ListLag())
	require.Contains(t, fmt.Sprint(yk), "BaseURL:http://127.0.0.1:9")

	cfg.Env = map[string]string{"CHECKOUT_SECRET_KEY": "sk_sbox_abcdefghijklmnop"}
	ck, err := cli.CheckoutAdapter().New(cfg)
	require.NoError(t, err)
	require.Equal(t, "checkout", ck.Name())
	require.Equal(t, 90*time.Second, ck.Info().KeyTTL)
	require.Equal(t, 7*time.Second, ck.(*checkout.Provider).SettleLag())
	require.Contains(t, fmt.Sprint(ck), "BaseURL:http://127.0.0.1:9")

	// Zero flags keep the adapters' defaults.
	ck, err = cli.CheckoutAdapter().New(cli.AdapterConfig{Env: cfg.Env})
	require.NoError(t, err)
	require.Equal(t, checkout.DefaultSettleLag, ck.(*checkout.Provider).SettleLag())
	require.Equal(t, checkout.DefaultKeyTTL, ck.Info().KeyTTL)
	yk, err = cli.YooKassaAdapter().New(cli.AdapterConfig{Env: map[string]string{"YOOKASSA_SHOP_ID": "1", "YOOKASSA_SECRET_KEY": "k"}})
	require.NoError(t, err)
	require.Equal(t, yookassa.DefaultListLag, yk.(*yookassa.Provider).ListLag())

	require.Equal(t, []string{"checkout", "stripe", "yookassa"}, cli.DefaultRegistry().Names())
}

func flatten(m map[string]string) []string {
	var kv []string
	for k, v := range m {
		kv = append(kv, k, v)
	}
	return kv
}

func providerOpID(t *testing.T, provider string, kind payonce.Kind, refs ...string) string {
	t.Helper()
	id, err := payonce.Identity{Provider: provider, Kind: kind, References: refs}.OperationID()
	require.NoError(t, err)
	return id
}

// requireNoCredential checks that no output shows a credential.
func requireNoCredential(t *testing.T, secrets []string, rs ...result) {
	t.Helper()
	for _, r := range rs {
		for _, s := range secrets {
			require.NotContains(t, r.stdout+r.stderr, s, "a credential was printed")
		}
	}
}
