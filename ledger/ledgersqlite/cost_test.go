package ledgersqlite_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// The fast path of a call that succeeds costs two commits: Begin (create,
// lease, attempt) and Finish.
func TestFastPathIsTwoCommits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	before := ledgersqlite.Commits(s)
	res, err := s.Begin(ctx, begin(newOp("op-1"), "w", t0, true))
	require.NoError(t, err)
	require.True(t, res.Created)
	require.True(t, res.Claimed)
	require.NotNil(t, res.Attempt)
	_, err = s.Finish(ctx, succeed("op-1", "w", t0.Add(time.Second), res.Attempt.Number))
	require.NoError(t, err)
	require.EqualValues(t, 2, ledgersqlite.Commits(s)-before)

	// A replay of the finished call reads the recorded result and sends
	// nothing.
	res, err = s.Begin(ctx, begin(newOp("op-1"), "w2", t0.Add(time.Minute), true))
	require.NoError(t, err)
	require.False(t, res.Claimed)
	require.Nil(t, res.Attempt)
	require.Equal(t, ledger.StatusSucceeded, res.Op.Status)
	require.Equal(t, "pi_op-1", res.Op.ProviderRef)
}
