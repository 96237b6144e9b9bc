package riverpayonce_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
	"github.com/payonce/payonce/riverpayonce"
)

// Example wires payonce into a River client on the database at
// DATABASE_URL (it does nothing without one), against a fake Stripe on
// loopback: an order's charge is recorded and nudged in the order's
// transaction, and the reconcile job settles it after the commit.
func Example() {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	// The ledger and River's tables, each migrated by its owner.
	store, err := ledgerpg.New(pool, ledgerpg.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		log.Fatal(err)
	}

	// In production: stripe.Config{APIKey: os.Getenv("STRIPE_API_KEY")}.
	fake := mocks.NewStripe(mocks.StripeOptions{})
	defer fake.Close()
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL()})
	if err != nil {
		log.Fatal(err)
	}
	client, err := payonce.New(payonce.Config{Provider: psp, Store: store})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{client}})
	if err != nil {
		log.Fatal(err)
	}

	workers := river.NewWorkers()
	if err := riverpayonce.AddWorkers(workers, rec); err != nil {
		log.Fatal(err)
	}
	periodic, err := riverpayonce.PeriodicJob(time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	riverClient, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:       map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		Workers:      workers,
		PeriodicJobs: []*river.PeriodicJob{periodic},
	})
	if err != nil {
		log.Fatal(err)
	}
	done, stop := riverClient.Subscribe(river.EventKindJobCompleted)
	defer stop()
	if err := riverClient.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer riverClient.Stop(ctx) //nolint:errcheck // the example ends here

	// An order and its charge commit together, with the nudge.
	op, err := client.PrepareCharge(ctx, payonce.ChargeParams{OrderID: "order-42", Amount: 1999, Currency: "USD", PaymentMethod: "pm_card_visa"})
	if err != nil {
		log.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// ... insert the order in tx ...
	if _, _, err := store.CreateOrGetTx(ctx, tx, op, time.Now()); err != nil {
		log.Fatal(err)
	}
	if err := riverpayonce.InsertNudgeTx(ctx, riverClient, tx); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}

	for ev := range done {
		if ev.Job.Kind == riverpayonce.Kind {
			got, _, err := store.Get(ctx, op.ID)
			if err != nil {
				log.Fatal(err)
			}
			if got.Status.Terminal() {
				fmt.Println("order-42:", got.Status)
				return
			}
		}
	}
}
