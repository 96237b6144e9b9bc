package stripe_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/stripe"
)

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	p, err := stripe.New(stripe.Config{APIKey: testKey})
	require.NoError(t, err)
	require.Equal(t, "stripe", p.Name())
	require.Equal(t, payonce.ProviderInfo{KeyTTL: 24 * time.Hour, MaxKeyLength: 255}, p.Info())
	require.Equal(t, time.Minute, p.SearchLag())
}

func TestNewOverrides(t *testing.T) {
	t.Parallel()
	p, err := stripe.New(stripe.Config{APIKey: testKey, KeyTTL: 30 * 24 * time.Hour, SearchLag: 5 * time.Minute,
		BaseURL: "http://127.0.0.1:12111/"})
	require.NoError(t, err)
	require.Equal(t, 30*24*time.Hour, p.Info().KeyTTL)
	require.Equal(t, 5*time.Minute, p.SearchLag())
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   stripe.Config
		field string
		hint  string
	}{
		{"no key", stripe.Config{}, "stripe.Config.APIKey", "secret key"},
		{"key with newline", stripe.Config{APIKey: testKey + "\n"}, "stripe.Config.APIKey", "exactly"},
		{"key with space", stripe.Config{APIKey: "sk_test_a b"}, "stripe.Config.APIKey", "exactly"},
		{"relative URL", stripe.Config{APIKey: testKey, BaseURL: "api.stripe.com"}, "stripe.Config.BaseURL", "https://"},
		{"ftp URL", stripe.Config{APIKey: testKey, BaseURL: "ftp://api.stripe.com"}, "stripe.Config.BaseURL", "https://"},
		{"no host", stripe.Config{APIKey: testKey, BaseURL: "https:///v1"}, "stripe.Config.BaseURL", "host"},
		{"unparsable", stripe.Config{APIKey: testKey, BaseURL: "https://[::1"}, "stripe.Config.BaseURL", "valid URL"},
		{"user info", stripe.Config{APIKey: testKey, BaseURL: "https://" + testKey + ":@api.stripe.com"}, "stripe.Config.BaseURL", "user info"},
		{"query", stripe.Config{APIKey: testKey, BaseURL: "https://api.stripe.com?x=1"}, "stripe.Config.BaseURL", "query"},
		{"fragment", stripe.Config{APIKey: testKey, BaseURL: "https://api.stripe.com#x"}, "stripe.Config.BaseURL", "fragment"},
		{"negative TTL", stripe.Config{APIKey: testKey, KeyTTL: -time.Second}, "stripe.Config.KeyTTL", "negative"},
		{"negative lag", stripe.Config{APIKey: testKey, SearchLag: -time.Second}, "stripe.Config.SearchLag", "negative"},
		{"bad version", stripe.Config{APIKey: testKey, APIVersion: "2024-06-20\r\nX: y"}, "stripe.Config.APIVersion", "API version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := stripe.New(tc.cfg)
			require.Nil(t, p)
			testkit.RequireInvalid(t, err, tc.field, testKey)
			require.Contains(t, err.Error(), tc.hint)
		})
	}
}
