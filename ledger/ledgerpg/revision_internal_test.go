package ledgerpg

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// The copies stay bounded: one never taken (its operation left to another
// process) is evicted when the map is full, and take uses a copy up.
func TestRevisionsStayBounded(t *testing.T) {
	t.Parallel()
	var r revisions
	for i := range maxRevisions + 100 {
		r.put(revision{op: ledger.Operation{ID: fmt.Sprintf("op-%d", i)}, xmin: uint32(i)})
	}
	require.Len(t, r.m, maxRevisions)
	last := fmt.Sprintf("op-%d", maxRevisions+99)
	rev, ok := r.take(last)
	require.True(t, ok)
	require.Equal(t, uint32(maxRevisions+99), rev.xmin)
	_, ok = r.take(last)
	require.False(t, ok, "a copy is used once")
	r.put(revision{op: ledger.Operation{ID: "op-0"}, xmin: 7})
	rev, _ = r.take("op-0")
	require.Equal(t, uint32(7), rev.xmin, "a newer write replaces the copy")
}

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
