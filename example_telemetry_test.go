package payonce_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"go.opentelemetry.io/otel"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
	"github.com/payonce/payonce/semconv"
)

// A client reporting to an application's OpenTelemetry providers. payonce
// depends on the OpenTelemetry API only: the application builds its SDK
// providers and exporters, registers them (otel.SetMeterProvider,
// otel.SetTracerProvider) or passes them in Config, and payonce records its
// own metrics and spans (semconv.MetricNames) on them. It leaves HTTP and
// SQL to the instrumentation made for them, which the application installs
// where payonce's requests and queries pass:
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
// With no provider registered, as here, payonce's instrumentation records
// nothing and starts no spans.
func Example_openTelemetry() {
	ctx := context.Background()
	// The providers the application registered (the SDK's, in production);
	// leaving Config's fields nil takes the same ones.
	mp, tp := otel.GetMeterProvider(), otel.GetTracerProvider()

	dir, err := os.MkdirTemp("", "payonce-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	store, err := ledgersqlite.Open(filepath.Join(dir, "payonce.db"), ledgersqlite.Config{}) // ledgerpg in production
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fake := mocks.NewStripe(mocks.StripeOptions{}) // a fake Stripe on 127.0.0.1
	defer fake.Close()
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	httpClient := &http.Client{Transport: http.DefaultTransport} // otelhttp.NewTransport(...) in production
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

	res, err := client.Charge(ctx, payonce.ChargeParams{OrderID: "order-otel", Amount: 1999, Currency: "USD", PaymentMethod: "pm_card_visa"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("charge:", res.Status)
	fmt.Println("scope:", semconv.ScopeName)
	fmt.Println("metrics:", len(semconv.MetricNames()))
	// Output:
	// charge: succeeded
	// scope: github.com/payonce/payonce
	// metrics: 16
}
