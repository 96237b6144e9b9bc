package adyen_test

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
	"github.com/payonce/payonce/providers/adyen"
)

func TestNew(t *testing.T) {
	t.Parallel()
	live := "https://1797a841fbb37ca7-AdyenDemo-checkout-live.adyenpayments.com/checkout/v71"
	testkit.RequireNew(t, adyen.New, "adyen", (*adyen.Provider).WebhookLag,
		testkit.NewCase[adyen.Config]{Name: "defaults", Cfg: adyen.Config{APIKey: testKey, MerchantAccount: merchant},
			Info: payonce.ProviderInfo{KeyTTL: 31 * 24 * time.Hour, MaxKeyLength: 64, LookupProvesAbsence: false, WebhookRedelivery: 30 * 24 * time.Hour}, Lag: 10 * time.Minute, BaseURL: "https://checkout-test.adyen.com/v71"},
		testkit.NewCase[adyen.Config]{Name: "overrides", Cfg: adyen.Config{APIKey: testKey, MerchantAccount: merchant, BaseURL: live + "/", KeyTTL: 40 * 24 * time.Hour, WebhookLag: time.Minute},
			Info: payonce.ProviderInfo{KeyTTL: 40 * 24 * time.Hour, MaxKeyLength: 64, LookupProvesAbsence: false, WebhookRedelivery: 30 * 24 * time.Hour}, Lag: time.Minute, BaseURL: live},
	)
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	ok := adyen.Config{APIKey: testKey, MerchantAccount: merchant}
	with := func(f func(*adyen.Config)) adyen.Config { c := ok; f(&c); return c }
	testkit.RequireConfigErrors(t, adyen.New, []testkit.ConfigCase[adyen.Config]{
		testkit.Refuse("no key", adyen.Config{MerchantAccount: merchant}, "adyen.Config.APIKey", "API key"),
		testkit.Refuse("key with space", with(func(c *adyen.Config) { c.APIKey = "AQE a" }), "adyen.Config.APIKey", "exactly"),
		testkit.Refuse("no merchant", adyen.Config{APIKey: testKey}, "adyen.Config.MerchantAccount", "merchant account"),
		testkit.Refuse("relative URL", with(func(c *adyen.Config) { c.BaseURL = "checkout-test.adyen.com" }), "adyen.Config.BaseURL", "https://"),
		testkit.Refuse("user info", with(func(c *adyen.Config) { c.BaseURL = "https://ws:" + whPass + "@checkout-test.adyen.com" }), "adyen.Config.BaseURL", "PREFIX"),
		testkit.Refuse("negative TTL", with(func(c *adyen.Config) { c.KeyTTL = -time.Second }), "adyen.Config.KeyTTL", "negative"),
		testkit.Refuse("negative lag", with(func(c *adyen.Config) { c.WebhookLag = -time.Second }), "adyen.Config.WebhookLag", "negative"),
		testkit.Refuse("bad hmac", with(func(c *adyen.Config) { c.HMACKey = "xyz" + testHMAC }), "adyen.Config.HMACKey", "hex"),
		testkit.Refuse("odd hmac", with(func(c *adyen.Config) { c.HMACKey = testHMAC[1:] }), "adyen.Config.HMACKey", "hex"),
		testkit.Refuse("previous only", with(func(c *adyen.Config) { c.PreviousHMACKey = testHMAC }), "adyen.Config.HMACKey", "current"),
		testkit.Refuse("user without password", with(func(c *adyen.Config) { c.WebhookUsername = "u" }), "adyen.Config.WebhookPassword", "together"),
		testkit.Refuse("user with colon", with(func(c *adyen.Config) { c.WebhookUsername, c.WebhookPassword = "a:b", "p" }), "adyen.Config.WebhookUsername", ":"),
		testkit.Refuse("relative return URL", with(func(c *adyen.Config) { c.ReturnURL = "/checkout/return" }), "adyen.Config.ReturnURL", "absolute URL"),
		testkit.Refuse("return URL without scheme", with(func(c *adyen.Config) { c.ReturnURL = "shop.example/return" }), "adyen.Config.ReturnURL", "https://shop.example/checkout/return"),
		testkit.Refuse("return URL without host", with(func(c *adyen.Config) { c.ReturnURL = "https:///return" }), "adyen.Config.ReturnURL", "no host"),
		testkit.Refuse("return URL with space", with(func(c *adyen.Config) { c.ReturnURL = "https://shop.example/a b" }), "adyen.Config.ReturnURL", "URL-encode"),
		testkit.Refuse("return URL not ASCII", with(func(c *adyen.Config) { c.ReturnURL = "https://shop.example/ümlaut" }), "adyen.Config.ReturnURL", "URL-encode"),
		testkit.Refuse("return URL with user", with(func(c *adyen.Config) { c.ReturnURL = "https://u:" + whPass + "@shop.example/" }), "adyen.Config.ReturnURL", "no credentials"),
		testkit.Refuse("return URL too long", with(func(c *adyen.Config) { c.ReturnURL = "https://shop.example/" + strings.Repeat("r", 7981) }), "adyen.Config.ReturnURL", "at most 8000"),
	}, testKey, testHMAC, whPass)
	// What Adyen takes: a web page (http or https) or an app's own scheme,
	// up to 8000 characters.
	for _, u := range []string{"https://shop.example/checkout/return?order=1", "http://localhost:8080/r", "my-app://your.package.name",
		"https://shop.example/" + strings.Repeat("r", 7979)} {
		_, err := adyen.New(with(func(c *adyen.Config) { c.ReturnURL = u }))
		require.NoError(t, err, u)
	}
}

// TestSecretsNeverLeak checks every place a secret could escape:
// formatting of Config and Provider, slog, errors and Outcomes, even when
// Adyen echoes them.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := testConfig()
	cfg.PreviousHMACKey = testHMAC
	_, errURL := adyen.New(adyen.Config{APIKey: testKey, MerchantAccount: merchant, BaseURL: "ftp://" + testKey})
	_, errKey := adyen.New(adyen.Config{APIKey: testKey + " ", MerchantAccount: merchant})
	_, errHMAC := adyen.New(adyen.Config{APIKey: testKey, MerchantAccount: merchant, HMACKey: testHMAC + "Z"})
	_, errReq := b.P.NewRequest(context.Background(), withKind(chargeReq(), payonce.KindCapture, 0, ""))
	_, errHook := b.P.ParseWebhook(webhookRequest(whUser, "wrong "+whPass), []byte(`{}`))

	echo := `{"status":422,"errorCode":"000","message":"key ` + testKey + ` hmac ` + testHMAC + ` pass ` + whPass + `","errorType":"validation","pspReference":"` + testKey + `"}`
	texts := []string{fmt.Sprintf("%+v", b.P.Classify(chargeReq(), 200, http.Header{},
		[]byte(`{"pspReference":"P1","resultCode":"Refused","refusalReason":"`+testKey+`","refusalReasonCode":"`+testHMAC+`"}`)))}
	evs, err := b.P.ParseWebhook(webhookRequest(whUser, whPass), deliveryJSON(t, signedItem(item{psp: "P1", event: "AUTHORISATION", success: "false", reason: "refused " + testKey + " " + whPass})))
	require.NoError(t, err)
	texts = append(texts, fmt.Sprintf("%+v", evs))

	testkit.RequireNoLeak(t, testkit.LeakCheck{
		Secrets: []string{testKey, testHMAC, whPass},
		Values:  []any{cfg, &cfg, b.P, *b.P}, Errors: []error{errURL, errKey, errHMAC, errReq, errHook}, Texts: texts,
		Provider: b.P, Request: chargeReq(), Echo: echo, Header: http.Header{},
		Statuses: []int{400, 401, 403, 404, 409, 422, 429, 500, 503},
	})
	for _, v := range []any{cfg, b.P} {
		require.NotContains(t, fmt.Sprintf("%v", v), whUser, "the webhook user name is redacted too")
	}
	hr, err := b.P.NewRequest(context.Background(), chargeReq())
	require.NoError(t, err)
	require.Equal(t, testKey, hr.Header.Get("X-API-Key"))
	require.Empty(t, hr.Header.Get("Authorization"))
}
