package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

func runWebhooks(ctx context.Context, a *App, args []string) error {
	return runSubcommand(ctx, a, args, "webhooks", "payonce webhooks serve [--addr HOST:PORT] [flags] | payonce webhooks list [flags]",
		subcommand{"serve", runWebhooksServe}, subcommand{"list", runWebhooksList})
}

// Limits of the webhook server: it faces the internet, so every phase of a
// request is bounded. Providers' events are a few kilobytes and every
// provider waits at least 10 s for an answer.
const (
	webhookReadHeaderTimeout = 5 * time.Second
	webhookReadTimeout       = 10 * time.Second
	webhookWriteTimeout      = 15 * time.Second
	webhookIdleTimeout       = 60 * time.Second
	webhookMaxHeaderBytes    = 64 << 10
	webhookShutdownTimeout   = 10 * time.Second
)

func runWebhooksServe(ctx context.Context, a *App, args []string) error {
	f := newFlags("webhooks serve", "payonce webhooks serve [--addr HOST:PORT] [flags]",
		`Receives the providers' webhooks and settles the ledger with them: every event
is verified, recorded once and applied by the same state rules as lookups;
it never sends a request. Serves POST /webhooks/stripe, /webhooks/checkout,
/webhooks/adyen and /webhooks/yookassa for each provider whose credentials and
webhook settings are all set in the environment, plus GET /healthz.
SIGINT or SIGTERM stops it gracefully. With --metrics-addr it also serves
Prometheus metrics (webhook events, transitions, the ledger's open
operations) on a separate listener, which should not face the internet.

Webhook settings (environment only):
  stripe    STRIPE_WEBHOOK_SECRET (the endpoint's signing secret, whsec_...)
  checkout  CHECKOUT_WEBHOOK_SECRET (the webhook's signature key)
  adyen     ADYEN_HMAC_KEY (hex), ADYEN_WEBHOOK_USERNAME, ADYEN_WEBHOOK_PASSWORD
  yookassa  YOOKASSA_WEBHOOK_ALLOW (CIDRs or addresses, comma-separated, that
            notifications are accepted from; YooKassa signs nothing, so each
            notification only triggers a lookup)`)
	lf := addLedgerFlags(f, nil, "")
	pf := addProviderFlags(f)
	var addr, metricsAddr string
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT`")
	f.StringVar(&metricsAddr, "metrics-addr", "", metricsAddrUsage)
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	if f.wasSet("provider") {
		return usageErrorf("webhooks serve serves every provider whose settings are set; --provider does not apply")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usageErrorf("--addr %q is not HOST:PORT: %v", addr, err)
	}
	if metricsAddr != "" {
		if err := checkMetricsAddr(metricsAddr); err != nil {
			return err
		}
		// Metrics are served apart from the webhooks: the webhook listener
		// faces the providers (the internet), the metrics one should not.
		if _, port, _ := net.SplitHostPort(addr); metricsAddr == addr && port != "0" {
			return usageErrorf("--metrics-addr must differ from --addr %s: metrics are served on a listener of their own", addr)
		}
	}
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	m, stopMetrics, err := a.startMetrics(metricsAddr)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if m != nil {
		// The ledger gauges, once for the ledger (not once per provider's
		// client): no Reconciler runs here to register them.
		reg, err := payonce.RegisterLedgerMetrics(l.store, payonce.LedgerMetricsConfig{MeterProvider: m.MeterProvider()})
		if err != nil {
			return err
		}
		defer func() { _ = reg.Unregister() }()
	}

	mux := http.NewServeMux()
	var served []string
	for _, name := range a.Providers.Names() {
		ad := a.Providers.adapters[name]
		if len(ad.WebhookEnvVars) == 0 || !allSet(a.Env, ad.EnvVars) || !allSet(a.Env, ad.WebhookEnvVars) {
			continue
		}
		p := *pf
		p.provider, p.fixed = name, true
		client, err := a.newClientMetered(&p, l.store, slog.LevelInfo, m.MeterProvider())
		if err != nil {
			return err
		}
		h, err := client.WebhookHandler(payonce.WebhookOptions{})
		if err != nil {
			return withCode(ExitUsage, err)
		}
		mux.Handle("POST /webhooks/"+name, h)
		served = append(served, name)
	}
	if len(served) == 0 {
		return usageErrorf("no provider has its webhook settings set: %s", a.Providers.webhookHelp())
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErrorf("--addr %s: %v", addr, err)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: webhookReadHeaderTimeout,
		ReadTimeout:       webhookReadTimeout,
		WriteTimeout:      webhookWriteTimeout,
		IdleTimeout:       webhookIdleTimeout,
		MaxHeaderBytes:    webhookMaxHeaderBytes,
	}
	metricsMsg := ""
	if m != nil {
		metricsMsg = "; metrics on " + m.URL()
	}
	fmt.Fprintf(a.Stderr, "payonce: receiving webhooks for %s on http://%s (ledger %s)%s; SIGINT or SIGTERM stops\n",
		strings.Join(served, ", "), ln.Addr(), l.desc, metricsMsg)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("webhook server: %w", err)
	case <-m.Done():
		_ = srv.Close()
		return m.Failure()
	case <-ctx.Done():
	}
	// Graceful: deliveries being recorded finish (and are acknowledged);
	// new ones are refused, and the provider delivers them again later.
	sctx, cancel := context.WithTimeout(context.Background(), webhookShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("webhook server shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook server: %w", err)
	}
	fmt.Fprintln(a.Stderr, "payonce: webhook server stopped")
	return nil
}

func allSet(env func(string) string, vars []string) bool {
	for _, v := range vars {
		if env(v) == "" {
			return false
		}
	}
	return true
}

// webhookHelp lists each provider's credential and webhook variables.
func (r *Registry) webhookHelp() string {
	var parts []string
	for _, n := range r.Names() {
		a := r.adapters[n]
		if len(a.WebhookEnvVars) == 0 {
			continue
		}
		parts = append(parts, strings.Join(append(append([]string{}, a.EnvVars...), a.WebhookEnvVars...), ", ")+" for "+n)
	}
	return strings.Join(parts, "; ")
}

func runWebhooksList(ctx context.Context, a *App, args []string) error {
	f := newFlags("webhooks list", "payonce webhooks list [--provider P] [--disposition D] [--operation ID] [--limit N] [--json]",
		`Lists the recorded webhook events, newest first, with what each did to the
operations it names. --disposition contradiction lists the events that
contradicted a settled outcome (those operations are in review); unmatched
lists events for objects payonce did not create; unreadable lists events that
verified but could not be read (acknowledged, applied to nothing: read each
in the provider's dashboard, then settle what it names by hand).`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print one JSON object per event")
	var provider, disp, opID string
	var limit int
	f.StringVar(&provider, "provider", "", "only events of provider `P`")
	f.StringVar(&disp, "disposition", "", "only events with an outcome `D`: "+dispositionNames())
	f.StringVar(&opID, "operation", "", "only events applied to operation `ID`")
	f.IntVar(&limit, "limit", 100, "at most `N` events")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	filter := ledger.InboxFilter{Provider: provider, OperationID: opID, Limit: limit}
	d, err := parseOptional("disposition", disp, ledgerdriver.ParseWebhookDisposition, dispositionNames())
	if err != nil {
		return err
	}
	filter.Disposition = d
	l, err := a.openListing(ctx, lf, limit)
	if err != nil {
		return err
	}
	defer l.Close()
	entries, err := l.store.ListWebhooks(ctx, filter)
	if err != nil {
		return fmt.Errorf("listing webhook events: %w", err)
	}
	if asJSON {
		enc := json.NewEncoder(a.Stdout)
		for _, e := range entries {
			if err := enc.Encode(inboxJSON(e)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(entries) == 0 {
		fmt.Fprintln(a.Stderr, "no webhook events")
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RECEIVED\tPROVIDER\tEVENT\tTYPE\tOPERATION\tDISPOSITION\tFROM -> TO")
	for _, e := range entries {
		if len(e.Outcomes) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t-\t-\n", timeText(e.ReceivedAt), e.Provider, e.ID, e.Type)
		}
		for _, o := range e.Outcomes {
			move := "-"
			if o.From != "" {
				move = string(o.From) + " -> " + string(o.To)
			}
			if e.Unreadable != "" {
				// The reason in the last column: what the operator looks
				// for in the provider's dashboard.
				move = e.Unreadable
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", timeText(e.ReceivedAt), e.Provider, e.ID, e.Type,
				dash(o.OperationID), o.Disposition, oneLine(move))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := countUnreadable(entries); n > 0 {
		fmt.Fprintf(a.Stderr, "%d event(s) verified but could not be read: nothing was applied from them; read each in the provider's dashboard\n", n)
	}
	return nil
}

// countUnreadable counts the unreadable entries.
func countUnreadable(entries []ledger.InboxEntry) int {
	n := 0
	for _, e := range entries {
		if e.Unreadable != "" {
			n++
		}
	}
	return n
}

func dispositionNames() string {
	names := make([]string, len(ledger.WebhookDispositions))
	for i, d := range ledger.WebhookDispositions {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

type inboxEntryJSON struct {
	Provider   string                  `json:"provider"`
	ID         string                  `json:"id"`
	Type       string                  `json:"type"`
	OccurredAt *time.Time              `json:"occurred_at"`
	ReceivedAt *time.Time              `json:"received_at"`
	Outcomes   []ledger.WebhookOutcome `json:"outcomes"`
	// Unreadable is why a verified event could not be read; absent for
	// one that was.
	Unreadable string `json:"unreadable,omitempty"`
}

func inboxJSON(e ledger.InboxEntry) inboxEntryJSON {
	out := e.Outcomes
	if out == nil {
		out = []ledger.WebhookOutcome{}
	}
	return inboxEntryJSON{Provider: e.Provider, ID: e.ID, Type: e.Type, OccurredAt: timeJSON(e.OccurredAt),
		ReceivedAt: timeJSON(e.ReceivedAt), Outcomes: out, Unreadable: e.Unreadable}
}
