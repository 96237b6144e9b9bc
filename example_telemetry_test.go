package payonce_test

import (
	"context"
	"fmt"
	"net/http"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
)

// A client reporting to an application's OpenTelemetry providers. payonce
// records its own metrics and spans (semconv.MetricNames) and leaves HTTP
// and SQL to the instrumentation made for them, which the application
// installs where payonce's requests and queries pass:
//
//	// HTTP spans and metrics, and the traceparent header the provider
//	// receives, under each attempt's span:
//	httpClient := &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport,
//		otelhttp.WithTracerProvider(tp), otelhttp.WithMeterProvider(mp))}
//
//	// SQL spans for the PostgreSQL ledger, under the same spans:
//	pgcfg, _ := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
//	pgcfg.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTracerProvider(tp))
//	pool, _ := pgxpool.NewWithConfig(ctx, pgcfg)
//	store, _ := ledgerpg.New(pool, ledgerpg.Config{})
//
// (go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp and
// github.com/exaring/otelpgx.) The ledger gauges (payonce.operations.*) are
// reported once per ledger: by the Reconciler, or by RegisterLedgerMetrics.
func Example_openTelemetry() {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = mp.Shutdown(context.Background()); _ = tp.Shutdown(context.Background()) }()

	var psp payonce.Provider                                     // e.g. stripe.New(stripe.Config{...})
	var store ledger.Store                                       // e.g. ledgerpg.New(pool, ledgerpg.Config{})
	httpClient := &http.Client{Transport: http.DefaultTransport} // otelhttp.NewTransport(...) in production
	if psp == nil || store == nil {
		fmt.Println("metrics:", len(semconv.MetricNames()))
		return
	}
	client, err := payonce.New(payonce.Config{Provider: psp, Store: store, HTTPClient: httpClient,
		MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The reconciler reports the ledger gauges (StatsInterval -1: it does not).
	rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{client},
		MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rec.Close()
	// Output:
	// metrics: 13
}
