package payonce

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// stubProvider declares a key TTL and is never called.
type stubProvider struct{ ttl time.Duration }

func (stubProvider) Name() string         { return "stub" }
func (p stubProvider) Info() ProviderInfo { return ProviderInfo{KeyTTL: p.ttl, MaxKeyLength: 255} }
func (stubProvider) NewRequest(context.Context, SendRequest) (*http.Request, error) {
	panic("not called")
}
func (stubProvider) Classify(SendRequest, int, http.Header, []byte) Outcome { panic("not called") }
func (stubProvider) Lookup(context.Context, HTTPDoer, LookupQuery) (LookupResult, error) {
	panic("not called")
}

// The default SafetyMargin is the one Config.SafetyMargin's doc states:
// AttemptTimeout + max(ClockSkew, 1 % of the key TTL).
func TestSafetyMarginDefault(t *testing.T) {
	t.Parallel()
	store := struct{ ledger.Store }{}
	for _, c := range []struct {
		name string
		ttl  time.Duration
		cfg  Config
		want time.Duration
	}{
		{"defaults, 24 h keys: 1 % wins", 24 * time.Hour, Config{}, 30*time.Second + 14*time.Minute + 24*time.Second},
		{"defaults, 1 h keys: ClockSkew wins", time.Hour, Config{}, 30*time.Second + time.Minute},
		{"set timeout and skew", 24 * time.Hour, Config{AttemptTimeout: 2 * time.Second, ClockSkew: 20 * time.Minute}, 2*time.Second + 20*time.Minute},
		{"RequestPath", 24 * time.Hour, RequestPath(Config{}), 2*time.Second + 14*time.Minute + 24*time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Provider, cfg.Store = stubProvider{ttl: c.ttl}, store
			cl, err := New(cfg)
			require.NoError(t, err)
			require.Equal(t, c.want, cl.cfg.SafetyMargin)
		})
	}
}
