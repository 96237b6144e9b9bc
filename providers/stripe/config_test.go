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
		testkit.Refuse("no key", stripe.Config{}, "stripe.Config.APIKey", "secret key"),
		testkit.Refuse("key with newline", stripe.Config{APIKey: testKey + "\n"}, "stripe.Config.APIKey", "exactly"),
		testkit.Refuse("key with space", stripe.Config{APIKey: "sk_test_a b"}, "stripe.Config.APIKey", "exactly"),
		testkit.Refuse("relative URL", stripe.Config{APIKey: testKey, BaseURL: "api.stripe.com"}, "stripe.Config.BaseURL", "https://"),
		testkit.Refuse("ftp URL", stripe.Config{APIKey: testKey, BaseURL: "ftp://api.stripe.com"}, "stripe.Config.BaseURL", "https://"),
		testkit.Refuse("no host", stripe.Config{APIKey: testKey, BaseURL: "https:///v1"}, "stripe.Config.BaseURL", "host"),
		testkit.Refuse("unparsable", stripe.Config{APIKey: testKey, BaseURL: "https://[::1"}, "stripe.Config.BaseURL", "valid URL"),
		testkit.Refuse("user info", stripe.Config{APIKey: testKey, BaseURL: "https://" + testKey + ":@api.stripe.com"}, "stripe.Config.BaseURL", "user info"),
		testkit.Refuse("query", stripe.Config{APIKey: testKey, BaseURL: "https://api.stripe.com?x=1"}, "stripe.Config.BaseURL", "query"),
		testkit.Refuse("fragment", stripe.Config{APIKey: testKey, BaseURL: "https://api.stripe.com#x"}, "stripe.Config.BaseURL", "fragment"),
		testkit.Refuse("negative TTL", stripe.Config{APIKey: testKey, KeyTTL: -time.Second}, "stripe.Config.KeyTTL", "negative"),
		testkit.Refuse("negative lag", stripe.Config{APIKey: testKey, SearchLag: -time.Second}, "stripe.Config.SearchLag", "negative"),
		testkit.Refuse("bad version", stripe.Config{APIKey: testKey, APIVersion: "2024-06-20\r\nX: y"}, "stripe.Config.APIVersion", "API version"),
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
