// Command quickstart charges through a fake Stripe with payonce on an
// embedded SQLite ledger: a charge, its replay, an answer lost after the
// card was charged, and a decline. No setup, no network beyond loopback.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "payonce-quickstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	store, err := ledgersqlite.Open(filepath.Join(dir, "payonce.db"), ledgersqlite.Config{})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}

	fake := mocks.NewStripe(mocks.StripeOptions{})
	defer fake.Close()
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL()})
	if err != nil {
		return err
	}
	client, err := payonce.New(payonce.Config{
		Provider: psp, Store: store,
		// A fresh connection per request, so a dropped answer is seen as one.
		HTTPClient:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		AttemptTimeout: 2 * time.Second,
	})
	if err != nil {
		return err
	}

	charge := func(order, pm string) {
		res, err := client.Charge(ctx, payonce.ChargeParams{OrderID: order, Amount: 1999, Currency: "USD", PaymentMethod: pm})
		var declined *payonce.DeclinedError
		switch {
		case err == nil:
			fmt.Printf("%-10s %-9s %s (attempts %d, replayed %v)\n", order, res.Status, res.ProviderRef, res.Attempts, res.Replayed)
		case errors.As(err, &declined):
			fmt.Printf("%-10s %-9s %s/%s\n", order, res.Status, declined.Code, declined.DeclineCode)
		default:
			fmt.Printf("%-10s %-9s %v\n", order, res.Status, err)
		}
	}

	charge("order-1", "pm_card_visa")
	charge("order-1", "pm_card_visa") // the same order again: replayed from the ledger

	// The provider charges the card, then the connection drops. payonce
	// looks the payment up instead of charging again.
	fake.Script(mocks.Match{Method: "POST", Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing)
	charge("order-2", "pm_card_visa")

	charge("order-3", "pm_card_chargeDeclined")

	dups := fake.Truth().Duplicates(stripe.MetaOperation)
	fmt.Printf("payment intents at the provider: %d, orders charged twice: %d\n", len(fake.Truth().Payments), len(dups))
	return nil
}
