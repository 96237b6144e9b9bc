package cli

import (
	"io"
	"log/slog"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// providerFlags are the flags that choose and tune the provider adapter.
type providerFlags struct {
	f         *cmdFlags
	provider  string
	baseURL   string
	keyTTL    time.Duration
	searchLag time.Duration
	timeout   time.Duration
	verbose   bool
}

func addProviderFlags(f *cmdFlags) *providerFlags {
	pf := &providerFlags{f: f}
	f.StringVar(&pf.provider, "provider", "stripe", "payment provider `NAME`: stripe, yookassa or checkout; or PAYONCE_PROVIDER")
	f.StringVar(&pf.baseURL, "base-url", "", "send the provider's requests to this `URL` instead (a fake, a proxy);\nor PAYONCE_BASE_URL")
	f.duration(&pf.keyTTL, "key-ttl", 0, "how long the provider keeps idempotency keys; `D` replaces the adapter's\ndefault (24h for stripe, yookassa and checkout) and must never exceed the\n"+
		"provider's real one")
	f.duration(&pf.searchLag, "search-lag", 0, "how long before a lookup that found nothing is believed; `D` replaces\n"+
		"the adapter's default: stripe's search lag (1m), yookassa's list lag (1m),\n"+
		"checkout's settle lag (2m)")
	f.duration(&pf.timeout, "timeout", 0, "bound on one request to the provider (`D`, default 30s)")
	f.BoolVar(&pf.verbose, "verbose", false, "log retries, lookups and state changes to stderr")
	return pf
}

// newClient builds the adapter (credentials from the environment) and a
// client on store.
func (a *App) newClient(pf *providerFlags, store ledger.Store, logLevel slog.Level) (*payonce.Client, error) {
	name := pf.provider
	if !pf.f.wasSet("provider") {
		if v := a.Env("PAYONCE_PROVIDER"); v != "" {
			name = v
		}
	}
	base := pf.baseURL
	if !pf.f.wasSet("base-url") {
		base = a.Env("PAYONCE_BASE_URL")
	}
	p, err := a.Providers.build(name, a.Env, AdapterConfig{BaseURL: base, KeyTTL: pf.keyTTL, SearchLag: pf.searchLag})
	if err != nil {
		return nil, err
	}
	if pf.verbose {
		logLevel = slog.LevelDebug
	}
	cfg := payonce.Config{
		Provider:       p,
		Store:          store,
		AttemptTimeout: pf.timeout,
		Logger:         a.logger(logLevel),
	}
	cfg.SafetyMargin = safetyMargin(p.Info().KeyTTL, pf.timeout)
	c, err := payonce.New(cfg)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	return c, nil
}

// safetyMargin returns the margin the client keeps before the key TTL ends:
// the library's default (0) when it fits the TTL comfortably, a quarter of
// the TTL when the TTL is short (a fake's, or a test's).
func safetyMargin(keyTTL, attemptTimeout time.Duration) time.Duration {
	if attemptTimeout == 0 {
		attemptTimeout = 30 * time.Second
	}
	def := max(time.Minute, keyTTL/100) + attemptTimeout
	if def < keyTTL/2 {
		return 0
	}
	return keyTTL / 4
}

// logger logs at level to stderr; levels above Error discard everything.
func (a *App) logger(level slog.Level) *slog.Logger {
	if level > slog.LevelError {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(a.Stderr, &slog.HandlerOptions{Level: level}))
}

// quiet is the log level that discards everything.
const quiet = slog.LevelError + 4
