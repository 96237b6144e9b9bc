package mocks_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/payonce/payonce/mocks"
)

// A charge whose answer is lost after the card was charged, then resent with
// the same idempotency key: Stripe replays the first answer and the truth
// report shows one charge.
func Example() {
	f := mocks.NewStripe(mocks.StripeOptions{})
	defer f.Close()
	f.Script(mocks.Match{Method: "POST", Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing)

	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	send := func() (*http.Response, error) {
		form := url.Values{"amount": {"1000"}, "currency": {"usd"}, "confirm": {"true"},
			"payment_method": {"pm_card_visa"}, "metadata[order]": {"42"}}
		req, _ := http.NewRequest("POST", f.URL()+"/v1/payment_intents", strings.NewReader(form.Encode()))
		req.Header.Set("Authorization", "Bearer "+f.APIKey())
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Idempotency-Key", "order-42-charge")
		return hc.Do(req)
	}

	_, err := send()
	fmt.Println("first attempt failed:", err != nil)
	resp, err := send()
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("resend:", resp.StatusCode, "replayed:", resp.Header.Get("Idempotent-Replayed"))
	fmt.Println("charges for order 42:", f.Truth().ChargesBy("order")["42"])
	// Output:
	// first attempt failed: true
	// resend: 200 replayed: true
	// charges for order 42: 1
}
