package payonce

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// stubProvider declares a key TTL (and per kind, kinds) and is never
// called.
type stubProvider struct {
	ttl   time.Duration
	kinds map[Kind]time.Duration
}

func (stubProvider) Name() string { return "stub" }
func (p stubProvider) Info() ProviderInfo {
	return ProviderInfo{KeyTTL: p.ttl, KindKeyTTL: p.kinds, MaxKeyLength: 255}
}
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

// A provider whose endpoints keep keys for different times (PayPal: orders
// 6 h, payments 45 days): each operation records its kind's window, the
// default margin is sized by the shortest, and a margin set must fit the
// shortest.
func TestKindKeyTTL(t *testing.T) {
	t.Parallel()
	store := struct{ ledger.Store }{}
	paypal := stubProvider{ttl: 45 * 24 * time.Hour, kinds: map[Kind]time.Duration{KindCharge: 6 * time.Hour}}
	cl, err := New(Config{Provider: paypal, Store: store})
	require.NoError(t, err)
	require.Equal(t, 30*time.Second+3*time.Minute+36*time.Second, cl.cfg.SafetyMargin, "1 % of the 6 h window, not of 45 days")
	for k, want := range map[Kind]time.Duration{KindCharge: 6 * time.Hour, KindCapture: 45 * 24 * time.Hour, KindRefund: 45 * 24 * time.Hour} {
		require.Equal(t, want, cl.newOperation(prepared{id: Identity{Kind: k}}).KeyTTL, "%s", k)
	}

	_, err = New(Config{Provider: paypal, Store: store, SafetyMargin: 7 * time.Hour})
	require.ErrorContains(t, err, "shortest key TTL 6h0m0s")
	for _, bad := range []map[Kind]time.Duration{{KindCharge: 0}, {"charg": time.Hour}} {
		_, err = New(Config{Provider: stubProvider{ttl: time.Hour, kinds: bad}, Store: store})
		require.ErrorIs(t, err, ErrInvalid, "%v", bad)
	}
}
