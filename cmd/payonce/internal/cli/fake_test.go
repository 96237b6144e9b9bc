package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/cmd/payonce/internal/cli"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// fakeReady is the ready line of "payonce fake".
type fakeReady struct {
	Provider string            `json:"provider"`
	URL      string            `json:"url"`
	TruthURL string            `json:"truth_url"`
	Env      map[string]string `json:"env"`
	Note     string            `json:"note"`
}

// startFakeInProcess runs "payonce fake args..." through cli.Main and
// returns its ready line and a stop function that cancels it (as SIGTERM
// does) and returns its exit code and stderr.
func startFakeInProcess(t *testing.T, args ...string) (fakeReady, func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr testkit.SyncBuffer
	done := make(chan int, 1)
	go func() {
		code := cli.Main(ctx, append([]string{"fake"}, args...), func(string) string { return "" }, pw, &stderr)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	require.True(t, sc.Scan(), "no ready line; stderr:\n%s", stderr.String())
	var ready fakeReady
	require.NoError(t, json.Unmarshal(sc.Bytes(), &ready), "ready line %q", sc.Text())
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	stopped := false
	stop := func() (int, string) {
		stopped = true
		cancel()
		select {
		case code := <-done:
			return code, stderr.String()
		case <-time.After(time.Minute):
			t.Fatalf("payonce fake did not stop; stderr:\n%s", stderr.String())
			return 0, ""
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return ready, stop
}

// getTruth reads the fake's GET /__truth.
func getTruth(t *testing.T, url string) mocks.Truth {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var truth mocks.Truth
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&truth))
	return truth
}

// TestFakeServesCharge: a charge through the real Stripe adapter and a
// payonce.Client on SQLite, against "payonce fake", is the one payment the
// fake's /__truth reports, under the operation's id.
func TestFakeServesCharge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ready, stop := startFakeInProcess(t, "--provider", "stripe", "--seed", "7")
	require.Equal(t, "stripe", ready.Provider)
	require.Contains(t, ready.Note, "fake test credentials")
	require.Regexp(t, `^sk_test_`, ready.Env["STRIPE_API_KEY"])
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, ready.URL)

	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"), ledgersqlite.Config{})
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.Migrate(ctx))
	p, err := stripe.New(stripe.Config{APIKey: ready.Env["STRIPE_API_KEY"], BaseURL: ready.URL})
	require.NoError(t, err)
	client, err := payonce.New(payonce.Config{Provider: p, Store: store, AttemptTimeout: 5 * time.Second})
	require.NoError(t, err)
	res, err := client.Charge(ctx, payonce.ChargeParams{OrderID: "fake-1", Amount: 1234, Currency: "USD", PaymentMethod: "pm_card_visa"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)

	truth := getTruth(t, ready.TruthURL)
	require.Len(t, truth.Payments, 1)
	pay := truth.Payments[0]
	require.Equal(t, res.OperationID, pay.Metadata[stripe.MetaOperation])
	require.Equal(t, res.ProviderRef, pay.ID)
	require.Equal(t, int64(1234), pay.Amount)
	require.True(t, pay.Authorized)
	require.Equal(t, map[string]int{res.OperationID: 1}, truth.ChargesBy(stripe.MetaOperation))

	resp, err := http.Post(ready.URL+"/__release", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	code, stderr := stop()
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	require.Contains(t, stderr, "payonce fake: stopped")
}

// TestFakeProviders: every provider's fake prints the credential variables
// its adapter reads, and serves its truth.
func TestFakeProviders(t *testing.T) {
	t.Parallel()
	for provider, vars := range map[string][]string{
		"stripe":   {"STRIPE_API_KEY"},
		"yookassa": {"YOOKASSA_SHOP_ID", "YOOKASSA_SECRET_KEY"},
		"checkout": {"CHECKOUT_SECRET_KEY"},
		"adyen":    {"ADYEN_API_KEY", "ADYEN_MERCHANT_ACCOUNT"},
	} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			ready, _ := startFakeInProcess(t, "--provider", provider, "--fault-rate", "0.5", "--key-ttl", "1m")
			require.Equal(t, provider, ready.Provider)
			require.Len(t, ready.Env, len(vars), "%v", ready.Env)
			for _, v := range vars {
				require.NotEmpty(t, ready.Env[v], v)
			}
			require.Empty(t, getTruth(t, ready.TruthURL).Payments)
		})
	}
}

// TestFakeUsage: the fake refuses what it cannot serve, saying what to fix.
func TestFakeUsage(t *testing.T) {
	t.Parallel()
	requireUsageErrors(t, []usageCase{
		{name: "no provider", args: []string{"fake"}, want: []string{"--provider is required", "stripe, yookassa, checkout, adyen"}},
		{name: "unknown provider", args: []string{"fake", "--provider", "worldpay"}, want: []string{`unknown provider "worldpay"`, "stripe"}},
		{name: "non-loopback addr", args: []string{"fake", "--provider", "stripe", "--addr", "0.0.0.0:0"},
			want: []string{"--addr", "not a loopback address", "127.0.0.1"}},
		{name: "no host", args: []string{"fake", "--provider", "stripe", "--addr", ":0"}, want: []string{"not a loopback address"}},
		{name: "bad addr", args: []string{"fake", "--provider", "stripe", "--addr", "nowhere"}, want: []string{"--addr", "HOST:PORT"}},
		{name: "fault rate above 1", args: []string{"fake", "--provider", "stripe", "--fault-rate", "1.5"}, want: []string{"--fault-rate must be between 0 and 1"}},
		{name: "negative fault rate", args: []string{"fake", "--provider", "stripe", "--fault-rate", "-0.1"}, want: []string{"--fault-rate must be between 0 and 1"}},
		{name: "fault rate not a number", args: []string{"fake", "--provider", "stripe", "--fault-rate", "lots"}, want: []string{"-fault-rate"}},
		{name: "remote webhook url", args: []string{"fake", "--provider", "checkout", "--webhook-url", "http://example.com/hooks", "--webhook-secret", "s"},
			want: []string{"--webhook-", "loopback"}},
		{name: "stripe webhook secret", args: []string{"fake", "--provider", "stripe", "--webhook-url", "http://127.0.0.1:9/hooks", "--webhook-secret", "nope"},
			want: []string{"--webhook-", "whsec_"}},
		{name: "webhook rate", args: []string{"fake", "--provider", "yookassa", "--webhook-url", "http://127.0.0.1:9/hooks", "--webhook-fail-rate", "2"},
			want: []string{"FailRate"}},
	}, func(t *testing.T, c usageCase) result { return runMain(t, c.env, c.args...) })
}

// TestFakeOutlivesKilledService: the fake runs as its own process; a
// service charging through it (the payonce binary) is SIGKILLed once the
// fake has the payment, and the fake lives on with the truth of it, until
// its stdin closes.
func TestFakeOutlivesKilledService(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fake := exec.CommandContext(ctx, binary, "fake", "--provider", "stripe", "--exit-on-stdin-eof")
	fake.Env = scrubbedEnv(nil)
	stdin, err := fake.StdinPipe()
	require.NoError(t, err)
	stdout, err := fake.StdoutPipe()
	require.NoError(t, err)
	var fakeErr testkit.SyncBuffer
	fake.Stderr = &fakeErr
	require.NoError(t, fake.Start())
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan(), "no ready line; stderr:\n%s", fakeErr.String())
	var ready fakeReady
	require.NoError(t, json.Unmarshal(sc.Bytes(), &ready))

	tg := sqliteTarget(t)
	env := with(tg.env(), "STRIPE_API_KEY", ready.Env["STRIPE_API_KEY"])
	require.Equal(t, 0, runBinary(t, env, "migrate").code)
	svc := exec.CommandContext(ctx, binary, "charge", "--order", "killed-1", "--amount", "900", "--currency", "USD",
		"--payment-method", "pm_card_visa", "--base-url", ready.URL)
	svc.Env = scrubbedEnv(env)
	require.NoError(t, svc.Start())
	// Wherever the kill lands (before the ledger recorded the answer or
	// after), the payment is the fake's, not the service's.
	require.Eventually(t, func() bool { return len(getTruth(t, ready.TruthURL).Payments) == 1 }, time.Minute, 20*time.Millisecond)
	require.NoError(t, svc.Process.Signal(syscall.SIGKILL))
	_ = svc.Wait()

	truth := getTruth(t, ready.TruthURL)
	require.Equal(t, map[string]int{opID(t, payonce.KindCharge, "killed-1"): 1}, truth.ChargesBy(stripe.MetaOperation))
	require.Nil(t, fake.ProcessState, "the fake outlived the service")

	require.NoError(t, stdin.Close())
	require.NoError(t, fake.Wait(), "stderr:\n%s", fakeErr.String())
	require.Contains(t, fakeErr.String(), "payonce fake: stopped")
}
