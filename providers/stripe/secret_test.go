package stripe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/stripe"
)

// TestAPIKeyNeverLeaks checks every place a key could escape: formatting of
// Config and Provider, slog, errors, Outcomes and LookupResults, even when
// Stripe echoes the key in its messages.
func TestAPIKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *stripe.Config) { c.BaseURL = "https://api.stripe.com/"; c.APIVersion = "2024-06-20" })
	cfg := stripe.Config{APIKey: testKey, BaseURL: "https://user:" + testKey + "@example.com"}

	texts := testkit.Printed(cfg, &cfg, b.p, *b.p)

	// Errors from New and NewRequest.
	_, err := stripe.New(stripe.Config{APIKey: testKey, BaseURL: "ftp://" + testKey})
	texts = append(texts, err.Error())
	_, err = stripe.New(stripe.Config{APIKey: testKey + " "})
	texts = append(texts, err.Error())
	_, err = b.p.NewRequest(context.Background(), withKind(chargeReq(), payonce.KindCapture, 0, ""))
	texts = append(texts, err.Error())

	// Stripe echoing the key (whole or masked) in every kind of answer.
	echo := `{"error":{"type":"invalid_request_error","code":"x","message":"Invalid API Key provided: ` + testKey + `"}}`
	for _, status := range []int{400, 401, 402, 403, 404, 409, 429, 500, 503} {
		o := b.p.Classify(chargeReq(), status, http.Header{"Request-Id": {"req_1"}}, []byte(echo))
		j, _ := json.Marshal(o)
		texts = append(texts, fmt.Sprintf("%+v", o), string(j))
	}
	lpe := `{"id":"pi_1","object":"payment_intent","status":"requires_payment_method","last_payment_error":{"code":"x","message":"` + testKey + `"}}`
	o := b.p.Classify(chargeReq(), 200, http.Header{}, []byte(lpe))
	texts = append(texts, fmt.Sprintf("%+v", o))

	b.mt.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/pi_1", func(*http.Request) (*http.Response, error) {
		return respond(200, lpe), nil
	})
	b.mt.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/pi_err", func(*http.Request) (*http.Response, error) {
		return respond(500, echo), nil
	})
	res, err := b.p.Lookup(context.Background(), b.hc, lookupQuery(payonce.KindCharge, "", "pi_1"))
	require.NoError(t, err)
	texts = append(texts, fmt.Sprintf("%+v", res))
	_, err = b.p.Lookup(context.Background(), b.hc, lookupQuery(payonce.KindCharge, "", "pi_err"))
	require.Error(t, err)
	texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))

	secretPart := strings.TrimPrefix(testKey, "sk_test_")
	for _, s := range texts {
		require.NotContains(t, s, testKey)
		require.NotContains(t, s, secretPart)
	}
	require.Contains(t, fmt.Sprintf("%v", cfg), "[REDACTED]")

	// The key does go where it must: the Authorization header.
	hr, err := b.p.NewRequest(context.Background(), chargeReq())
	require.NoError(t, err)
	require.Equal(t, "Bearer "+testKey, hr.Header.Get("Authorization"))
}
