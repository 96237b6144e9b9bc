package payonce_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
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

// reviewEnv is a Client on an SQLite ledger in a temporary directory and a
// fake Stripe (package mocks) on 127.0.0.1 that delivers its signed events
// to the client's WebhookHandler, served on 127.0.0.1.
type reviewEnv struct {
	Client *payonce.Client
	Store  *ledgersqlite.Store
	dir    string
	srv    *httptest.Server
	fake   *mocks.Stripe
}

func newReviewEnv() *reviewEnv {
	const secret = "whsec_example" // the endpoint's signing secret
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
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
	fake := mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: srv.URL + "/webhooks/stripe", Secret: secret}}})
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(), WebhookSecret: secret})
	if err != nil {
		panic(err)
	}
	client, err := payonce.New(payonce.Config{Provider: psp, Store: store})
	if err != nil {
		panic(err)
	}
	hooks, err := client.WebhookHandler(payonce.WebhookOptions{})
	if err != nil {
		panic(err)
	}
	mux.Handle("/webhooks/stripe", hooks)
	return &reviewEnv{Client: client, Store: store, dir: dir, srv: srv, fake: fake}
}

// FailRefund makes the refund with the provider's id fail after it
// succeeded, as at Stripe when the card was closed, and returns once its
// events (and every earlier one) have been delivered.
func (e *reviewEnv) FailRefund(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.fake.FlushWebhooks(ctx)
	if err == nil {
		err = e.fake.FailRefund(id, "lost_or_stolen_card")
	}
	if err == nil {
		err = e.fake.FlushWebhooks(ctx)
	}
	if err != nil {
		panic(err)
	}
}

func (e *reviewEnv) Close() {
	e.fake.Close()
	e.srv.Close()
	_ = e.Store.Close()
	_ = os.RemoveAll(e.dir)
}
