package yookassa_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/yookassa"
)

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	p, err := yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret})
	require.NoError(t, err)
	require.Equal(t, "yookassa", p.Name())
	require.Equal(t, payonce.ProviderInfo{KeyTTL: 24 * time.Hour, MaxKeyLength: 64}, p.Info())
	require.Equal(t, time.Minute, p.ListLag())
}

func TestNewOverrides(t *testing.T) {
	t.Parallel()
	p, err := yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret, KeyTTL: 12 * time.Hour,
		ListLag: 5 * time.Second, LookupMargin: time.Minute, BaseURL: "http://127.0.0.1:1/"})
	require.NoError(t, err)
	require.Equal(t, 12*time.Hour, p.Info().KeyTTL)
	require.Equal(t, 5*time.Second, p.ListLag())
	require.Contains(t, p.String(), "BaseURL:http://127.0.0.1:1 ")
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	ok := yookassa.Config{ShopID: testShopID, SecretKey: testSecret}
	with := func(f func(*yookassa.Config)) yookassa.Config { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name  string
		cfg   yookassa.Config
		field string
		hint  string
	}{
		{"no shop", with(func(c *yookassa.Config) { c.ShopID = "" }), "yookassa.Config.ShopID", "shop id"},
		{"shop with colon", with(func(c *yookassa.Config) { c.ShopID = "12:34" }), "yookassa.Config.ShopID", "colon"},
		{"shop with space", with(func(c *yookassa.Config) { c.ShopID = "12 34" }), "yookassa.Config.ShopID", "exactly"},
		{"no secret", with(func(c *yookassa.Config) { c.SecretKey = "" }), "yookassa.Config.SecretKey", "secret key"},
		{"secret with newline", with(func(c *yookassa.Config) { c.SecretKey = testSecret + "\n" }), "yookassa.Config.SecretKey", "exactly"},
		{"relative URL", with(func(c *yookassa.Config) { c.BaseURL = "api.yookassa.ru" }), "yookassa.Config.BaseURL", "https://"},
		{"no host", with(func(c *yookassa.Config) { c.BaseURL = "https:///v3" }), "yookassa.Config.BaseURL", "host"},
		{"unparsable", with(func(c *yookassa.Config) { c.BaseURL = "https://[::1" }), "yookassa.Config.BaseURL", "valid URL"},
		{"user info", with(func(c *yookassa.Config) { c.BaseURL = "https://" + testShopID + ":" + testSecret + "@api.yookassa.ru" }), "yookassa.Config.BaseURL", "user info"},
		{"query", with(func(c *yookassa.Config) { c.BaseURL = "https://api.yookassa.ru?x=1" }), "yookassa.Config.BaseURL", "query"},
		{"negative TTL", with(func(c *yookassa.Config) { c.KeyTTL = -time.Second }), "yookassa.Config.KeyTTL", "negative"},
		{"negative lag", with(func(c *yookassa.Config) { c.ListLag = -time.Second }), "yookassa.Config.ListLag", "negative"},
		{"negative margin", with(func(c *yookassa.Config) { c.LookupMargin = -time.Second }), "yookassa.Config.LookupMargin", "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := yookassa.New(tc.cfg)
			require.Nil(t, p)
			testkit.RequireInvalid(t, err, tc.field, testSecret)
			require.Contains(t, err.Error(), tc.hint)
		})
	}
}
