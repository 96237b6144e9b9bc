package payonce_test

import (
	"context"
	"fmt"

	"github.com/payonce/payonce"
)

// Refundable says from the ledger how much of an order's payment can still
// be refunded and which RefundSeq comes next; a refund of more is refused
// before anything is recorded or sent. In a service, read it and prepare
// the refund inside the transaction that locks the order (RefundableTx and
// PrepareRefundTx with the store's ReaderTx(tx)), so that two refunds of
// one order are never checked at once.
func ExampleClient_Refundable() {
	ctx := context.Background()
	env := newExampleEnv("")
	defer env.Close()
	client, err := payonce.New(env.Config)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.Charge(ctx, payonce.ChargeParams{OrderID: "order-7", Amount: 5000, Currency: "USD", PaymentMethod: "pm_card_visa"}); err != nil {
		fmt.Println(err)
		return
	}
	r, err := client.Refundable(ctx, "order-7")
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.Refund(ctx, payonce.RefundParams{OrderID: "order-7", RefundSeq: r.NextSeq, Amount: 1500, Currency: "USD"}); err != nil {
		fmt.Println(err)
		return
	}
	r, err = client.Refundable(ctx, "order-7")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("captured %d, refunded %d, remaining %d, next refund #%d\n", r.Captured, r.Refunded, r.Remaining, r.NextSeq)

	_, err = client.Refund(ctx, payonce.RefundParams{OrderID: "order-7", RefundSeq: r.NextSeq, Amount: 4000, Currency: "USD"})
	fmt.Println(payonce.HTTPStatus(err), err)
	// Output:
	// captured 5000, refunded 1500, remaining 3500, next refund #2
	// 400 payonce: invalid Amount: asks for 4000 but at most 3500 USD of order "order-7" can still be refunded: captured 5000, refunded 1500, 0 in refunds not settled yet (open)
}
