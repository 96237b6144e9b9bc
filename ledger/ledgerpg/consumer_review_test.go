package ledgerpg_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// Cleanup's feed purge must not delete entries a registered consumer has
// not applied yet: a consumer stopped (or slow) for longer than the
// retention would otherwise read on after the purged entries and never
// apply them, silently.
func TestConsumerCleanupKeepsUnappliedEntries(t *testing.T) {
	t.Parallel()
	store, pool := newStore(t)
	schema := store.Schema()
	createApplied(t, pool, schema)
	ctx := context.Background()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	create := func(id string, at time.Time) {
		t.Helper()
		_, _, err := store.CreateOrGet(ctx, ledgertest.NewOp(id), at)
		require.NoError(t, err)
		// Feed's gap rule: wait until the entry can be read.
		require.Eventually(t, func() bool {
			entries, err := store.Feed(ctx, ledger.FeedParams{Limit: ledger.MaxFeedLimit})
			require.NoError(t, err)
			return len(entries) > 0 && entries[len(entries)-1].OperationID == id
		}, 20*time.Second, 10*time.Millisecond)
	}
	run := func() {
		t.Helper()
		c, err := ledgerpg.NewConsumer(store, "slow", countingHandler(schema, "slow", nil), ledger.ConsumerOptions{Poll: time.Hour})
		require.NoError(t, err)
		runCtx, cancel := context.WithCancel(ctx)
		cancel() // the final pass alone applies what is there
		require.NoError(t, c.Run(runCtx))
	}
	create("slow-a", t0)
	run()
	require.Len(t, appliedCounts(t, pool, schema, "slow"), 1)

	create("slow-b", t0.Add(time.Minute))
	create("slow-c", t0.Add(time.Minute))
	p := ledger.CleanupParams{Now: t0.Add(90 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: time.Hour}
	rep, err := store.Cleanup(ctx, p)
	require.NoError(t, err)
	require.Equal(t, 1, rep.FeedPurged, "slow-a, which the consumer applied, is purged; slow-b and slow-c are kept")
	create("slow-d", t0.Add(90*24*time.Hour))

	run()
	require.Len(t, appliedCounts(t, pool, schema, "slow"), 4, "slow-b and slow-c reach the handler: the purge kept them for the consumer")
	rep, err = store.Cleanup(ctx, p)
	require.NoError(t, err)
	require.Equal(t, 2, rep.FeedPurged, "once applied, they go")
}
