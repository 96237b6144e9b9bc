package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/cmd/payonce/internal/cli"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/checkout"
	"github.com/payonce/payonce/providers/stripe"
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
			// YooKassa lists its objects, Checkout.com is audited by
			// looking each operation up: both ran.
			audit := rep["audit"].(map[string]any)
			require.Equal(t, true, audit["ran"], "%s", r)
			require.Equal(t, tc.provider == "checkout", audit["by_lookup"], "%s", r)
		})
	}
}

// The human summary names the fake and its currency.
func TestDemoHumanOtherProviders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ provider, title, lag, currency, audit string }{
		{"yookassa", "fake YooKassa", "list lag 2s (adapter)", "money (RUB)", "audit of the fake YooKassa: "},
		{"checkout", "fake Checkout.com", "settle lag 2s (adapter)", "money (EUR)", "audit of the fake Checkout.com: 13 operations looked up, 0 differences"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			// The provider from the environment, as for the other commands.
			r := runBinary(t, map[string]string{"PAYONCE_PROVIDER": tc.provider}, "demo", "--orders", "10", "--refunds", "3", "--concurrency", "4", "--seed", "7")
			require.Equal(t, 0, r.code, "%s", r)
			for _, w := range []string{tc.title, tc.lag, tc.currency, "processed_500", "references charged twice: 0", "references refunded twice: 0", tc.audit} {
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

		r, res := runCharge(t, env, 0, "succeeded", "--provider", "yookassa", base, "--order", "yk-1", "--amount", "120000", "--currency", "RUB",
			"--payment-method", mocks.YooKassaMethodSucceeds)
		require.Equal(t, "yookassa", res["provider"])
		require.Equal(t, providerOpID(t, "yookassa", payonce.KindCharge, "yk-1"), res["operation_id"])
		require.NotEmpty(t, res["provider_ref"])
		p, ok := fake.Truth().Payment(res["provider_ref"].(string))
		require.True(t, ok, "%s", r)
		require.EqualValues(t, 120000, p.AmountCaptured)
		require.Equal(t, "RUB", p.Currency)

		again, rep := runCharge(t, env, 0, "succeeded", base, "--order", "yk-1", "--amount", "120000", "--currency", "RUB",
			"--payment-method", mocks.YooKassaMethodSucceeds)
		require.Equal(t, true, rep["replayed"])

		d, _ := runCharge(t, env, 3, "failed", base, "--order", "yk-2", "--amount", "5000", "--currency", "RUB",
			"--payment-method", mocks.YooKassaMethodInsufficientFunds)

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

		r, res := runCharge(t, env, 0, "succeeded", "--provider", "checkout", base, "--order", "ck-1", "--amount", "1999", "--currency", "EUR",
			"--payment-method", mocks.CheckoutSourceApproved)
		require.Equal(t, "checkout", res["provider"])
		require.True(t, strings.HasPrefix(res["provider_ref"].(string), "pay_"), "%s", r)
		id := providerOpID(t, "checkout", payonce.KindCharge, "ck-1")
		require.Equal(t, id, res["operation_id"])
		require.Equal(t, map[string]int{id: 1}, fake.Truth().ChargesByReference())

		d, _ := runCharge(t, env, 3, "failed", "--provider", "checkout", base, "--order", "ck-2", "--amount", "500", "--currency", "EUR",
			"--payment-method", mocks.CheckoutSourceDoNotHonour)

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
	requireUsageErrors(t, []usageCase{
		{"stripe", nil, charge, []string{"provider stripe needs STRIPE_API_KEY set"}},
		{"yookassa", nil, append(charge, "--provider", "yookassa"), []string{"provider yookassa needs YOOKASSA_SHOP_ID and YOOKASSA_SECRET_KEY set"}},
		{"yookassa without key", map[string]string{"YOOKASSA_SHOP_ID": "123456"}, append(charge, "--provider", "yookassa"), []string{"needs YOOKASSA_SECRET_KEY set"}},
		{"yookassa without shop", map[string]string{"YOOKASSA_SECRET_KEY": "test_abcdefghijklmnopqrstuvwxyz"}, append(charge, "--provider", "yookassa"), []string{"needs YOOKASSA_SHOP_ID set"}},
		{"checkout", nil, append(charge, "--provider", "checkout"), []string{"provider checkout needs CHECKOUT_SECRET_KEY set"}},
		{"checkout from env", map[string]string{"PAYONCE_PROVIDER": "checkout", "STRIPE_API_KEY": "sk_test_x"}, charge, []string{"CHECKOUT_SECRET_KEY"}},
		{"unknown provider", nil, append(charge, "--provider", "worldpay"), []string{`unknown provider "worldpay"`, "known providers are adyen, checkout, paypal, stripe, yookassa"}},
		{"unknown demo provider", nil, []string{"demo", "--provider", "worldpay"}, []string{`unknown provider "worldpay"`, "stripe, yookassa, checkout"}},
	}, func(t *testing.T, tc usageCase) result {
		r := runBinary(t, with(tg.env(), flatten(tc.env)...), tc.args...)
		require.Empty(t, r.stdout)
		return r
	})

	// The help lists every provider's variables.
	h := runBinary(t, nil, "help")
	require.Equal(t, 0, h.code, "%s", h)
	for _, w := range []string{"STRIPE_API_KEY for stripe", "YOOKASSA_SHOP_ID, YOOKASSA_SECRET_KEY for yookassa", "CHECKOUT_SECRET_KEY for checkout"} {
		require.Contains(t, h.stdout, w)
	}
	c := runBinary(t, nil, "charge", "-h")
	require.Equal(t, 0, c.code, "%s", c)
	for _, w := range []string{"stripe, yookassa, checkout, adyen or paypal", "yookassa's list lag", "checkout's settle lag"} {
		require.Contains(t, c.stdout, w)
	}
	dh := runBinary(t, nil, "demo", "-h")
	require.Equal(t, 0, dh.code, "%s", dh)
	require.Contains(t, dh.stdout, "stripe, yookassa, checkout")
}

// A second adapter is one registration: its credential variables are
// checked and named, never read from flags.
func TestRegistryAddsAProvider(t *testing.T) {
	t.Parallel()
	fake := mocks.NewStripe(mocks.StripeOptions{})
	t.Cleanup(fake.Close)
	reg, err := cli.NewRegistry(cli.StripeAdapter(), cli.Adapter{
		Name:    "checkout",
		EnvVars: []string{"CHECKOUT_SECRET_KEY", "CHECKOUT_PROCESSING_CHANNEL"},
		New: func(c cli.AdapterConfig) (payonce.Provider, error) {
			p, err := stripe.New(stripe.Config{APIKey: c.Env["CHECKOUT_SECRET_KEY"], BaseURL: c.BaseURL, KeyTTL: c.KeyTTL})
			if err != nil {
				return nil, err
			}
			return renamed{p, "checkout"}, nil
		},
	})
	require.NoError(t, err)
	require.Equal(t, []string{"checkout", "stripe"}, reg.Names())
	require.Error(t, reg.Register(cli.StripeAdapter()), "a name registered twice")
	require.Error(t, reg.Register(cli.Adapter{Name: "x"}), "an adapter without a constructor")

	ledgerDSN := "sqlite:" + filepath.Join(t.TempDir(), "l.db")
	run := func(env map[string]string, args ...string) result {
		var out, errb bytes.Buffer
		app := &cli.App{Env: func(k string) string { return env[k] }, Stdout: &out, Stderr: &errb, Providers: reg}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		code := app.Run(ctx, args)
		return result{stdout: out.String(), stderr: errb.String(), code: code}
	}
	env := map[string]string{"PAYONCE_LEDGER": ledgerDSN}
	require.Equal(t, 0, run(env, "migrate").code)
	args := []string{"charge", "--provider", "checkout", "--base-url", fake.URL(), "--order", "o-1", "--amount", "100", "--currency", "GBP", "--payment-method", "pm_card_visa", "--json"}
	r := run(env, args...)
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "CHECKOUT_SECRET_KEY and CHECKOUT_PROCESSING_CHANNEL")
	r = run(with(env, "CHECKOUT_SECRET_KEY", fake.APIKey()), args...)
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "needs CHECKOUT_PROCESSING_CHANNEL set")
	r = run(with(env, "CHECKOUT_SECRET_KEY", fake.APIKey(), "CHECKOUT_PROCESSING_CHANNEL", "pc_1"), args...)
	require.Equal(t, 0, r.code, "%s", r)
	require.Equal(t, "checkout", r.jsonObject(t)["provider"])
	require.NotContains(t, r.stdout+r.stderr, fake.APIKey())
	list := run(env, "ops", "list", "--provider", "checkout", "--json")
	require.Len(t, list.jsonLines(t), 1)
}

// renamed is an adapter under another name (for the registry test only).
type renamed struct {
	*stripe.Provider
	name string
}

func (r renamed) Name() string { return r.name }

var _ payonce.Provider = renamed{}

// --base-url, --key-ttl and --search-lag reach each adapter's own config:
// Stripe's SearchLag, YooKassa's ListLag, Checkout.com's SettleLag.
func TestAdapterConfigMapping(t *testing.T) {
	t.Parallel()
	cfg := cli.AdapterConfig{BaseURL: "http://127.0.0.1:9", KeyTTL: 90 * time.Second, SearchLag: 7 * time.Second}
	for _, tc := range []struct {
		name    string
		adapter cli.Adapter
		env     map[string]string
		// zeroEnv builds the adapter without flags, which keeps its
		// defaults: defaultLag and defaultTTL.
		zeroEnv                map[string]string
		lag                    func(payonce.Provider) time.Duration
		defaultLag, defaultTTL time.Duration
	}{
		{"yookassa", cli.YooKassaAdapter(), map[string]string{"YOOKASSA_SHOP_ID": "123456", "YOOKASSA_SECRET_KEY": "test_abcdefghijklmnopqrstuvwxyz"},
			map[string]string{"YOOKASSA_SHOP_ID": "1", "YOOKASSA_SECRET_KEY": "k"},
			func(p payonce.Provider) time.Duration { return p.(*yookassa.Provider).ListLag() }, yookassa.DefaultListLag, yookassa.DefaultKeyTTL},
		{"checkout", cli.CheckoutAdapter(), map[string]string{"CHECKOUT_SECRET_KEY": "sk_sbox_abcdefghijklmnop"},
			map[string]string{"CHECKOUT_SECRET_KEY": "sk_sbox_abcdefghijklmnop"},
			func(p payonce.Provider) time.Duration { return p.(*checkout.Provider).SettleLag() }, checkout.DefaultSettleLag, checkout.DefaultKeyTTL},
	} {
		cfg.Env = tc.env
		p, err := tc.adapter.New(cfg)
		require.NoError(t, err)
		require.Equal(t, tc.name, p.Name())
		require.Equal(t, 90*time.Second, p.Info().KeyTTL)
		require.Equal(t, 7*time.Second, tc.lag(p))
		require.Contains(t, fmt.Sprint(p), "BaseURL:http://127.0.0.1:9")

		// Zero flags keep the adapters' defaults.
		p, err = tc.adapter.New(cli.AdapterConfig{Env: tc.zeroEnv})
		require.NoError(t, err)
		require.Equal(t, tc.defaultLag, tc.lag(p))
		require.Equal(t, tc.defaultTTL, p.Info().KeyTTL)
	}

	require.Equal(t, []string{"adyen", "checkout", "paypal", "stripe", "yookassa"}, cli.DefaultRegistry().Names())
}

// runCharge runs "payonce charge ARGS --json", checks its exit code and
// status, and returns the result with its JSON object.
func runCharge(t *testing.T, env map[string]string, code int, status string, args ...string) (result, map[string]any) {
	t.Helper()
	r := runBinary(t, env, append(append([]string{"charge"}, args...), "--json")...)
	res := wantJSON(t, r, code)
	require.Equal(t, status, res["status"], "%s", r)
	return r, res
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
