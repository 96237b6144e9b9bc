package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// This file is --metrics-addr: the long-running commands (reconcile's loop,
// webhooks serve) serve the library's OpenTelemetry metrics as a Prometheus
// /metrics endpoint. Off unless the flag is given.

// Limits of the metrics server: a scrape is one small GET, so every phase
// is bounded tightly; a slow scraper must not hold connections open.
const (
	metricsReadHeaderTimeout = 5 * time.Second
	metricsWriteTimeout      = 30 * time.Second // a scrape reads the ledger's gauges
	metricsIdleTimeout       = 60 * time.Second
	metricsShutdownTimeout   = 5 * time.Second
)

// metricsAddrUsage is the help of --metrics-addr.
const metricsAddrUsage = "serve Prometheus metrics on http://`HOST:PORT`/metrics, e.g. 127.0.0.1:9464\n" +
	"(off by default; the endpoint has no authentication: keep it on loopback or a\nprivate network)"

// checkMetricsAddr refuses an address that cannot be listened on, saying
// what a good one looks like.
func checkMetricsAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--metrics-addr %q is not HOST:PORT (e.g. 127.0.0.1:9464): %v", addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return usageErrorf("--metrics-addr %q: the port %q is not a number from 0 to 65535 (e.g. 127.0.0.1:9464)", addr, port)
	}
	if strings.ContainsAny(host, "/ ") {
		return usageErrorf("--metrics-addr %q: the host %q is not an IP address or a host name (e.g. 127.0.0.1:9464)", addr, host)
	}
	return nil
}

// metricsServer is the MeterProvider the command's clients and reconciler
// record into and the HTTP server that exports it. A nil *metricsServer is
// "metrics off": its MeterProvider is nil (the library's no-op default) and
// Shutdown does nothing.
type metricsServer struct {
	provider *sdkmetric.MeterProvider
	srv      *http.Server
	addr     net.Addr
	done     chan struct{} // closed when Serve returns
	serveErr error         // what Serve returned, once done is closed
}

// startMetrics listens on addr and serves the metrics there; addr "" turns
// metrics off (nil, nil). The exporter registers on a registry of its own,
// not Prometheus's global default one, so that nothing else in the process
// can add to (or collide with) what is scraped.
func startMetrics(addr string) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	if err := checkMetricsAddr(addr); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("metrics exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = provider.Shutdown(context.Background())
		return nil, usageErrorf("--metrics-addr %s: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	m := &metricsServer{
		provider: provider,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: metricsReadHeaderTimeout,
			WriteTimeout:      metricsWriteTimeout,
			IdleTimeout:       metricsIdleTimeout,
			MaxHeaderBytes:    16 << 10,
		},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	go func() {
		m.serveErr = m.srv.Serve(ln)
		close(m.done)
	}()
	return m, nil
}

// startMetrics is startMetrics for a command: stop shuts the server down
// and prints what went wrong doing so (the command's own result stands).
func (a *App) startMetrics(addr string) (m *metricsServer, stop func(), err error) {
	m, err = startMetrics(addr)
	if err != nil {
		return nil, nil, err
	}
	return m, func() {
		if err := m.Shutdown(); err != nil {
			fmt.Fprintf(a.Stderr, "payonce: %v\n", err)
		}
	}, nil
}

// MeterProvider is what the clients and the reconciler record into; nil
// when metrics are off.
func (m *metricsServer) MeterProvider() metric.MeterProvider {
	if m == nil {
		return nil
	}
	return m.provider
}

// URL is where the metrics are served, for the start-up message.
func (m *metricsServer) URL() string {
	return "http://" + m.addr.String() + "/metrics"
}

// Done is closed when the server stopped (on its own: a failure, or after
// Shutdown); nil, which never fires in a select, when metrics are off.
func (m *metricsServer) Done() <-chan struct{} {
	if m == nil {
		return nil
	}
	return m.done
}

// Failure is why the server stopped on its own, once Done is closed.
func (m *metricsServer) Failure() error {
	return fmt.Errorf("metrics server on %s: %w", m.addr, m.serveErr)
}

// Shutdown stops the server gracefully (a scrape under way finishes) and
// then the MeterProvider.
func (m *metricsServer) Shutdown() error {
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	<-m.done
	if !errors.Is(m.serveErr, http.ErrServerClosed) && err == nil {
		err = m.serveErr
	}
	if perr := m.provider.Shutdown(ctx); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("metrics server shutdown: %w", err)
	}
	return nil
}
