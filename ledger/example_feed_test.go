package ledger_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// A settlement-feed consumer: it learns every settlement once, in order,
// across restarts, by storing the cursor of the last entry it processed and
// reading after it. Store the cursor in the same transaction as what the
// entry changes in your own data (the order marked paid), so that a crash
// between the two neither skips an entry nor applies one twice.
func ExampleStore_Feed() {
	env := newFeedEnv() // a Client on an SQLite ledger, against a fake Stripe
	defer env.Close()
	ctx := context.Background()
	store := env.Store

	consume := func(cursor ledger.FeedCursor) ledger.FeedCursor {
		for {
			entries, err := store.Feed(ctx, ledger.FeedParams{After: cursor, Limit: 100,
				Statuses: []ledger.Status{ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview}})
			if err != nil {
				panic(err)
			}
			if len(entries) == 0 {
				return cursor // caught up: a service polls again later
			}
			for _, e := range entries {
				// In one transaction: update the order (e.References[0]) and
				// store e.Cursor.
				fmt.Println(e.Kind, e.References, e.From, "->", e.To)
				cursor = e.Cursor
			}
		}
	}

	env.Charge("order-1", "pm_card_visa")
	env.Charge("order-2", "pm_card_chargeDeclined")
	var cursor ledger.FeedCursor // the zero cursor reads from the start
	cursor = consume(cursor)

	env.Charge("order-3", "pm_card_visa")
	fmt.Println("after a restart, from the stored cursor:")
	consume(cursor)
	// Output:
	// charge [order-1] in_flight -> succeeded
	// charge [order-2] in_flight -> failed
	// after a restart, from the stored cursor:
	// charge [order-3] in_flight -> succeeded
}

// feedEnv is a payonce Client on an SQLite ledger in a temporary directory,
// charging through a fake Stripe (package mocks) on 127.0.0.1.
type feedEnv struct {
	Store  *ledgersqlite.Store
	client *payonce.Client
	dir    string
	fake   *mocks.Stripe
}

func newFeedEnv() *feedEnv {
	dir, err := os.MkdirTemp("", "payonce-example")
	if err != nil {
		panic(err)
	}
	store, err := ledgersqlite.Open(filepath.Join(dir, "payonce.db"), ledgersqlite.Config{})
	if err == nil {
		err = store.Migrate(context.Background())
	}
	if err != nil {
		panic(err)
	}
	fake := mocks.NewStripe(mocks.StripeOptions{})
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL()})
	if err != nil {
		panic(err)
	}
	client, err := payonce.New(payonce.Config{Provider: psp, Store: store})
	if err != nil {
		panic(err)
	}
	return &feedEnv{Store: store, client: client, dir: dir, fake: fake}
}

// Charge charges 19.99 USD for the order with the payment method; a decline
// is an outcome like any other here.
func (e *feedEnv) Charge(orderID, method string) {
	_, _ = e.client.Charge(context.Background(), payonce.ChargeParams{OrderID: orderID, Amount: 1999,
		Currency: "USD", PaymentMethod: method})
}

func (e *feedEnv) Close() {
	e.fake.Close()
	_ = e.Store.Close()
	_ = os.RemoveAll(e.dir)
}
