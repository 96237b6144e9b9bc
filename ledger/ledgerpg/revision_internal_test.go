package ledgerpg

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// asStored is what PostgreSQL gives back: microseconds, UTC, whole
// milliseconds of TTL.
func TestAsStored(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	op := asStored(ledger.Operation{CreatedAt: at, KeyTTL: 1500*time.Millisecond + 999, Resolution: &ledger.Resolution{At: at}})
	want := time.Date(2025, 3, 1, 11, 0, 0, 123456000, time.UTC)
	require.Equal(t, want, op.CreatedAt)
	require.Equal(t, want, op.Resolution.At)
	require.Equal(t, 1500*time.Millisecond, op.KeyTTL)
	require.True(t, op.FinishedAt.IsZero())
}
