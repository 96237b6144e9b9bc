package checkout_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/checkout"
)

// testKey is a fake secret key; tests check it never leaks.
const testKey = "sk_sbox_fakekey4payoncetests0123456789abcdef"

const base = "https://api.checkout.com"

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle = testkit.Adapter[*checkout.Provider]

// setup returns a Provider and an *http.Client whose own mock transport
// answers its requests (testkit.Setup).
func setup(t *testing.T, mod ...func(*checkout.Config)) bundle {
	t.Helper()
	return testkit.Setup(t, checkout.New, checkout.Config{SecretKey: testKey, Now: func() time.Time { return testNow }}, mod...)
}

// wire is how the adapter's requests look to Checkout.com.
var wire = testkit.Wire{
	Authorization: "Bearer " + testKey,
	ContentType:   "application/json",
	KeyHeader:     "Cko-Idempotency-Key",
	Bad:           func() *http.Response { return respond(400, `{"error_type":"bad lookup request"}`) },
}

func chargeReq() payonce.SendRequest {
	return testkit.ChargeRequest(1999, "USD", "src_nwd3m4in3hkuddfpjsaevunhdy", "cus_udst2tfldj6upmye2reztkmm4i", map[string]string{"order_id": "42"})
}

var withKind = testkit.WithKind

// respond answers like Checkout.com: JSON with a Cko-Request-Id.
func respond(status int, body string) *http.Response {
	r := testkit.Respond(status, body, "Cko-Request-Id", "0f5e3a2c-1b2d-4c5e-8f9a-0b1c2d3e4f50")
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}
