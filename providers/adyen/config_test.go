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
		{Name: "no key", Cfg: adyen.Config{MerchantAccount: merchant}, Field: "adyen.Config.APIKey", Hint: "API key"},
		{Name: "key with space", Cfg: with(func(c *adyen.Config) { c.APIKey = "AQE a" }), Field: "adyen.Config.APIKey", Hint: "exactly"},
		{Name: "no merchant", Cfg: adyen.Config{APIKey: testKey}, Field: "adyen.Config.MerchantAccount", Hint: "merchant account"},
		{Name: "relative URL", Cfg: with(func(c *adyen.Config) { c.BaseURL = "checkout-test.adyen.com" }), Field: "adyen.Config.BaseURL", Hint: "https://"},
		{Name: "user info", Cfg: with(func(c *adyen.Config) { c.BaseURL = "https://ws:" + whPass + "@checkout-test.adyen.com" }), Field: "adyen.Config.BaseURL", Hint: "PREFIX"},
		{Name: "negative TTL", Cfg: with(func(c *adyen.Config) { c.KeyTTL = -time.Second }), Field: "adyen.Config.KeyTTL", Hint: "negative"},
		{Name: "negative lag", Cfg: with(func(c *adyen.Config) { c.WebhookLag = -time.Second }), Field: "adyen.Config.WebhookLag", Hint: "negative"},
		{Name: "bad hmac", Cfg: with(func(c *adyen.Config) { c.HMACKey = "xyz" + testHMAC }), Field: "adyen.Config.HMACKey", Hint: "hex"},
		{Name: "odd hmac", Cfg: with(func(c *adyen.Config) { c.HMACKey = testHMAC[1:] }), Field: "adyen.Config.HMACKey", Hint: "hex"},
		{Name: "previous only", Cfg: with(func(c *adyen.Config) { c.PreviousHMACKey = testHMAC }), Field: "adyen.Config.HMACKey", Hint: "current"},
		{Name: "user without password", Cfg: with(func(c *adyen.Config) { c.WebhookUsername = "u" }), Field: "adyen.Config.WebhookPassword", Hint: "together"},
		{Name: "user with colon", Cfg: with(func(c *adyen.Config) { c.WebhookUsername, c.WebhookPassword = "a:b", "p" }), Field: "adyen.Config.WebhookUsername", Hint: ":"},
		{Name: "relative return URL", Cfg: with(func(c *adyen.Config) { c.ReturnURL = "/checkout/return" }), Field: "adyen.Config.ReturnURL", Hint: "absolute URL"},
		{Name: "return URL without scheme", Cfg: with(func(c *adyen.Config) { c.ReturnURL = "shop.example/return" }), Field: "adyen.Config.ReturnURL", Hint: "https://shop.example/checkout/return"},
		{Name: "return URL without host", Cfg: with(func(c *adyen.Config) { c.ReturnURL = "https:///return" }), Field: "adyen.Config.ReturnURL", Hint: "no host"},
		{Name: "return URL with space", Cfg: with(func(c *adyen.Config) { c.ReturnURL = "https://shop.example/a b" }), Field: "adyen.Config.ReturnURL", Hint: "URL-encode"},
		{Name: "return URL not ASCII", Cfg: with(func(c *adyen.Config) { c.ReturnURL = "https://shop.example/ümlaut" }), Field: "adyen.Config.ReturnURL", Hint: "URL-encode"},
		{Name: "return URL with user", Cfg: with(func(c *adyen.Config) { c.ReturnURL = "https://u:" + whPass + "@shop.example/" }), Field: "adyen.Config.ReturnURL", Hint: "no credentials"},
		{Name: "return URL too long", Cfg: with(func(c *adyen.Config) { c.ReturnURL = "https://shop.example/" + strings.Repeat("r", 7981) }), Field: "adyen.Config.ReturnURL", Hint: "at most 8000"},
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
