package cli

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

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
	clockSkew time.Duration
	verbose   bool
	// fixed: the command chose the provider itself (webhooks serve builds
	// one client per provider); --provider and PAYONCE_PROVIDER do not apply.
	fixed bool
}

// Defaults of the provider flags, as the library has them.
const (
	defaultAttemptTimeout = 30 * time.Second
	defaultClockSkew      = time.Minute
)

func addProviderFlags(f *cmdFlags) *providerFlags {
	pf := &providerFlags{f: f}
	f.StringVar(&pf.provider, "provider", "stripe", "payment provider `NAME`: stripe, yookassa, checkout, adyen or paypal;\nor PAYONCE_PROVIDER")
	f.StringVar(&pf.baseURL, "base-url", "", "send the provider's requests to this `URL` instead (a fake, a proxy);\nor PAYONCE_BASE_URL")
	f.duration(&pf.keyTTL, "key-ttl", 0, "how long the provider keeps idempotency keys; `D` replaces the adapter's\ndefault (24h for stripe, yookassa and checkout, 744h for adyen; paypal keeps\n6h for charges and 1080h for the rest, and D shortens each to at most D) and\nmust never exceed the "+
		"provider's real one")
	f.duration(&pf.searchLag, "search-lag", 0, "how long before a lookup that found nothing is believed; `D` replaces\n"+
		"the adapter's default: stripe's search lag (1m), yookassa's list lag (1m),\n"+
		"checkout's settle lag (2m)")
	f.duration(&pf.timeout, "timeout", 0, "bound on one request to the provider (`D`, default 30s)")
	f.duration(&pf.clockSkew, "clock-skew", defaultClockSkew, "how far this machine's clock and the provider's may disagree (`D`); resends stop\n"+
		"--timeout plus the larger of this and 1% of the key TTL before the key expires")
	f.BoolVar(&pf.verbose, "verbose", false, "log retries, lookups and state changes to stderr")
	return pf
}

// name is the provider chosen: --provider, else PAYONCE_PROVIDER, else
// the flag's default (unless the command fixed it).
func (pf *providerFlags) name(a *App) string {
	if !pf.fixed && !pf.f.wasSet("provider") {
		if v := a.Env("PAYONCE_PROVIDER"); v != "" {
			return v
		}
	}
	return pf.provider
}

// newClient builds the adapter (credentials from the environment) and a
// client on store.
func (a *App) newClient(pf *providerFlags, store ledger.Store, logLevel slog.Level) (*payonce.Client, error) {
	return a.newClientMetered(pf, store, logLevel, nil)
}

// newClientMetered is newClient recording the client's metrics into mp
// (nil: OpenTelemetry's global provider, a no-op unless a program
// registers one; the binary never does).
func (a *App) newClientMetered(pf *providerFlags, store ledger.Store, logLevel slog.Level, mp metric.MeterProvider) (*payonce.Client, error) {
	name := pf.name(a)
	base := pf.baseURL
	if !pf.f.wasSet("base-url") {
		base = a.Env("PAYONCE_BASE_URL")
	}
	if pf.clockSkew <= 0 {
		return nil, usageErrorf("--clock-skew must be greater than 0 (default %s): how far this machine's clock and the provider's may disagree",
			fmtDuration(defaultClockSkew))
	}
	p, err := a.Providers.build(name, a.Env, AdapterConfig{BaseURL: base, KeyTTL: pf.keyTTL, SearchLag: pf.searchLag})
	if err != nil {
		return nil, err
	}
	// The margin must fit the shortest window the adapter declares (PayPal:
	// its orders' 6 h, not its payments' 45 days).
	shortest, _ := p.Info().KeyTTLRange()
	ttlName := "--key-ttl " + fmtDuration(pf.keyTTL)
	if pf.keyTTL == 0 {
		ttlName = fmt.Sprintf("the %s key TTL of %s", fmtDuration(shortest), p.Name())
	}
	timeoutName := "--timeout " + fmtDuration(pf.timeout)
	if pf.timeout == 0 {
		timeoutName = "the default --timeout " + fmtDuration(defaultAttemptTimeout)
	}
	if err := checkMargin(shortest, ttlName, pf.timeout, timeoutName, pf.clockSkew,
		"use a longer --key-ttl, a shorter --timeout or a smaller --clock-skew"); err != nil {
		return nil, err
	}
	if pf.verbose {
		logLevel = slog.LevelDebug
	}
	// SafetyMargin stays zero: the library's default, the margin
	// checkMargin computed.
	cfg := payonce.Config{
		Provider:       p,
		Store:          store,
		AttemptTimeout: pf.timeout,
		ClockSkew:      pf.clockSkew,
		Logger:         a.logger(logLevel),
		MeterProvider:  mp,
	}
	c, err := payonce.New(cfg)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	return c, nil
}

// safetyMargin is the library's default margin (payonce.Config.SafetyMargin):
// resends stop this long before the provider may forget the key, so that a
// resend started just inside the window, which may take a whole attempt and
// meet a provider clock running ahead, still lands inside it.
func safetyMargin(keyTTL, attemptTimeout, clockSkew time.Duration) time.Duration {
	if attemptTimeout == 0 {
		attemptTimeout = defaultAttemptTimeout
	}
	if clockSkew == 0 {
		clockSkew = defaultClockSkew
	}
	return max(clockSkew, keyTTL/100) + attemptTimeout
}

// checkMargin refuses a key TTL that leaves no time to resend once the
// safety margin is taken off, naming what to change. ttlName and
// timeoutName say how the key TTL and the attempt timeout were given (e.g.
// "--key-ttl 5m30s", "--timeout 5m"); fix says what to change.
func checkMargin(keyTTL time.Duration, ttlName string, timeout time.Duration, timeoutName string, skew time.Duration, fix string) error {
	margin := safetyMargin(keyTTL, timeout, skew)
	if margin < keyTTL {
		return nil
	}
	allowance := fmt.Sprintf("the %s clock-skew allowance", fmtDuration(skew))
	if keyTTL/100 > skew {
		allowance = fmt.Sprintf("the %s clock-skew allowance (1%% of the key TTL, more than --clock-skew %s)", fmtDuration(keyTTL/100), fmtDuration(skew))
	}
	return usageErrorf("%s plus %s leaves no time to resend inside %s: resends stop %s before the key expires; %s",
		timeoutName, allowance, ttlName, fmtDuration(margin), fix)
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
