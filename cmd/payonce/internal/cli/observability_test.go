package cli_test

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
)

// openLedgerFixture leaves, through the CLI, one succeeded charge, one
// charge whose outcome is unknown (answer lost, lookups failing) and one
// pending (the provider unreachable), and returns the unknown one's id.
func openLedgerFixture(t *testing.T, fake *mocks.Stripe, env map[string]string) string {
	t.Helper()
	charge := func(order, base string, extra ...string) result {
		return runBinary(t, env, append([]string{"charge", "--order", order, "--amount", "700", "--currency", "USD",
			"--payment-method", "pm_card_visa", "--base-url", base}, extra...)...)
	}
	r := charge("order-ok", fake.URL())
	require.Equal(t, 0, r.code, "%s", r)
	id := opID(t, payonce.KindCharge, "order-lost")
	fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: id}, mocks.FaultGatewayAfter502)
	faults := make([]mocks.FaultKind, 500)
	for i := range faults {
		faults[i] = mocks.FaultGatewayBefore502
	}
	fake.Script(mocks.Match{Method: "GET"}, faults...)
	r = charge("order-lost", fake.URL(), "--timeout", "1s")
	require.Equal(t, 4, r.code, "%s", r)
	r = charge("order-down", "http://127.0.0.1:1")
	require.Equal(t, 7, r.code, "%s", r)
	return id
}

// TestStats: the counts, oldest open operations and review reasons of
// "payonce stats" on both ledgers, and the same open counts on the
// /metrics of "webhooks serve --metrics-addr" (the ledger gauges), which
// stops gracefully with the command.
func TestStats(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		lost := openLedgerFixture(t, fake, env)

		js := runBinary(t, env, "stats", "--json")
		obj := wantJSON(t, js, 0)
		totals := obj["totals"].(map[string]any)
		require.EqualValues(t, 1, totals["succeeded"], "%s", js)
		require.EqualValues(t, 1, totals["unknown"], "%s", js)
		require.EqualValues(t, 1, totals["pending"], "%s", js)
		require.EqualValues(t, 0, totals["manual_review"], "%s", js)
		open := map[string]float64{}
		for _, o := range obj["operations"].([]any) {
			m := o.(map[string]any)
			require.Equal(t, "stripe", m["provider"])
			require.Equal(t, "charge", m["kind"])
			open[m["status"].(string)] = m["count"].(float64)
		}
		var oldestUnknown map[string]any
		for _, o := range obj["oldest"].([]any) {
			if m := o.(map[string]any); m["status"] == "unknown" {
				oldestUnknown = m
			}
		}
		require.NotNil(t, oldestUnknown, "%s", js)
		require.Equal(t, lost, oldestUnknown["operation_id"])
		require.GreaterOrEqual(t, oldestUnknown["age_seconds"].(float64), 0.0)
		require.Equal(t, []any{}, obj["consumers"], "no feed consumer has run on this ledger: %s", js)

		human := runBinary(t, env, "stats")
		require.Equal(t, 0, human.code, "%s", human)
		for _, w := range []string{"PROVIDER", "PENDING", "UNKNOWN", "IN_REVIEW", "SUCCEEDED", "oldest open operations:", lost} {
			require.Contains(t, human.stdout, w, "%s", human)
		}
		require.Regexp(t, `stripe\s+charge\s+1\s+0\s+1\s+0\s+1\s+0\s+3`, human.stdout)

		// The same numbers on /metrics.
		first, stop := serveWebhooksLine(t, with(env, "STRIPE_WEBHOOK_SECRET", testWebhookSecret), "--base-url", fake.URL(), "--metrics-addr", "127.0.0.1:0")
		murl := regexp.MustCompile(`metrics on (http://\S+/metrics);`).FindStringSubmatch(first)
		require.NotNil(t, murl, "first line: %s", first)
		body := scrape(t, murl[1])
		gauge := regexp.MustCompile(`(?m)^payonce_operations_open\{([^}]*)\} (\S+)$`)
		got := map[string]float64{}
		for _, m := range gauge.FindAllStringSubmatch(body, -1) {
			require.Contains(t, m[1], `payonce_provider="stripe"`)
			st := regexp.MustCompile(`payonce_status="([a-z_]+)"`).FindStringSubmatch(m[1])
			require.NotNil(t, st, "%s", m[0])
			v, err := strconv.ParseFloat(m[2], 64)
			require.NoError(t, err)
			got[st[1]] = v
		}
		for _, st := range []string{"pending", "unknown"} {
			require.Equal(t, open[st], got[st], "payonce_operations_open{status=%q} and stats differ:\n%s", st, body)
		}
		require.Len(t, got, 2, "only pending and unknown are open:\n%s", body)
		require.Contains(t, body, "payonce_operations_oldest_age_seconds{")
		out := stop()
		require.Contains(t, out, "webhook server stopped")
	})
}

// scrape reads the metrics of a server whose start line named them.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	return string(b)
}

// TestReconcileMetrics: the reconcile loop serves its metrics while it
// runs and stops (server included) on SIGTERM.
func TestReconcileMetrics(t *testing.T) {
	t.Parallel()
	tg := sqliteTarget(t)
	fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
	b := startBinary(t, env, "reconcile", "--interval", "50ms", "--base-url", fake.URL(), "--metrics-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`metrics on (http://\S+/metrics);`).FindStringSubmatch(b.first)
	require.NotNil(t, m, "first line: %s", b.first)
	var body string
	require.Eventually(t, func() bool {
		body = scrape(t, m[1])
		return strings.Contains(body, "payonce_reconcile_pass_duration_seconds_count{")
	}, 30*time.Second, 50*time.Millisecond, "no pass recorded")
	require.Contains(t, body, "go_goroutines", "the registry has the Go collector")
	require.Contains(t, b.stop(t, syscall.SIGTERM), "reconciler stopped")
	_, err := http.Get(m[1])
	require.Error(t, err, "the metrics server stopped with the command")
}

// TestReconcileUntilSettled: --until-idle leaves an unknown operation whose
// next check is later; --until-settled with a short --settle-timeout exits
// 9 naming it; with the provider answering again, --until-settled sleeps
// until the check is due and settles it.
func TestReconcileUntilSettled(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		base := "--base-url=" + fake.URL()
		id := opID(t, payonce.KindCharge, "order-late")
		fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: id}, mocks.FaultGatewayAfter502)
		// Every read of the lookup fails: the list (with its retries) and
		// the search it falls back to (with its retries).
		fake.Script(mocks.Match{Method: "GET"}, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502,
			mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502)
		r := runBinary(t, env, "charge", base, "--order", "order-late", "--amount", "900", "--currency", "USD",
			"--payment-method", "pm_card_visa", "--timeout", "1s")
		require.Equal(t, 4, r.code, "%s", r)

		short := runBinary(t, env, "reconcile", base, "--until-settled", "--settle-timeout", "1ms", "--json")
		obj := wantJSON(t, short, 9)
		require.Equal(t, "timeout", obj["stopped"], "%s", short)
		require.EqualValues(t, 1, obj["remaining_total"], "%s", short)
		ops := obj["remaining_operations"].([]any)
		require.Len(t, ops, 1)
		require.Equal(t, id, ops[0].(map[string]any)["id"])
		require.NotNil(t, obj["next_check_at"])
		require.Contains(t, short.stderr, "pass 1: claimed", "plain progress lines off a terminal")

		text := runBinary(t, env, "reconcile", base, "--until-settled", "--settle-timeout", "1ms")
		require.Equal(t, 9, text.code, "%s", text)
		require.Contains(t, text.stdout, "not settled (--settle-timeout passed): 1 ")
		require.Contains(t, text.stdout, id)

		done := runBinary(t, env, "reconcile", base, "--until-settled", "--settle-timeout", "2m", "--json")
		t.Logf("until-settled: %s", done)
		obj = wantJSON(t, done, 0)
		require.Equal(t, "settled", obj["stopped"], "%s", done)
		require.EqualValues(t, 0, obj["remaining_total"])
		require.Positive(t, obj["settled"], "%s", done)
		show := runBinary(t, env, "ops", "show", id, "--json")
		require.Equal(t, 0, show.code, "%s", show)
		require.Contains(t, show.stdout, `"status":"succeeded"`)
	})
}
