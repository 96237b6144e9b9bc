package payonce_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// A charge with the embedded SQLite ledger, against a fake Stripe served on
// 127.0.0.1 (package mocks). In production the ledger is usually
// PostgreSQL (ledgerpg) and the adapter gets the real key and no BaseURL.
// Calling Charge again with the same OrderID, in any process, returns the
// recorded result or continues the same operation under the same key: it
// never charges twice.
func ExampleClient_Charge() {
	sandbox := newSandbox() // a temporary directory, and a fake Stripe on 127.0.0.1
	defer sandbox.Close()
	ctx := context.Background()
	store, _ := ledgersqlite.Open(sandbox.Path("payonce.db"), ledgersqlite.Config{}) // or ledgerpg.New(pool, ledgerpg.Config{})
	defer store.Close()
	_ = store.Migrate(ctx)
	psp, _ := stripe.New(stripe.Config{APIKey: sandbox.APIKey, BaseURL: sandbox.URL}) // for real: APIKey: os.Getenv("STRIPE_API_KEY")
	client, _ := payonce.New(payonce.Config{Provider: psp, Store: store})

	res, err := client.Charge(ctx, payonce.ChargeParams{
		OrderID: "order-42", Amount: 1999, Currency: "USD", PaymentMethod: "pm_card_visa",
	})
	switch {
	case err == nil: // res.ProviderRef == "pi_..."
		fmt.Println(res.Status, "attempts:", res.Attempts)
	case errors.Is(err, payonce.ErrDeclined): // final: tell the customer (errors.As *DeclinedError for codes)
	case errors.Is(err, payonce.ErrOutcomeUnknown): // "processing": never retry with new ids; reconciliation settles it
	case errors.Is(err, payonce.ErrProviderUnavailable): // nothing sent; recorded as pending, sent later
	case errors.Is(err, payonce.ErrManualReview): // an operator decides; automation sends nothing more
	}
	// Output:
	// succeeded attempts: 1
}

// sandbox is a temporary directory for the ledger's file and a fake Stripe
// (package mocks) on 127.0.0.1 with the test API key it accepts.
type sandbox struct {
	dir         string
	fake        *mocks.Stripe
	APIKey, URL string
}

func newSandbox() *sandbox {
	dir, err := os.MkdirTemp("", "payonce-example")
	if err != nil {
		panic(err)
	}
	fake := mocks.NewStripe(mocks.StripeOptions{})
	return &sandbox{dir: dir, fake: fake, APIKey: fake.APIKey(), URL: fake.URL()}
}

// Path is the path of a file named name in the temporary directory.
func (s *sandbox) Path(name string) string { return filepath.Join(s.dir, name) }

// Close stops the fake and removes the directory.
func (s *sandbox) Close() {
	s.fake.Close()
	_ = os.RemoveAll(s.dir)
}
