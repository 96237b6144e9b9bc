package stripe_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/testutil"
	"github.com/payonce/payonce/providers/stripe"
)

// testKey is a fake secret key; tests check it never leaks.
const testKey = "sk_test_51FAKEkeyForPayonceTests0123456789abcdefXYZ"

const base = "https://api.stripe.com"

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle struct {
	p  *stripe.Provider
	mt *httpmock.MockTransport
	hc *http.Client
}

// setup returns a Provider and an *http.Client whose own mock transport
// answers its requests (no global transport is touched).
func setup(t *testing.T, mod ...func(*stripe.Config)) bundle {
	t.Helper()
	cfg := stripe.Config{APIKey: testKey, Now: func() time.Time { return testNow }}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := stripe.New(cfg)
	require.NoError(t, err)
	mt := httpmock.NewMockTransport()
	return bundle{p: p, mt: mt, hc: &http.Client{Transport: mt}}
}

func chargeReq() payonce.SendRequest {
	return payonce.SendRequest{
		OperationID: "0b6f3e1c-2c4d-5e6f-8a9b-0c1d2e3f4a5b",
		Key:         "0b6f3e1c-2c4d-5e6f-8a9b-0c1d2e3f4a5b",
		Request: payonce.Request{
			Kind:          payonce.KindCharge,
			Amount:        1999,
			Currency:      "EUR",
			References:    []string{"order", "42"},
			PaymentMethod: "pm_card_visa",
			Customer:      "cus_123",
			Description:   "Order 42",
			Metadata:      map[string]string{"order_id": "42", "shop": "main"},
		},
	}
}

var withKind = testutil.WithKind

var respond = testutil.Respond
