package paypal_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/paypal"
)

// Fake credentials; tests check they never leak.
const (
	testClientID = "AZtestclientid4payoncetests0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH"
	testSecret   = "EKtestsecret4payoncetests0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	testToken    = "A21AAtesttoken4payoncetests0123456789abcdefghijklmnopqrstuvwxyz_-"
)

const base = paypal.DefaultBaseURL

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a driven clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type bundle = testkit.Adapter[*paypal.Provider]

// setup returns a Provider on a clock at testNow and an *http.Client whose
// own mock transport answers its requests, the token endpoint included
// (testToken, 9 h).
func setup(t *testing.T, mod ...func(*paypal.Config)) bundle {
	t.Helper()
	b := testkit.Setup(t, paypal.New, paypal.Config{ClientID: testClientID, ClientSecret: testSecret, Now: func() time.Time { return testNow }}, mod...)
	serveToken(b.MT, testToken, 32400)
	return b
}

// serveToken answers the token endpoint with tok, valid for secs, when the
// request carries the client credentials.
func serveToken(mt *httpmock.MockTransport, tok string, secs int) {
	mt.RegisterResponder(http.MethodPost, base+"/v1/oauth2/token", func(req *http.Request) (*http.Response, error) {
		u, pw, ok := req.BasicAuth()
		if !ok || u != testClientID || pw != testSecret || req.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			return respond(401, `{"error":"invalid_client","error_description":"Client Authentication failed"}`), nil
		}
		return respond(200, fmt.Sprintf(`{"scope":"https://uri.paypal.com/services/payments/payment","access_token":%q,"token_type":"Bearer","app_id":"APP-80W284485P519543T","expires_in":%d,"nonce":"n"}`, tok, secs)), nil
	})
}

// wire is how the adapter's requests look to PayPal.
var wire = testkit.Wire{
	Authorization: "Bearer " + testToken,
	ContentType:   "application/json",
	KeyHeader:     "PayPal-Request-Id",
	Bad: func() *http.Response {
		return respond(400, `{"name":"INVALID_REQUEST","message":"bad lookup request","debug_id":"d0"}`)
	},
}

// respond answers like PayPal: JSON with a Paypal-Debug-Id.
func respond(status int, body string) *http.Response {
	r := testkit.Respond(status, body, "Paypal-Debug-Id", "f1a2b3c4d5e6")
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

const opID = testkit.OpID

// vaultCharge is a charge of USD 19.99 with a saved card.
func vaultCharge() payonce.SendRequest {
	return testkit.ChargeRequest(1999, "USD", "card:7ts2yx1yv5", "", nil)
}

// orderCharge is a charge that captures order 5O190127TN364715T.
func orderCharge() payonce.SendRequest {
	return testkit.ChargeRequest(1999, "USD", "order:5O190127TN364715T", "", nil)
}

var withKind = testkit.WithKind

// authorize builds and authorizes r's request (the token through b.HC).
func authorize(t *testing.T, b bundle, r payonce.SendRequest) *http.Request {
	t.Helper()
	hr, err := b.P.NewRequest(context.Background(), r)
	require.NoError(t, err)
	require.NoError(t, b.P.AuthorizeRequest(context.Background(), b.HC, hr))
	return hr
}

// capJSON is a capture object.
func capJSON(id, status, value, custom, invoice string) string {
	return fmt.Sprintf(`{"id":%q,"status":%q,"amount":{"currency_code":"USD","value":%q},"custom_id":%q,"invoice_id":%q,"final_capture":true}`,
		id, status, value, custom, invoice)
}

// orderJSON is an order with one purchase unit of USD 19.99 carrying
// custom and invoice, and the payments JSON (an object, or "").
func orderJSON(id, status, intent, custom, invoice, payments string) string {
	pays := ""
	if payments != "" {
		pays = `,"payments":` + payments
	}
	return fmt.Sprintf(`{"id":%q,"status":%q,"intent":%q,"purchase_units":[{"reference_id":"default","amount":{"currency_code":"USD","value":"19.99"},"custom_id":%q,"invoice_id":%q%s}]}`,
		id, status, intent, custom, invoice, pays)
}

func ppErr(name, issue, desc string) string {
	return fmt.Sprintf(`{"name":%q,"message":"The requested action could not be performed.","debug_id":"b1c2d3","details":[{"issue":%q,"description":%q}]}`, name, issue, desc)
}
