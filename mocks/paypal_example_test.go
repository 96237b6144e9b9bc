package mocks_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/payonce/payonce/mocks"
)

// A PayPal order paid with a saved card, whose answer is lost after the
// money moved, then resent with the same PayPal-Request-Id: PayPal answers
// the order's latest status with 200 instead of 201, and the truth report
// shows one charge for the operation.
func ExampleNewPayPal() {
	f := mocks.NewPayPal(mocks.PayPalOptions{})
	defer f.Close()
	f.Script(mocks.Match{Method: "POST", Path: "/v2/checkout/orders"}, mocks.FaultDropAfterProcessing)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	// An access token: Basic client_id:client_secret, client credentials.
	req, _ := http.NewRequest("POST", f.URL()+"/v1/oauth2/token", strings.NewReader("grant_type=client_credentials"))
	req.SetBasicAuth(f.ClientID(), f.ClientSecret())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		panic(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()

	send := func() (*http.Response, error) {
		body := `{"intent":"CAPTURE","purchase_units":[{"amount":{"currency_code":"USD","value":"10.00"},` +
			`"custom_id":"op-42","invoice_id":"op-42-key"}],"payment_source":{"card":{"vault_id":"vault_approved"}}}`
		req, _ := http.NewRequest("POST", f.URL()+"/v2/checkout/orders", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Prefer", "return=representation")
		req.Header.Set("PayPal-Request-Id", "op-42-key")
		return hc.Do(req)
	}
	_, err = send()
	fmt.Println("first attempt failed:", err != nil)
	resp, err = send()
	if err != nil {
		panic(err)
	}
	var order struct {
		Status string `json:"status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&order)
	resp.Body.Close()
	fmt.Println("resend:", resp.StatusCode, order.Status)
	fmt.Println("charges for op-42:", f.Truth().ChargesByReference()["op-42"])
	// Output:
	// first attempt failed: true
	// resend: 200 COMPLETED
	// charges for op-42: 1
}
