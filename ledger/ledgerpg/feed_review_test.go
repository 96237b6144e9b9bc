package ledgerpg_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A caller that records operations with CreateOrGetTx inside a savepoint
// of its own transaction (pgx's nested Tx.Begin, a common pattern for
// "try this, keep the rest") and meets a tombstoned ID gets the tombstone
// back and nothing written: also no feed entry. The insert's creation
// entry is written in the savepoint's subtransaction, so its xmin is the
// subtransaction's id, not the top-level id that pg_current_xact_id()
// returns: deleteCreated must still take it back. A phantom creation
// entry (From empty, To pending) after the operation's settlement tells
// a consumer that the settled order is pending again.
func TestCreateOrGetTxInSavepointLeavesNoFeedEntryForTombstone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	op := finishedOp(t, s, "op-1")
	_, err := s.Cleanup(ctx, cleanupAt(cleanedAt))
	require.NoError(t, err)
	feed := table(s.Schema(), "payonce_feed")
	before := countRows(t, pool, feed)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)   //nolint:errcheck // committed below
	sp, err := tx.Begin(ctx) // SAVEPOINT
	require.NoError(t, err)
	got, created, err := s.CreateOrGetTx(ctx, sp, op, cleanedAt.Add(time.Hour))
	require.NoError(t, err)
	require.False(t, created)
	require.True(t, got.Tombstone)
	require.NoError(t, sp.Commit(ctx)) // RELEASE SAVEPOINT
	require.NoError(t, tx.Commit(ctx))

	require.Zero(t, liveAndTombstoned(t, pool, s.Schema()))
	require.Equal(t, before, countRows(t, pool, feed),
		"the tombstoned ID's creation entry written in the savepoint was left in the feed")
}
