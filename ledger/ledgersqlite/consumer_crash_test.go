package ledgersqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/childproc"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// The environment of TestConsumerChild, set by TestConsumerSIGKILL.
const (
	consumerChildEnv   = "PAYONCE_CONSUMER_CHILD_PATH"
	consumerChildKill  = "PAYONCE_CONSUMER_CHILD_KILL_AT"
	consumerChildLimit = "PAYONCE_CONSUMER_CHILD_LIMIT"
)

// TestConsumerChild is the child of TestConsumerSIGKILL (skipped
// otherwise): a consumer "crash" of the database file in the environment
// whose handler counts each entry in consumer_applied and, at the
// operation to kill at, prints "WROTE" after its write and blocks, its
// transaction open, until the parent kills the process.
func TestConsumerChild(t *testing.T) {
	path := os.Getenv(consumerChildEnv)
	if path == "" {
		t.Skip("the child of TestConsumerSIGKILL")
	}
	killAt := os.Getenv(consumerChildKill)
	limit, err := strconv.Atoi(os.Getenv(consumerChildLimit))
	require.NoError(t, err)
	store, err := ledgersqlite.Open(path, ledgersqlite.Config{})
	require.NoError(t, err)
	count := countingHandler("crash", nil)
	c, err := ledgersqlite.NewConsumer(store, "crash", func(ctx context.Context, tx *sql.Tx, e ledger.FeedEntry) error {
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
	require.NoError(t, c.Run(context.Background())) // never returns
}

// A consumer process killed (SIGKILL) between its handler's write and its
// COMMIT leaves nothing of that page, and a restarted consumer applies
// every entry exactly once.
func TestConsumerSIGKILL(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	store := openAt(t, path)
	raw := rawDB(t, path)
	createApplied(t, raw)
	ctx := context.Background()
	for i := range 9 {
		_, _, err := store.CreateOrGet(ctx, ledgertest.NewOp(fmt.Sprintf("crash-%d", i)), time.Now())
		require.NoError(t, err)
	}
	entries, err := store.Feed(ctx, ledger.FeedParams{})
	require.NoError(t, err)
	require.Len(t, entries, 9)

	child, err := childproc.Start(ctx, childproc.Spec{
		Name:    "consumer",
		Args:    []string{"-test.run=^TestConsumerChild$", "-test.v"},
		Env:     []string{consumerChildEnv + "=" + path, consumerChildKill + "=crash-5", consumerChildLimit + "=2"},
		Timeout: 2 * time.Minute,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = child.Kill() })
	_, err = child.WaitLine("WROTE", time.Minute)
	require.NoError(t, err, "%s", child.Describe())
	require.Len(t, appliedCounts(t, raw, "crash"), 4, "two pages committed before the kill; the third is open")
	require.NoError(t, child.Kill())
	require.Len(t, appliedCounts(t, raw, "crash"), 4, "the killed page left nothing")

	c, err := ledgersqlite.NewConsumer(store, "crash", countingHandler("crash", nil), ledger.ConsumerOptions{Poll: 20 * time.Millisecond, Limit: 2})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	require.Eventually(t, func() bool { return len(appliedCounts(t, raw, "crash")) == len(entries) },
		20*time.Second, 10*time.Millisecond, "the restarted consumer applies the rest")
	cancel()
	require.NoError(t, <-done)
	got := appliedCounts(t, raw, "crash")
	for _, e := range entries {
		require.Equal(t, 1, got[e.Cursor], "%s applied exactly once", e.OperationID)
	}
}
