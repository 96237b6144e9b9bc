package adyen_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/adyen"
)

// testKey is a fake API key; tests check it never leaks.
const testKey = "AQEyhmfxKonIYxZGw0m/n3Q5qf3VaY9UCJ1+XWZe9W27jmlZiv4PD4jhfNMofnLr2K5i8/0QwV1bDb7kfNy1WIxIIkxgBw==-fakekey4tests"

// testHMAC is a fake HMAC key (hex, as the Customer Area shows it).
const testHMAC = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

const (
	merchant = "PayonceTestMerchant"
	base     = adyen.TestBaseURL
	whUser   = "adyen-webhook"
	whPass   = "s3cret-webhook-pass"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type bundle = testkit.Adapter[*adyen.Provider]

func testConfig() adyen.Config {
	return adyen.Config{APIKey: testKey, MerchantAccount: merchant, HMACKey: testHMAC,
		WebhookUsername: whUser, WebhookPassword: whPass, Now: func() time.Time { return testNow }}
}

// setup returns a Provider and an *http.Client whose own mock transport
// answers its requests (testkit.Setup).
func setup(t *testing.T, mod ...func(*adyen.Config)) bundle {
	t.Helper()
	return testkit.Setup(t, adyen.New, testConfig(), mod...)
}

func chargeReq() payonce.SendRequest {
	return testkit.ChargeRequest(1999, "EUR", "8315892878479934", "shopper-42", map[string]string{"order_id": "42"})
}

var withKind = testkit.WithKind

// respond answers like Adyen: JSON.
func respond(status int, body string) *http.Response {
	r := testkit.Respond(status, body)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}
