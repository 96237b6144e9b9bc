package payonce_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// exampleEnv is a Config on an SQLite ledger in a temporary directory and a
// fake Stripe (package mocks) on 127.0.0.1, which delivers its signed events
// to webhookURL when one is given: what the examples share.
type exampleEnv struct {
	payonce.Config
	Store *ledgersqlite.Store
	dir   string
	fake  *mocks.Stripe
}

// exampleWebhookSecret is the webhook endpoint's signing secret.
const exampleWebhookSecret = "whsec_example"

func newExampleEnv(webhookURL string) *exampleEnv {
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
	var opts mocks.StripeOptions
	cfg := stripe.Config{}
	if webhookURL != "" {
		opts.Webhooks = mocks.WebhookDelivery{URL: webhookURL, Secret: exampleWebhookSecret}
		cfg.WebhookSecret = exampleWebhookSecret
	}
	fake := mocks.NewStripe(opts)
	cfg.APIKey, cfg.BaseURL = fake.APIKey(), fake.URL()
	psp, err := stripe.New(cfg)
	if err != nil {
		panic(err)
	}
	return &exampleEnv{Store: store, dir: dir, fake: fake, Config: payonce.Config{Provider: psp, Store: store,
		// A fresh connection per request, so that a dropped answer is seen
		// as one rather than resent by net/http.
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}}
}

// LoseNextAnswer makes the fake charge the card on the next payment request
// and drop the connection before answering, then fail the lookup that
// follows with a proxy's 502.
func (e *exampleEnv) LoseNextAnswer() {
	e.fake.Script(mocks.Match{Method: "POST", Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing)
	// Both reads of the lookup: the list of the attempt's window, and the
	// search it falls back to when the list fails.
	e.fake.Script(mocks.Match{Method: "GET"}, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502)
}

// WaitForWebhooks returns once the fake has delivered every event so far.
func (e *exampleEnv) WaitForWebhooks() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.fake.FlushWebhooks(ctx); err != nil {
		panic(err)
	}
}

func (e *exampleEnv) Close() {
	e.fake.Close()
	_ = e.Store.Close()
	_ = os.RemoveAll(e.dir)
}
