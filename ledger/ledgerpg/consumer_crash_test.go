package ledgerpg_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/childproc"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// The environment of TestConsumerChild, set by TestConsumerSIGKILL.
const (
	consumerChildEnv   = "PAYONCE_CONSUMER_CHILD_SCHEMA"
	consumerChildKill  = "PAYONCE_CONSUMER_CHILD_KILL_AT"
	consumerChildLimit = "PAYONCE_CONSUMER_CHILD_LIMIT"
)

// TestConsumerChild is the child of TestConsumerSIGKILL (skipped
// otherwise): a consumer "crash" of the schema in the environment whose
// handler counts each entry in consumer_applied and, at the operation to
// kill at, prints "WROTE" after its write and blocks, its transaction
// open, until the parent kills the process.
func TestConsumerChild(t *testing.T) {
	schema := os.Getenv(consumerChildEnv)
	if schema == "" {
		t.Skip("the child of TestConsumerSIGKILL")
	}
	killAt := os.Getenv(consumerChildKill)
	limit, err := strconv.Atoi(os.Getenv(consumerChildLimit))
	require.NoError(t, err)
	ctx := context.Background()
	pool, store, err := childproc.OpenLedger(ctx, testkit.URL(t), schema, nil)
	require.NoError(t, err)
	defer pool.Close()
	count := countingHandler(schema, "crash", nil)
	c, err := ledgerpg.NewConsumer(store, "crash", func(ctx context.Context, tx pgx.Tx, e ledger.FeedEntry) error {
		if err := count(ctx, tx, e); err != nil {
			return err
		}
		if e.OperationID == killAt {
			fmt.Println("WROTE", e.Cursor)
			select {} // killed here: the write is made, the COMMIT is not
		}
		return nil
	}, ledger.ConsumerOptions{Poll: 20 * time.Millisecond, Limit: limit})
	require.NoError(t, err)
	require.NoError(t, c.Run(ctx)) // never returns
}

// A consumer process killed (SIGKILL) between its handler's write and its
// COMMIT leaves nothing of that page, and a restarted consumer applies
// every entry exactly once: the pages committed before the kill are not
// applied again, the page in flight is applied once.
func TestConsumerSIGKILL(t *testing.T) {
	t.Parallel()
	store, pool := newStore(t)
	ctx := context.Background()
	createApplied(t, pool, store.Schema())
	ids := make([]string, 9)
	for i := range ids {
		ids[i] = fmt.Sprintf("crash-%d", i)
		_, _, err := store.CreateOrGet(ctx, ledgertest.NewOp(ids[i]), time.Now())
		require.NoError(t, err)
	}
	var entries []ledger.FeedEntry
	require.Eventually(t, func() bool {
		var err error
		entries, err = store.Feed(ctx, ledger.FeedParams{})
		require.NoError(t, err)
		return len(entries) == len(ids)
	}, 20*time.Second, 10*time.Millisecond)

	// Pages of 2: the pages of crash-0..3 commit, crash-5 is killed in
	// the page of crash-4 and crash-5 (crash-4 written, not committed).
	child, err := childproc.Start(ctx, childproc.Spec{
		Name:    "consumer",
		Args:    []string{"-test.run=^TestConsumerChild$", "-test.v"},
		Env:     []string{consumerChildEnv + "=" + store.Schema(), consumerChildKill + "=crash-5", consumerChildLimit + "=2"},
		Timeout: 2 * time.Minute,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = child.Kill() })
	_, err = child.WaitLine("WROTE", time.Minute)
	require.NoError(t, err, "%s", child.Describe())
	require.Len(t, appliedCounts(t, pool, store.Schema(), "crash"), 4, "two pages committed before the kill; the third is open")
	require.NoError(t, child.Kill())

	got := appliedCounts(t, pool, store.Schema(), "crash")
	require.Len(t, got, 4, "the killed page left nothing: %v", got)
	for _, e := range entries[:4] {
		require.Equal(t, 1, got[e.Cursor], "%s", e.OperationID)
	}

	c, err := ledgerpg.NewConsumer(store, "crash", countingHandler(store.Schema(), "crash", nil), ledger.ConsumerOptions{Poll: 20 * time.Millisecond, Limit: 2})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	require.Eventually(t, func() bool {
		return len(appliedCounts(t, pool, store.Schema(), "crash")) == len(entries)
	}, 20*time.Second, 10*time.Millisecond, "the restarted consumer applies the rest")
	cancel()
	require.NoError(t, <-done)
	got = appliedCounts(t, pool, store.Schema(), "crash")
	for _, e := range entries {
		require.Equal(t, 1, got[e.Cursor], "%s applied exactly once", e.OperationID)
	}
}
