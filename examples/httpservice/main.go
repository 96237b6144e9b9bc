// Command httpservice is a small order service that takes payments with
// payonce: net/http, pgx, and payonce's ledger in the service's own
// PostgreSQL schema beside its orders table.
//
//	POST /orders               {"id","amount","currency","payment_method"}: record the order and charge it
//	GET  /orders/{id}          the order, what happened to its charge, and its refunds
//	POST /orders/{id}/refunds  {"amount"} with an Idempotency-Key header: refund (amount 0: the rest)
//	POST /webhooks/stripe      Stripe's webhooks (signed with STRIPE_WEBHOOK_SECRET)
//
// The order and its charge operation commit in one transaction; the handler
// then charges synchronously with a short deadline and answers 202 when the
// outcome is not known yet, leaving the rest to the Reconciler running in
// the same process. A refund is numbered and checked against what remains
// in one transaction that holds the order's row lock, then sent the same
// way. A feed consumer (ledgerpg.NewConsumer) marks orders paid or failed
// from the ledger's settlement feed, with its cursor committed beside that
// change.
// SIGTERM or SIGINT shuts it down in the order the payonce package
// documents. See README.md for how to run it against "payonce fake".
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/providers/stripe"
)

// service holds what the handlers need: the service's pool, and payonce's
// store and client.
type service struct {
	pool   *pgxpool.Pool
	store  *ledgerpg.Store
	client *payonce.Client
	log    *slog.Logger
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// The first SIGTERM or SIGINT cancels ctx and starts the shutdown.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("httpservice stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	schema := envOr("DATABASE_SCHEMA", "orders")
	poolCfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	// The service's own tables live in schema (unqualified names below);
	// ledgerpg names its payonce_ tables with Config.Schema itself.
	poolCfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool, schema); err != nil {
		return err
	}

	// payonce, wired (the boilerplate README.md counts). The ledger lives in
	// the service's schema, so that an order and its charge commit in one
	// transaction.
	store, errStore := ledgerpg.New(pool, ledgerpg.Config{Schema: schema, Logger: log})
	// STRIPE_BASE_URL empty: the real Stripe. Only tests against a fake
	// whose search is never behind shorten STRIPE_SEARCH_LAG.
	psp, errPSP := stripe.New(stripe.Config{APIKey: os.Getenv("STRIPE_API_KEY"), BaseURL: os.Getenv("STRIPE_BASE_URL"),
		WebhookSecret: os.Getenv("STRIPE_WEBHOOK_SECRET"), SearchLag: envDuration("STRIPE_SEARCH_LAG")})
	if err := errors.Join(errStore, errPSP); err != nil {
		return err
	}
	if err := store.Migrate(ctx); err != nil { // payonce's own tables, beside the service's
		return err
	}
	// RequestPath bounds a Charge or Refund to about 4 s (one 2 s attempt,
	// one lookup): a customer is waiting. Whatever it cannot settle is
	// recorded and left to the Reconciler. CheckInterval (default 30 s) is
	// how soon background work first looks up an unsettled call.
	client, err := payonce.New(payonce.RequestPath(payonce.Config{Provider: psp, Store: store, Logger: log,
		CheckInterval: envDuration("PAYONCE_CHECK_INTERVAL")}))
	if err != nil {
		return err
	}
	// The Reconciler sends what the request path left pending, looks up
	// what it left unknown, and takes over operations whose process died
	// (their lease runs out): without it a 202 would be a broken promise.
	// The feed consumer applies each settlement to the order in the
	// transaction that moves its cursor (payonce_feed_consumers): exactly
	// once across crashes and replicas. Webhooks settle operations as soon
	// as Stripe knows (every delivery is refused without a secret).
	rec, errRec := payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{client},
		Logger: log, Interval: envDuration("PAYONCE_RECONCILE_INTERVAL")})
	feed, errFeed := ledgerpg.NewConsumer(store, "orders", applyFeedEntry,
		ledger.ConsumerOptions{Poll: envDuration("FEED_POLL_INTERVAL"), Logger: log})
	webhook, errWebhook := client.WebhookHandler(payonce.WebhookOptions{})
	if err := errors.Join(errRec, errFeed, errWebhook); err != nil {
		return err
	}

	s := &service{pool: pool, store: store, client: client, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", s.createOrder)
	mux.HandleFunc("GET /orders/{id}", s.getOrder)
	mux.HandleFunc("POST /orders/{id}/refunds", s.refundOrder)
	mux.Handle("POST /webhooks/stripe", webhook)

	ln, err := net.Listen("tcp", envOr("ADDR", "127.0.0.1:8080"))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	// Background work runs under its own context: it must outlive ctx
	// (cancelled by the signal) until the handlers have drained.
	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = rec.Run(bg) })  // nil on a normal stop; failed passes are logged and retried
	wg.Go(func() { _ = feed.Run(bg) }) // the same, then a final pass over what committed
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", "addr", "http://"+ln.Addr().String())

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	// Shutdown order: stop accepting requests and drain the handlers that
	// are inside Charge or Refund; then stop the Reconciler, which gives
	// back the leases of operations it claimed but did not start, so that
	// another replica takes them at once, and the feed consumer, which
	// applies what committed until then. A SIGKILL skips all of this and
	// loses nothing: every step is in the ledger.
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = errors.Join(err, srv.Shutdown(sctx))
	stopBackground()
	wg.Wait()
	return err
}

// migrate creates the service's own tables. A real service runs its
// migration tool here; payonce's tables come from store.Migrate.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	_, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()+`;
CREATE TABLE IF NOT EXISTS orders (
	id             text PRIMARY KEY,
	amount         bigint NOT NULL,
	currency       text NOT NULL,
	payment_method text NOT NULL,
	state          text NOT NULL DEFAULT 'pending', -- pending, paid, failed, review: written by the feed consumer
	settled        int NOT NULL DEFAULT 0,          -- how many times the consumer settled it (paid or failed); must stay <= 1
	created_at     timestamptz NOT NULL DEFAULT now()
);
-- A client's refund request (its Idempotency-Key) and the refund number
-- it was given: a retry with the same key finds its number again instead
-- of taking the next one, so it cannot refund twice.
CREATE TABLE IF NOT EXISTS refund_requests (
	order_id   text NOT NULL REFERENCES orders (id),
	request_id text NOT NULL,
	refund_seq int NOT NULL,
	PRIMARY KEY (order_id, request_id),
	UNIQUE (order_id, refund_seq)
);`)
	return err
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// envDuration reads a duration such as "500ms"; unset or invalid gives 0:
// payonce's default.
func envDuration(name string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(name))
	return d
}
