package payonce_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// The provider's webhooks, received on the service's own mux: the answer to
// a charge is lost and so is the lookup after it, and the provider's signed
// event settles the operation instead. The adapter verifies each delivery
// with the endpoint's signing secret (stripe.Config.WebhookSecret) before
// anything is recorded; each event is recorded once, however often it is
// delivered.
func ExampleClient_WebhookHandler() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux) // the service's HTTP server
	defer srv.Close()
	env := newExampleEnv(srv.URL + "/webhooks/stripe")
	defer env.Close()
	ctx := context.Background()

	client, err := payonce.New(payonce.RequestPath(env.Config))
	if err != nil {
		panic(err)
	}
	hooks, err := client.WebhookHandler(payonce.WebhookOptions{})
	if err != nil {
		panic(err) // the adapter cannot read webhooks
	}
	mux.Handle("/webhooks/stripe", hooks)

	env.LoseNextAnswer()
	// ErrOutcomeUnknown (answered 202), or nil when the event came first.
	_, _ = client.Charge(ctx, payonce.ChargeParams{OrderID: "order-42", Amount: 1999, Currency: "USD",
		PaymentMethod: "pm_card_visa"})
	env.WaitForWebhooks()

	res, err := client.Status(ctx, payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "order-42"})
	fmt.Println(res.Status, err)
	settled, err := env.Store.ListWebhooks(ctx, ledger.InboxFilter{Disposition: ledger.WebhookSettled})
	if err != nil {
		panic(err)
	}
	for _, e := range settled {
		fmt.Println("settled by", e.Type, "->", e.Outcomes[0].To)
	}
	// Output:
	// succeeded <nil>
	// settled by payment_intent.succeeded -> succeeded
}
