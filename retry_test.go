package payonce

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffFullJitter(t *testing.T) {
	t.Parallel()
	p := RetryPolicy{}.withDefaults()
	require.Equal(t, time.Duration(0), p.backoff(0, 0, func() float64 { return 0 }))
	require.Equal(t, 100*time.Millisecond, p.backoff(0, 0, func() float64 { return 0.5 }))
	require.Equal(t, 400*time.Millisecond, p.backoff(2, 0, func() float64 { return 0.5 }))
	require.Equal(t, 2500*time.Millisecond, p.backoff(20, 0, func() float64 { return 0.5 }), "capped at MaxDelay")
	require.Equal(t, 2500*time.Millisecond, p.backoff(100, 0, func() float64 { return 0.5 }), "no overflow")
	require.Equal(t, 3*time.Second, p.backoff(0, 3*time.Second, func() float64 { return 0.5 }), "Retry-After wins when longer")
}

// Zero takes the default; -1 switches a setting off and survives the
// defaults; any other negative value is refused, naming the field.
func TestRetryPolicyOff(t *testing.T) {
	t.Parallel()
	def := RetryPolicy{}.withDefaults()
	require.Equal(t, RetryPolicy{MaxAttempts: 3, BaseDelay: 200 * time.Millisecond, MaxDelay: 5 * time.Second,
		MaxRetryAfter: 10 * time.Second, DialRetries: 2, LookupRetries: 2}, def, "the defaults are unchanged")
	p := RetryPolicy{DialRetries: off, LookupRetries: off, MaxRetryAfter: off}.withDefaults()
	require.NoError(t, p.validate())
	require.Equal(t, off, p.DialRetries)
	require.Equal(t, off, p.LookupRetries)
	require.Equal(t, time.Duration(off), p.MaxRetryAfter)
	require.Zero(t, onOrZero(p.DialRetries), "no reconnection")
	require.Zero(t, p.retryAfterLimit(), "no wait for a Retry-After")
	require.Equal(t, 10*time.Second, def.retryAfterLimit())
	for _, bad := range []struct {
		p     RetryPolicy
		field string
	}{
		{RetryPolicy{DialRetries: -2}, "Retry.DialRetries"},
		{RetryPolicy{LookupRetries: -2}, "Retry.DialRetries"},
		{RetryPolicy{MaxRetryAfter: -2}, "Retry.MaxRetryAfter"},
		{RetryPolicy{MaxRetryAfter: -time.Second}, "Retry.MaxRetryAfter"},
	} {
		err := bad.p.withDefaults().validate()
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%+v", bad.p)
		require.Equal(t, bad.field, ve.Field)
		require.ErrorIs(t, err, ErrInvalid)
	}
}
