package paypal

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The attempts' token generations are bounded: entries of older tokens
// go first, then all; an attempt whose entry is gone and that meets a 401
// drops the current token (the safe side: one fetch too many).
func TestTokenUsesBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ts := &tokenSource{now: func() time.Time { return now }}
	old := ts.store("A21AAold", time.Hour)
	for i := range maxUsed - 1 {
		ts.use(fmt.Sprint("old-", i), old.gen)
	}
	cur := ts.store("A21AAcur", time.Hour)
	ts.use("cur-0", cur.gen)
	require.Len(t, ts.used, maxUsed)
	ts.use("cur-1", cur.gen)
	require.Equal(t, map[string]uint64{"cur-0": cur.gen, "cur-1": cur.gen}, ts.used, "the older token's entries went first")

	for i := range maxUsed {
		ts.use(fmt.Sprint("many-", i), cur.gen)
	}
	require.LessOrEqual(t, len(ts.used), maxUsed)

	ts.answered("old-1", true) // forgotten: the current token is dropped
	_, ok := ts.valid()
	require.False(t, ok)
	require.Equal(t, []string{"A21AAold", "A21AAcur"}, ts.known(), "the last two tokens are scrubbed")
}
