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
	env := newWebhookEnv(srv.URL + "/webhooks/stripe")
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

// webhookEnv is a Config on an SQLite ledger in a temporary directory and a
// fake Stripe (package mocks) on 127.0.0.1 that delivers its signed events
// to url.
type webhookEnv struct {
	payonce.Config
	Store *ledgersqlite.Store
	dir   string
	fake  *mocks.Stripe
}

func newWebhookEnv(url string) *webhookEnv {
	const secret = "whsec_example" // the endpoint's signing secret
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
	fake := mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: url, Secret: secret}}})
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(), WebhookSecret: secret})
	if err != nil {
		panic(err)
	}
	return &webhookEnv{Store: store, dir: dir, fake: fake, Config: payonce.Config{Provider: psp, Store: store,
		// A fresh connection per request, so that a dropped answer is seen
		// as one rather than resent by net/http.
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}}
}

// LoseNextAnswer makes the fake charge the card on the next payment request
// and drop the connection before answering, then fail the lookup that
// follows with a proxy's 502.
func (e *webhookEnv) LoseNextAnswer() {
	e.fake.Script(mocks.Match{Method: "POST", Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing)
	e.fake.Script(mocks.Match{Method: "GET"}, mocks.FaultGatewayBefore502)
}

// WaitForWebhooks returns once the fake has delivered every event so far.
func (e *webhookEnv) WaitForWebhooks() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.fake.FlushWebhooks(ctx); err != nil {
		panic(err)
	}
}

func (e *webhookEnv) Close() {
	e.fake.Close()
	_ = e.Store.Close()
	_ = os.RemoveAll(e.dir)
}
