package payonce_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// The identity a Client records for the second refund of order 42 is
// {OrderID, RefundSeq in decimal}: an Identity built that way gives the
// operation's id, and Client.Status finds the refund by the same business
// ids, from the ledger alone.
func ExampleClient_Status() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "payonce-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	store, err := ledgersqlite.Open(filepath.Join(dir, "payonce.db"), ledgersqlite.Config{})
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
	client, err := payonce.New(payonce.Config{Provider: psp, Store: store})
	if err != nil {
		fmt.Println(err)
		return
	}

	if _, err := client.Charge(ctx, payonce.ChargeParams{OrderID: "order-42", Amount: 1999, Currency: "USD", PaymentMethod: "pm_card_visa"}); err != nil {
		fmt.Println(err)
		return
	}
	for seq := 1; seq <= 2; seq++ {
		if _, err := client.Refund(ctx, payonce.RefundParams{OrderID: "order-42", RefundSeq: seq, Amount: 500, Currency: "USD"}); err != nil {
			fmt.Println(err)
			return
		}
	}

	id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindRefund, References: []string{"order-42", "2"}}.OperationID()
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.Status(ctx, payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "order-42", RefundSeq: 2})
	fmt.Println(id)
	fmt.Println(res.OperationID == id, res.Status, err)

	_, err = client.Status(ctx, payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "order-42", RefundSeq: 3})
	fmt.Println(err, payonce.HTTPStatus(err))
	// Output:
	// 60c5fcb7-e8cf-58b7-b323-778fd9c130fd
	// true succeeded <nil>
	// ledger: operation not found: no refund of order "order-42" is recorded 404
}
