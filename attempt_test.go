package payonce

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestResendDelayGrowsAndIsCapped(t *testing.T) {
	t.Parallel()
	c := &Client{cfg: Config{CheckInterval: 30 * time.Second}}
	want := []time.Duration{30 * time.Second, 30 * time.Second, 2 * time.Minute, 8 * time.Minute, 32 * time.Minute,
		128 * time.Minute, 6 * time.Hour, 6 * time.Hour}
	for n, w := range want {
		require.Equal(t, w, c.resendDelay(n, 24*time.Hour), "after %d attempts", n)
	}
	require.Equal(t, 6*time.Hour, c.resendDelay(1000, 24*time.Hour), "no overflow")
	short := &Client{cfg: Config{CheckInterval: time.Minute}}
	require.Equal(t, time.Minute, short.resendDelay(5, 2*time.Minute), "never below CheckInterval")
	// The cap is the operation's own window: a 6 h PayPal order key is
	// resent within its window, not paced by a 45-day refund window.
	require.Equal(t, 90*time.Minute, c.resendDelay(1000, 6*time.Hour))
}

// A Retry-After longer than the call may wait ends the call's attempts at
// once; with MaxRetryAfter -1 every Retry-After does, while an answer that
// asks for no wait still backs off and sends again.
func TestPauseBeforeNextHonoursMaxRetryAfter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		maxRetryAfter time.Duration
		retryAfter    time.Duration
		ends          bool
	}{
		{"default, no Retry-After", 0, 0, false},
		{"default, short Retry-After", 0, time.Millisecond, false},
		{"default, Retry-After past the cap", 0, 11 * time.Second, true},
		{"off, no Retry-After", off, 0, false},
		{"off, any Retry-After", off, time.Millisecond, true},
	}
	for _, tc := range cases {
		c := &Client{cfg: Config{Retry: RetryPolicy{MaxRetryAfter: tc.maxRetryAfter, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}.withDefaults(),
			Random: func() float64 { return 0 }}}
		require.NoError(t, c.cfg.Retry.validate(), tc.name)
		r := &run{sent: 1}
		c.pauseBeforeNext(context.Background(), r, tc.retryAfter)
		if tc.ends {
			require.Equal(t, 3, r.sent, "%s: the call leaves the rest to background work", tc.name)
		} else {
			require.Equal(t, 1, r.sent, "%s: the call may send again", tc.name)
		}
	}
}
