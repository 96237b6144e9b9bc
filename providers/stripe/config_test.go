package stripe_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/stripe"
)

func TestNew(t *testing.T) {
	t.Parallel()
	testkit.RequireNew(t, stripe.New, "stripe", (*stripe.Provider).SearchLag,
		testkit.NewCase[stripe.Config]{Name: "defaults", Cfg: stripe.Config{APIKey: testKey},
			Info: payonce.ProviderInfo{KeyTTL: 24 * time.Hour, MaxKeyLength: 255, LookupProvesAbsence: true, WebhookRedelivery: 3 * 24 * time.Hour}, Lag: time.Minute},
		testkit.NewCase[stripe.Config]{Name: "overrides", Cfg: stripe.Config{APIKey: testKey, KeyTTL: 30 * 24 * time.Hour, SearchLag: 5 * time.Minute,
			BaseURL: "http://127.0.0.1:12111/"},
			Info: payonce.ProviderInfo{KeyTTL: 30 * 24 * time.Hour, MaxKeyLength: 255, LookupProvesAbsence: true, WebhookRedelivery: 3 * 24 * time.Hour}, Lag: 5 * time.Minute},
	)
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	testkit.RequireConfigErrors(t, stripe.New, []testkit.ConfigCase[stripe.Config]{
		{Name: "no key", Cfg: stripe.Config{}, Field: "stripe.Config.APIKey", Hint: "secret key"},
		{Name: "key with newline", Cfg: stripe.Config{APIKey: testKey + "\n"}, Field: "stripe.Config.APIKey", Hint: "exactly"},
		{Name: "key with space", Cfg: stripe.Config{APIKey: "sk_test_a b"}, Field: "stripe.Config.APIKey", Hint: "exactly"},
		{Name: "relative URL", Cfg: stripe.Config{APIKey: testKey, BaseURL: "api.stripe.com"}, Field: "stripe.Config.BaseURL", Hint: "https://"},
		{Name: "ftp URL", Cfg: stripe.Config{APIKey: testKey, BaseURL: "ftp://api.stripe.com"}, Field: "stripe.Config.BaseURL", Hint: "https://"},
		{Name: "no host", Cfg: stripe.Config{APIKey: testKey, BaseURL: "https:///v1"}, Field: "stripe.Config.BaseURL", Hint: "host"},
		{Name: "unparsable", Cfg: stripe.Config{APIKey: testKey, BaseURL: "https://[::1"}, Field: "stripe.Config.BaseURL", Hint: "valid URL"},
		{Name: "user info", Cfg: stripe.Config{APIKey: testKey, BaseURL: "https://" + testKey + ":@api.stripe.com"}, Field: "stripe.Config.BaseURL", Hint: "user info"},
		{Name: "query", Cfg: stripe.Config{APIKey: testKey, BaseURL: "https://api.stripe.com?x=1"}, Field: "stripe.Config.BaseURL", Hint: "query"},
		{Name: "fragment", Cfg: stripe.Config{APIKey: testKey, BaseURL: "https://api.stripe.com#x"}, Field: "stripe.Config.BaseURL", Hint: "fragment"},
		{Name: "negative TTL", Cfg: stripe.Config{APIKey: testKey, KeyTTL: -time.Second}, Field: "stripe.Config.KeyTTL", Hint: "negative"},
		{Name: "negative lag", Cfg: stripe.Config{APIKey: testKey, SearchLag: -time.Second}, Field: "stripe.Config.SearchLag", Hint: "negative"},
		{Name: "bad version", Cfg: stripe.Config{APIKey: testKey, APIVersion: "2024-06-20\r\nX: y"}, Field: "stripe.Config.APIVersion", Hint: "API version"},
	}, testKey)
}

// TestAPIKeyNeverLeaks checks every place a key could escape: formatting of
// Config and Provider, slog, errors, Outcomes and LookupResults, even when
// Stripe echoes the key in its messages.
func TestAPIKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *stripe.Config) { c.BaseURL = "https://api.stripe.com/"; c.APIVersion = "2024-06-20" })
	cfg := stripe.Config{APIKey: testKey, BaseURL: "https://user:" + testKey + "@example.com"}

	// Errors from New and NewRequest.
	_, errURL := stripe.New(stripe.Config{APIKey: testKey, BaseURL: "ftp://" + testKey})
	_, errKey := stripe.New(stripe.Config{APIKey: testKey + " "})
	_, errReq := b.P.NewRequest(context.Background(), withKind(chargeReq(), payonce.KindCapture, 0, ""))

	// Stripe echoing the key (whole or masked) in every kind of answer.
	echo := `{"error":{"type":"invalid_request_error","code":"x","message":"Invalid API Key provided: ` + testKey + `"}}`
	lpe := `{"id":"pi_1","object":"payment_intent","status":"requires_payment_method","last_payment_error":{"code":"x","message":"` + testKey + `"}}`
	o := b.P.Classify(chargeReq(), 200, http.Header{}, []byte(lpe))

	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/pi_1", func(*http.Request) (*http.Response, error) {
		return respond(200, lpe), nil
	})
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/pi_err", func(*http.Request) (*http.Response, error) {
		return respond(500, echo), nil
	})
	res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pi_1"))
	require.NoError(t, err)
	_, errLookup := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pi_err"))

	testkit.RequireNoLeak(t, testkit.LeakCheck{
		Secrets:  []string{testKey, strings.TrimPrefix(testKey, "sk_test_")},
		Values:   []any{cfg, &cfg, b.P, *b.P},
		Errors:   []error{errURL, errKey, errReq, errLookup},
		Provider: b.P, Request: chargeReq(), Echo: echo, Header: http.Header{"Request-Id": {"req_1"}},
		Statuses: []int{400, 401, 402, 403, 404, 409, 429, 500, 503},
		Texts:    []string{fmt.Sprintf("%+v", o), fmt.Sprintf("%+v", res)},
	})

	// The key does go where it must: the Authorization header.
	hr, err := b.P.NewRequest(context.Background(), chargeReq())
	require.NoError(t, err)
	require.Equal(t, "Bearer "+testKey, hr.Header.Get("Authorization"))
}
