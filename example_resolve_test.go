package payonce_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// An operator resolves an operation in review. A refund succeeded, then,
// days later, failed at the provider (the card was closed): the provider's
// event contradicts the ledger, so the refund goes to review, where no
// automation changes it again. The operator refunds the customer another way
// and records the refund as failed, with their name and a note kept as an
// audit entry. (ListReview is what `payonce review list` shows.)
func ExampleClient_Resolve() {
	env := newReviewEnv() // a client whose webhook handler receives a fake Stripe's events
	defer env.Close()
	ctx := context.Background()
	client := env.Client

	if _, err := client.Charge(ctx, payonce.ChargeParams{OrderID: "order-42", Amount: 1999, Currency: "USD",
		PaymentMethod: "pm_card_visa"}); err != nil {
		panic(err)
	}
	refund, err := client.Refund(ctx, payonce.RefundParams{OrderID: "order-42", RefundSeq: 1, Amount: 1999, Currency: "USD"})
	fmt.Println("refund:", refund.Status, err)
	env.FailRefund(refund.ProviderRef) // refund.failed is delivered to the webhook handler

	review, err := env.Store.ListReview(ctx, ledger.ReviewFilter{})
	if err != nil {
		panic(err)
	}
	for _, op := range review {
		fmt.Println("in review:", op.Kind, op.References, op.ReviewReason)
	}

	op, err := client.Resolve(ctx, payonce.ResolveParams{OperationID: review[0].ID, Outcome: ledger.ResolveFailed,
		Actor: "alice", Note: "card closed; refunded by bank transfer"})
	fmt.Println("resolved:", op.Status, err)
	// Output:
	// refund: succeeded <nil>
	// in review: refund [order-42 1] provider reported a change after settlement: refund.updated (lost_or_stolen_card: stripe: refund failed (lost_or_stolen_card))
	// resolved: failed <nil>
}

// reviewEnv is an exampleEnv whose fake Stripe delivers its signed events
// to the Client's WebhookHandler, served on 127.0.0.1.
type reviewEnv struct {
	*exampleEnv
	Client *payonce.Client
	srv    *httptest.Server
}

func newReviewEnv() *reviewEnv {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	env := newExampleEnv(srv.URL + "/webhooks/stripe")
	client, err := payonce.New(env.Config)
	if err != nil {
		panic(err)
	}
	hooks, err := client.WebhookHandler(payonce.WebhookOptions{})
	if err != nil {
		panic(err)
	}
	mux.Handle("/webhooks/stripe", hooks)
	return &reviewEnv{exampleEnv: env, Client: client, srv: srv}
}

// FailRefund makes the refund with the provider's id fail after it
// succeeded, as at Stripe when the card was closed, and returns once its
// events (and every earlier one) have been delivered.
func (e *reviewEnv) FailRefund(id string) {
	e.WaitForWebhooks()
	if err := e.fake.FailRefund(id, "lost_or_stolen_card"); err != nil {
		panic(err)
	}
	e.WaitForWebhooks()
}

func (e *reviewEnv) Close() {
	e.exampleEnv.Close()
	e.srv.Close()
}
