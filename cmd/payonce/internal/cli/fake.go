package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"time"
)

// The fake's own endpoints, served beside the provider's routes and outside
// fault injection.
const (
	// fakeTruthPath answers GET with mocks.Truth as JSON: what the fake
	// really did, for the test to compare with its ledger.
	fakeTruthPath = "/__truth"
	// fakeReleasePath (POST) ends every hang and slow delay, current and
	// future (mocks' Release): the fake then answers at once.
	fakeReleasePath = "/__release"
	// fakeWebhooksPath answers GET with mocks.WebhookStats as JSON.
	fakeWebhooksPath = "/__webhooks"
)

// fakeReady is the one line "payonce fake" prints to stdout once it
// serves.
type fakeReady struct {
	Provider string `json:"provider"`
	// URL is the base URL to give the adapter (--base-url).
	URL      string `json:"url"`
	TruthURL string `json:"truth_url"`
	// Env holds the adapter's credential variables that authenticate to
	// this fake (STRIPE_API_KEY, YOOKASSA_SHOP_ID, ...).
	Env  map[string]string `json:"env"`
	Note string            `json:"note"`
}

const fakeCredentialsNote = "fake test credentials, accepted only by this fake process; never a real provider's"

func runFake(ctx context.Context, a *App, args []string) error {
	f := newFlags("fake", "payonce fake --provider stripe|yookassa|checkout|adyen|paypal [--addr 127.0.0.1:0] [--fault-rate F] [--seed N] [--key-ttl D] [--webhook-url URL --webhook-secret S] [--exit-on-stdin-eof]",
		`Serves a fake provider (the same fakes as "payonce demo", from package
mocks) in its own process on a loopback address, so that a service under
test, even one that is killed mid-payment, talks to a provider that outlives
it and remembers what happened.

Once it serves it prints one JSON line to stdout: {"provider", "url" (the
adapter's base URL), "truth_url", "env" (the adapter's credential variables,
e.g. STRIPE_API_KEY), "note"}. These credentials are fake test credentials
made up by this process; they are printed because nothing else accepts them.
Beside the provider's API it serves GET /__truth (what the fake really did,
as mocks.Truth JSON), GET /__webhooks (delivery counts) and POST /__release
(ends every hang and slow delay from then on).

--fault-rate fails that share of the requests that move money with the
faults that matter at that provider, in the demo's mix (answers lost after
the money moved, hangs, proxy 502s, rate limits, slow answers, 500s).
--webhook-url has the fake deliver its provider's webhooks there (loopback
only), signed with --webhook-secret (Stripe: whsec_...; Checkout.com: any;
Adyen: a hex HMAC key, with --webhook-username and --webhook-password);
YooKassa signs nothing. PayPal signs with a test certificate over its
webhook id (--webhook-secret sets the id, PAYPAL_WEBHOOK_ID in "env"); the
fake also answers verify-webhook-signature, so "env" has
PAYPAL_WEBHOOK_VERIFICATION=api.

Runs until SIGTERM or SIGINT (or, with --exit-on-stdin-eof, until its stdin
closes: the driving test went away); exit code 0 then.`)
	provider := ""
	addr := "127.0.0.1:0"
	var o fakeOptions
	var faultRate float64
	var stdinEOF bool
	f.StringVar(&provider, "provider", provider, "the fake to serve, `NAME`: "+demoProviderNames()+"; or PAYONCE_PROVIDER")
	f.StringVar(&addr, "addr", addr, "`HOST:PORT` to listen on; a loopback address only (port 0: a free one)")
	f.Float64Var(&faultRate, "fault-rate", 0, "`RATE` of the requests that move money the fake fails, 0 to 1")
	f.Int64Var(&o.Seed, "seed", 1, "`N` seeds the fake's ids, credentials and faults")
	f.duration(&o.KeyTTL, "key-ttl", 0, "idempotency key TTL (`D`); 0 is the provider's own (24h; Adyen: 31d)")
	f.duration(&o.HangFor, "hang-for", 0, "how long a hang fault holds an answer (`D`); 0 is 30s")
	f.StringVar(&o.Webhooks.URL, "webhook-url", "", "deliver the provider's webhooks to `URL` (loopback only)")
	f.StringVar(&o.Webhooks.Secret, "webhook-secret", "", "the webhooks' signing secret `S` (a test secret)")
	f.StringVar(&o.Webhooks.Username, "webhook-username", "", "basic-auth user `NAME` of the deliveries (Adyen)")
	f.StringVar(&o.Webhooks.Password, "webhook-password", "", "basic-auth `PASSWORD` of the deliveries (Adyen; a test password)")
	f.duration(&o.Webhooks.Delay, "webhook-delay", 0, "deliver each event `D` late")
	f.Float64Var(&o.Webhooks.DuplicateRate, "webhook-duplicate-rate", 0, "`RATE` of events delivered twice, 0 to 1")
	f.Float64Var(&o.Webhooks.ReorderRate, "webhook-reorder-rate", 0, "`RATE` of events delivered out of order, 0 to 1")
	f.Float64Var(&o.Webhooks.FailRate, "webhook-fail-rate", 0, "`RATE` of delivery attempts that fail (and are retried), 0 to 1")
	f.BoolVar(&stdinEOF, "exit-on-stdin-eof", false, "also stop when stdin closes")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	if !f.wasSet("provider") {
		provider = a.Env("PAYONCE_PROVIDER")
	}
	if provider == "" {
		return usageErrorf("--provider is required: one of %s", demoProviderNames())
	}
	p, ok := findDemoProvider(provider)
	if !ok {
		return usageErrorf("unknown provider %q: --provider takes %s", provider, demoProviderNames())
	}
	if math.IsNaN(faultRate) || faultRate < 0 || faultRate > 1 {
		return usageErrorf("--fault-rate must be between 0 and 1, got %v", faultRate)
	}
	if err := checkLoopbackAddr(addr); err != nil {
		return err
	}
	o.FaultRates = p.faultRates(faultRate)
	h, env, err := p.fake(o)
	if err != nil {
		return usageErrorf("the %s fake refuses its options: %v (check --key-ttl, --hang-for and the --webhook-* flags)", p.title, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErrorf("--addr %s: %v", addr, err)
	}
	// The name may have resolved to a non-loopback address (a "localhost"
	// in /etc/hosts pointing elsewhere): the fake accepts fake credentials
	// from anyone who reaches it, so it never listens beyond this machine.
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return usageErrorf("--addr %s listens on %s, not a loopback address; use 127.0.0.1:PORT or [::1]:PORT", addr, ln.Addr())
	}
	return serveFake(ctx, a, p, h, env, ln, stdinEOF)
}

// checkLoopbackAddr refuses an --addr that is not HOST:PORT on a loopback
// host. The fake takes anyone's fake credentials and moves fake money on
// request, so it must not be reachable from another machine.
func checkLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--addr %q is not HOST:PORT: use a loopback address such as 127.0.0.1:0", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return usageErrorf("--addr %q is not a loopback address: the fake serves this machine only; use 127.0.0.1:PORT, [::1]:PORT or localhost:PORT", addr)
	}
	return nil
}

// serveFake serves h on ln until ctx ends (SIGTERM, SIGINT) or, with
// stdinEOF, stdin closes.
func serveFake(ctx context.Context, a *App, p demoProvider, h fakeHandler, env map[string]string, ln net.Listener, stdinEOF bool) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+fakeTruthPath, func(w http.ResponseWriter, r *http.Request) { serveJSON(w, h.Truth()) })
	mux.HandleFunc("GET "+fakeWebhooksPath, func(w http.ResponseWriter, r *http.Request) { serveJSON(w, h.WebhookStats()) })
	mux.HandleFunc("POST "+fakeReleasePath, func(w http.ResponseWriter, r *http.Request) {
		h.Release()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("/", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if stdinEOF {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	base := "http://" + ln.Addr().String()
	var serveErr error
	// Without its ready line nobody can find the fake: stop at once.
	if err := writeJSON(a.Stdout, fakeReady{Provider: p.name, URL: base, TruthURL: base + fakeTruthPath, Env: env, Note: fakeCredentialsNote}); err != nil {
		serveErr = fmt.Errorf("printing the ready line: %w", err)
		stop()
	}
	fmt.Fprintf(a.Stderr, "payonce fake: %s on %s (stop with SIGTERM or SIGINT)\n", p.title, base)

	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	// Held requests first, so that Shutdown does not wait out a hang;
	// the webhook sender last, since requests in progress may still emit
	// events.
	h.Release()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(a.Stderr, "payonce fake: shutting down: %v\n", err)
	}
	h.StopWebhooks()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serving the %s fake: %w", p.title, serveErr)
	}
	fmt.Fprintf(a.Stderr, "payonce fake: stopped\n")
	return nil
}

// serveJSON answers with v as JSON.
func serveJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = writeJSON(w, v)
}
