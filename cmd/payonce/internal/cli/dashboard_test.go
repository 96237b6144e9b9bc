package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/semconv"
)

// dashboardPath is the Grafana dashboard shipped with payonce.
var dashboardPath = filepath.Join("..", "..", "..", "..", "docs", "grafana", "payonce.json")

// dashboardExprs returns every PromQL expression of the dashboard's panels
// and template variables.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &d), "the dashboard is not valid JSON")
	var exprs []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q queries nothing", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q has an empty query", p.Title)
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}
	return exprs
}

// promMetricRef is a metric name as PromQL uses it: an identifier followed
// by a selector, or the first argument of label_values.
var promMetricRef = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{|label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)

// dashboardMetrics returns the metric names the dashboard queries.
func dashboardMetrics(t *testing.T) []string {
	seen := map[string]bool{}
	for _, e := range dashboardExprs(t) {
		ms := promMetricRef.FindAllStringSubmatch(e, -1)
		require.NotEmpty(t, ms, "no metric found in %q", e)
		for _, m := range ms {
			seen[m[1]+m[2]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// scrapedFamilies returns the metric names and label names in a Prometheus
// text exposition.
func scrapedFamilies(body string) (names, labels map[string]bool) {
	names, labels = map[string]bool{}, map[string]bool{}
	sample := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s`)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for _, line := range strings.Split(body, "\n") {
		m := sample.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		names[m[1]] = true
		for _, l := range label.FindAllStringSubmatch(m[3], -1) {
			labels[l[1]] = true
		}
	}
	return names, labels
}

// exporterNames are the names the OpenTelemetry Prometheus exporter gives
// an OTel metric under its default translation (UnderscoreEscapingWith
// Suffixes): dots become underscores, the unit "s" adds _seconds (curly
// units such as {attempt} add nothing), a counter adds _total and a
// histogram is _bucket, _sum and _count. The test checks these rules
// against a real scrape before trusting them for metrics the scrape lacks.
func exporterNames(otelName string) []string {
	base := strings.ReplaceAll(otelName, ".", "_")
	return []string{base, base + "_total", base + "_seconds", base + "_seconds_bucket", base + "_seconds_sum", base + "_seconds_count"}
}

// TestDashboardQueriesExportedMetrics runs an instrumented client, a
// reconciler, the ledger gauges and a webhook handler against a fake
// Stripe with the exporter --metrics-addr uses, scrapes it over HTTP, and
// checks that every metric the Grafana dashboard queries is one payonce
// exports: in the scrape, or (for metrics this run did not produce, such as
// breaker changes) a name of semconv.MetricNames() under the exporter's
// naming rules, which the scrape confirms for the rest.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, err := startMetrics("127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Shutdown()) }()

	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"), ledgersqlite.Config{})
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, store.Migrate(ctx))

	fake := mocks.NewStripeHandler(mocks.StripeOptions{})
	srv := httptest.NewServer(fake)
	defer func() { fake.Release(); srv.Close() }()
	env := map[string]string{"STRIPE_API_KEY": fake.APIKey(), "STRIPE_WEBHOOK_SECRET": "whsec_dashboard"}
	p, err := DefaultRegistry().build("stripe", func(k string) string { return env[k] }, AdapterConfig{BaseURL: srv.URL})
	require.NoError(t, err)
	client, err := payonce.New(payonce.Config{Provider: p, Store: store, MeterProvider: m.MeterProvider(), AttemptTimeout: 2 * time.Second})
	require.NoError(t, err)

	// A charge that succeeds, one whose first answer is lost (maybe sent,
	// then looked up or resent) and one declined.
	_, err = client.Charge(ctx, payonce.ChargeParams{OrderID: "dash-1", Amount: 100, Currency: "USD", PaymentMethod: "pm_card_visa"})
	require.NoError(t, err)
	lost, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{"dash-2"}}.OperationID()
	require.NoError(t, err)
	fake.Script(mocks.Match{Path: "/v1/payment_intents", IdempotencyKey: lost}, mocks.FaultGatewayAfter502)
	_, _ = client.Charge(ctx, payonce.ChargeParams{OrderID: "dash-2", Amount: 200, Currency: "USD", PaymentMethod: "pm_card_visa"})
	_, _ = client.Charge(ctx, payonce.ChargeParams{OrderID: "dash-3", Amount: 300, Currency: "USD", PaymentMethod: "pm_card_chargeDeclined"})

	r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{client}, MeterProvider: m.MeterProvider()})
	require.NoError(t, err)
	defer r.Close()
	_, err = r.RunOnce(ctx)
	require.NoError(t, err)

	// An operation left open (the provider unreachable: pending), so that
	// the ledger gauges have series.
	down, err := DefaultRegistry().build("stripe", func(k string) string { return env[k] }, AdapterConfig{BaseURL: "http://127.0.0.1:1"})
	require.NoError(t, err)
	downClient, err := payonce.New(payonce.Config{Provider: down, Store: store, MeterProvider: m.MeterProvider(), AttemptTimeout: 2 * time.Second})
	require.NoError(t, err)
	_, err = downClient.Charge(ctx, payonce.ChargeParams{OrderID: "dash-4", Amount: 400, Currency: "USD", PaymentMethod: "pm_card_visa"})
	require.ErrorIs(t, err, payonce.ErrProviderUnavailable)

	h, err := client.WebhookHandler(payonce.WebhookOptions{})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(`{"id":"evt_forged"}`)))
	require.GreaterOrEqual(t, rec.Code, 400, "an unsigned event is refused")

	resp, err := http.Get(m.URL())
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	scraped, labels := scrapedFamilies(string(body))

	// The naming rules hold for every payonce metric the scrape has.
	known := map[string]string{} // exported name -> OTel name
	for _, n := range semconv.MetricNames() {
		for _, e := range exporterNames(n) {
			known[e] = n
		}
	}
	produced := 0
	for name := range scraped {
		if strings.HasPrefix(name, "payonce_") {
			produced++
			require.Contains(t, known, name, "the scrape has %s, which no name of MetricNames() maps to: the naming rules are wrong", name)
		}
	}
	require.GreaterOrEqual(t, produced, 10, "the run produced too few payonce metrics to check the rules:\n%s", body)

	var byScrape, byRule []string
	for _, name := range dashboardMetrics(t) {
		switch {
		case scraped[name]:
			byScrape = append(byScrape, name)
		case known[name] != "":
			byRule = append(byRule, name)
		default:
			t.Errorf("the dashboard queries %s, which payonce does not export (exported: MetricNames() through the OTel Prometheus exporter)", name)
		}
	}
	// Every label the dashboard groups or filters by is one payonce sets.
	label := regexp.MustCompile(`\bpayonce_[a-z_]+\b`)
	for _, e := range dashboardExprs(t) {
		for _, l := range label.FindAllString(e, -1) {
			if scraped[l] || known[l] != "" {
				continue
			}
			if !labels[l] {
				// A label of a metric this run did not produce: it must be
				// one of payonce's attribute keys, exported the same way.
				require.Contains(t, attrLabels(), l, "the dashboard uses label %s, which neither a scraped series nor payonce's attributes have", l)
			}
		}
	}
	require.NotEmpty(t, byScrape)
	t.Logf("dashboard metrics in the scrape: %v; by the naming rules: %v", byScrape, byRule)
}

// attrLabels are payonce's attribute keys as Prometheus labels (dots
// become underscores).
func attrLabels() []string {
	var out []string
	for _, k := range []attribute.Key{semconv.AttrProvider, semconv.AttrKind, semconv.AttrResult, semconv.AttrOutcome, semconv.AttrAnswer,
		semconv.AttrDecision, semconv.AttrFrom, semconv.AttrTo, semconv.AttrStatus, semconv.AttrReason, semconv.AttrState, semconv.AttrWhat,
		semconv.AttrDisposition} {
		out = append(out, strings.ReplaceAll(string(k), ".", "_"))
	}
	return out
}
