package payonce_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/payonce/payonce"
)

// A charge made while the customer waits: RequestPath bounds the call (one
// attempt, one lookup) and HTTPStatus turns its result into the answer.
// What the call could not settle is answered 202 and left to a running
// Reconciler; the customer's page polls Client.Status.
func ExampleRequestPath() {
	env := newExampleEnv("")
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
