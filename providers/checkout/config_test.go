package checkout_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/checkout"
)

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	p, err := checkout.New(checkout.Config{SecretKey: testKey})
	require.NoError(t, err)
	require.Equal(t, "checkout", p.Name())
	require.Equal(t, payonce.ProviderInfo{KeyTTL: 24 * time.Hour, MaxKeyLength: 36}, p.Info())
	require.Equal(t, 2*time.Minute, p.SettleLag())
	require.Contains(t, p.String(), "BaseURL:https://api.checkout.com ")
}

func TestNewOverrides(t *testing.T) {
	t.Parallel()
	p, err := checkout.New(checkout.Config{SecretKey: testKey, BaseURL: checkout.SandboxBaseURL + "/",
		KeyTTL: 48 * time.Hour, SettleLag: time.Minute, ProcessingChannelID: "pc_abc"})
	require.NoError(t, err)
	require.Equal(t, 48*time.Hour, p.Info().KeyTTL)
	require.Equal(t, time.Minute, p.SettleLag())
	require.Contains(t, p.String(), "BaseURL:https://api.sandbox.checkout.com ")
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   checkout.Config
		field string
		hint  string
	}{
		{"no key", checkout.Config{}, "checkout.Config.SecretKey", "secret key"},
		{"key with space", checkout.Config{SecretKey: "sk_a b"}, "checkout.Config.SecretKey", "exactly"},
		{"bad channel", checkout.Config{SecretKey: testKey, ProcessingChannelID: "pc 1"}, "checkout.Config.ProcessingChannelID", "pc_"},
		{"relative URL", checkout.Config{SecretKey: testKey, BaseURL: "api.checkout.com"}, "checkout.Config.BaseURL", "https://"},
		{"no host", checkout.Config{SecretKey: testKey, BaseURL: "https:///x"}, "checkout.Config.BaseURL", "host"},
		{"unparsable", checkout.Config{SecretKey: testKey, BaseURL: "https://[::1"}, "checkout.Config.BaseURL", "valid URL"},
		{"user info", checkout.Config{SecretKey: testKey, BaseURL: "https://" + testKey + "@api.checkout.com"}, "checkout.Config.BaseURL", "user info"},
		{"fragment", checkout.Config{SecretKey: testKey, BaseURL: "https://api.checkout.com#x"}, "checkout.Config.BaseURL", "fragment"},
		{"negative TTL", checkout.Config{SecretKey: testKey, KeyTTL: -time.Second}, "checkout.Config.KeyTTL", "negative"},
		{"negative lag", checkout.Config{SecretKey: testKey, SettleLag: -time.Second}, "checkout.Config.SettleLag", "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := checkout.New(tc.cfg)
			require.Nil(t, p)
			testkit.RequireInvalid(t, err, tc.field, testKey)
			require.Contains(t, err.Error(), tc.hint)
		})
	}
}
