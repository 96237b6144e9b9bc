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
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// A charge made while the customer waits: RequestPath bounds the call (one
// attempt, one lookup) and HTTPStatus turns its result into the answer.
// What the call could not settle is answered 202 and left to a running
// Reconciler; the customer's page polls Client.Status.
func ExampleRequestPath() {
	env := newCheckoutEnv()
	defer env.Close()
	client, err := payonce.New(payonce.RequestPath(env.Config)) // Config{Provider: psp, Store: store}
	if err != nil {
		fmt.Println(err)
		return
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		res, err := client.Charge(ctx, payonce.ChargeParams{OrderID: r.PathValue("id"),
			Amount: 1999, Currency: "USD", PaymentMethod: r.FormValue("payment_method")})
		w.WriteHeader(payonce.HTTPStatus(err))
		fmt.Fprintf(w, "%s replayed=%v\n", res.Status, res.Replayed)
	})

	pay := func(order, method string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("POST", "/orders/"+order+"/pay?payment_method="+method, nil))
		fmt.Printf("%s: %d %s", order, rec.Code, rec.Body)
	}
	pay("order-1", "pm_card_visa")
	pay("order-1", "pm_card_visa") // the customer pressed twice: answered from the ledger
	pay("order-2", "pm_card_chargeDeclined")
	env.LoseNextAnswer() // the card is charged, the answer and the lookup fail
	pay("order-3", "pm_card_visa")
	// Output:
	// order-1: 200 succeeded replayed=false
	// order-1: 200 succeeded replayed=true
	// order-2: 402 failed replayed=false
	// order-3: 202 unknown replayed=false
}

// checkoutEnv is a Config on an SQLite ledger in a temporary directory and
// a fake Stripe (package mocks) on 127.0.0.1.
type checkoutEnv struct {
	payonce.Config
	dir   string
	store *ledgersqlite.Store
	fake  *mocks.Stripe
}

func newCheckoutEnv() *checkoutEnv {
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
	return &checkoutEnv{dir: dir, store: store, fake: fake, Config: payonce.Config{Provider: psp, Store: store,
		// A fresh connection per request, so that a dropped answer is seen
		// as one rather than resent by net/http.
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}}
}

// LoseNextAnswer makes the fake charge the card on the next payment request
// and drop the connection before answering, then fail the lookup that
// follows with a proxy's 502.
func (e *checkoutEnv) LoseNextAnswer() {
	e.fake.Script(mocks.Match{Method: "POST", Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing)
	e.fake.Script(mocks.Match{Method: "GET"}, mocks.FaultGatewayBefore502)
}

func (e *checkoutEnv) Close() {
	e.fake.Close()
	_ = e.store.Close()
	_ = os.RemoveAll(e.dir)
}
