package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStoredErrorTimes(t *testing.T) {
	t.Parallel()
	require.Equal(t, storedErrorTimes{}, storedErrorTimesOf(nil))
	var b bytes.Buffer
	storedErrorTimes{}.print(&b)
	require.Empty(t, b.String(), "no line without stored errors")

	got := storedErrorTimesOf([]time.Duration{9 * time.Second, 3 * time.Second, 5 * time.Second, 4 * time.Second})
	require.Equal(t, storedErrorTimes{Count: 4, P50Seconds: 4, MaxSeconds: 9}, got)
	got.print(&b)
	require.Equal(t, "stored errors: 4 reached review in p50 4s / max 9s (from the first attempt)\n", b.String())
}
