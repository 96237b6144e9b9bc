package yookassa_test

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
	"github.com/payonce/payonce/providers/yookassa"
)

func TestNew(t *testing.T) {
	t.Parallel()
	testkit.RequireNew(t, yookassa.New, "yookassa", (*yookassa.Provider).ListLag,
		testkit.NewCase[yookassa.Config]{Name: "defaults", Cfg: yookassa.Config{ShopID: testShopID, SecretKey: testSecret},
			Info: payonce.ProviderInfo{KeyTTL: 24 * time.Hour, MaxKeyLength: 64, LookupProvesAbsence: true, WebhookRedelivery: 24 * time.Hour}, Lag: time.Minute},
		testkit.NewCase[yookassa.Config]{Name: "overrides", Cfg: yookassa.Config{ShopID: testShopID, SecretKey: testSecret, KeyTTL: 12 * time.Hour,
			ListLag: 5 * time.Second, LookupMargin: time.Minute, BaseURL: "http://127.0.0.1:1/"},
			Info: payonce.ProviderInfo{KeyTTL: 12 * time.Hour, MaxKeyLength: 64, LookupProvesAbsence: true, WebhookRedelivery: 24 * time.Hour}, Lag: 5 * time.Second, BaseURL: "http://127.0.0.1:1"},
	)
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	ok := yookassa.Config{ShopID: testShopID, SecretKey: testSecret}
	with := func(f func(*yookassa.Config)) yookassa.Config { c := ok; f(&c); return c }
	testkit.RequireConfigErrors(t, yookassa.New, []testkit.ConfigCase[yookassa.Config]{
		{Name: "no shop", Cfg: with(func(c *yookassa.Config) { c.ShopID = "" }), Field: "yookassa.Config.ShopID", Hint: "shop id"},
		{Name: "shop with colon", Cfg: with(func(c *yookassa.Config) { c.ShopID = "12:34" }), Field: "yookassa.Config.ShopID", Hint: "colon"},
		{Name: "shop with space", Cfg: with(func(c *yookassa.Config) { c.ShopID = "12 34" }), Field: "yookassa.Config.ShopID", Hint: "exactly"},
		{Name: "no secret", Cfg: with(func(c *yookassa.Config) { c.SecretKey = "" }), Field: "yookassa.Config.SecretKey", Hint: "secret key"},
		{Name: "secret with newline", Cfg: with(func(c *yookassa.Config) { c.SecretKey = testSecret + "\n" }), Field: "yookassa.Config.SecretKey", Hint: "exactly"},
		{Name: "relative URL", Cfg: with(func(c *yookassa.Config) { c.BaseURL = "api.yookassa.ru" }), Field: "yookassa.Config.BaseURL", Hint: "https://"},
		{Name: "no host", Cfg: with(func(c *yookassa.Config) { c.BaseURL = "https:///v3" }), Field: "yookassa.Config.BaseURL", Hint: "host"},
		{Name: "unparsable", Cfg: with(func(c *yookassa.Config) { c.BaseURL = "https://[::1" }), Field: "yookassa.Config.BaseURL", Hint: "valid URL"},
		{Name: "user info", Cfg: with(func(c *yookassa.Config) { c.BaseURL = "https://" + testShopID + ":" + testSecret + "@api.yookassa.ru" }), Field: "yookassa.Config.BaseURL", Hint: "user info"},
		{Name: "query", Cfg: with(func(c *yookassa.Config) { c.BaseURL = "https://api.yookassa.ru?x=1" }), Field: "yookassa.Config.BaseURL", Hint: "query"},
		{Name: "negative TTL", Cfg: with(func(c *yookassa.Config) { c.KeyTTL = -time.Second }), Field: "yookassa.Config.KeyTTL", Hint: "negative"},
		{Name: "negative lag", Cfg: with(func(c *yookassa.Config) { c.ListLag = -time.Second }), Field: "yookassa.Config.ListLag", Hint: "negative"},
		{Name: "negative margin", Cfg: with(func(c *yookassa.Config) { c.LookupMargin = -time.Second }), Field: "yookassa.Config.LookupMargin", Hint: "negative"},
		{Name: "negative audit interval", Cfg: with(func(c *yookassa.Config) { c.AuditInterval = -time.Second }), Field: "yookassa.Config.AuditInterval", Hint: "negative"},
	}, testSecret)
}

// TestCredentialsNeverLeak checks every place a credential could escape:
// formatting of Config and Provider, slog, errors, Outcomes and
// LookupResults, even when YooKassa echoes them.
func TestCredentialsNeverLeak(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *yookassa.Config) { c.BaseURL = "https://api.yookassa.ru/" })
	cfg := yookassa.Config{ShopID: testShopID, SecretKey: testSecret, BaseURL: "https://" + testShopID + ":" + testSecret + "@example.com"}

	_, errURL := yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret, BaseURL: "ftp://" + testSecret})
	_, errKey := yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret + " "})
	_, errReq := b.P.NewRequest(context.Background(), withKind(chargeReq(), payonce.KindCapture, 0, ""))
	errs := []error{errURL, errKey, errReq}

	echo := `{"type":"error","id":"e1","code":"invalid_credentials","description":"shop ` + testShopID + ` secret ` + testSecret + `"}`
	texts := []string{fmt.Sprintf("%+v", b.P.Classify(chargeReq(), 200, http.Header{}, []byte(`{"type":"`+testSecret+`"}`)))}

	b.MT.RegisterResponder(http.MethodGet, base+"/v3/payments/p_err", func(*http.Request) (*http.Response, error) {
		return respond(401, echo), nil
	})
	b.MT.RegisterResponder(http.MethodGet, base+"/v3/payments/p_bad", func(*http.Request) (*http.Response, error) {
		return respond(200, `{"id":"p_bad","status":"`+testSecret+`"}`), nil
	})
	for _, ref := range []string{"p_err", "p_bad"} {
		res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", ref))
		errs = append(errs, err)
		texts = append(texts, fmt.Sprintf("%+v", res))
	}

	testkit.RequireNoLeak(t, testkit.LeakCheck{
		Secrets: []string{testSecret, strings.TrimPrefix(testSecret, "test_"), testShopID},
		Values:  []any{cfg, &cfg, b.P, *b.P}, Errors: errs, Texts: texts,
		Provider: b.P, Request: chargeReq(), Echo: echo, Header: http.Header{},
		Statuses: []int{202, 400, 401, 403, 404, 429, 500, 503},
	})

	// The credentials do go where they must: the Authorization header.
	hr, err := b.P.NewRequest(context.Background(), chargeReq())
	require.NoError(t, err)
	testkit.RequireBasicAuth(t, hr, testShopID, testSecret)
}
