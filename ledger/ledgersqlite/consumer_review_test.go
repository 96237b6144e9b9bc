package ledgersqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// Cleanup's feed purge must not delete entries a registered consumer has
// not applied yet: a consumer stopped (or slow) for longer than the
// retention would otherwise read on after the purged entries and never
// apply them, silently.
func TestConsumerCleanupKeepsUnappliedEntries(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	store := openAt(t, path)
	raw := rawDB(t, path)
	createApplied(t, raw)
	ctx := context.Background()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	_, _, err := store.CreateOrGet(ctx, ledgertest.NewOp("slow-a"), t0)
	require.NoError(t, err)

	run := func() {
		c, err := ledgersqlite.NewConsumer(store, "slow", countingHandler("slow", nil), ledger.ConsumerOptions{Poll: time.Hour})
		require.NoError(t, err)
		runCtx, cancel := context.WithCancel(ctx)
		cancel() // the final pass alone applies what is there
		require.NoError(t, c.Run(runCtx))
	}
	run()
	require.Len(t, appliedCounts(t, raw, "slow"), 1)

	// Two entries the stopped consumer has not applied, then a Cleanup
	// past the retention of all of them.
	for _, id := range []string{"slow-b", "slow-c"} {
		_, _, err := store.CreateOrGet(ctx, ledgertest.NewOp(id), t0.Add(time.Minute))
		require.NoError(t, err)
	}
	_, err = store.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(90 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: time.Hour})
	require.NoError(t, err)
	_, _, err = store.CreateOrGet(ctx, ledgertest.NewOp("slow-d"), t0.Add(90*24*time.Hour))
	require.NoError(t, err)

	require.Len(t, feedAllOf(t, store), 3, "slow-a, which the consumer applied, is purged; slow-b and slow-c are kept")
	run()
	require.Len(t, appliedCounts(t, raw, "slow"), 4, "slow-b and slow-c reach the handler: the purge kept them for the consumer")

	// Once applied, they go with the next Cleanup.
	rep, err := store.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(90 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 2, rep.FeedPurged)
}

func feedAllOf(t *testing.T, s *ledgersqlite.Store) []ledger.FeedEntry {
	t.Helper()
	entries, err := s.Feed(t.Context(), ledger.FeedParams{Limit: ledger.MaxFeedLimit})
	require.NoError(t, err)
	return entries
}
