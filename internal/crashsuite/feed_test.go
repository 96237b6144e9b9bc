package crashsuite

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// The settlement feed across a crash of the PostgreSQL server: what Feed
// handed out is still in the ledger after the crash, and what is written
// after it comes after the consumer's cursor.
//
// Finish commits lazily (synchronous_commit off): its commit is visible at
// once but stays in the server's WAL buffers until the WAL writer writes
// it out, at most every wal_writer_delay (here its maximum, 10 s, and the
// background writer, which could write it while evicting pages, is off).
// The server is then killed (pg_ctl stop -m immediate: no shutdown
// checkpoint, the buffers are lost) right after the consumer read the
// feed. A Feed that handed out those entries without making them durable
// first would leave the consumer with settlements the ledger no longer
// holds, and, the lost transaction ids being handed out again, with a
// cursor past the entries written after the crash.
func TestFeedSurvivesServerCrash(t *testing.T) {
	pg := startPostgres(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg.URL())
	require.NoError(t, err)
	for _, stmt := range []string{"ALTER SYSTEM SET wal_writer_delay = '10s'", "ALTER SYSTEM SET bgwriter_lru_maxpages = 0", "SELECT pg_reload_conf()"} {
		_, err := admin.Exec(ctx, stmt)
		require.NoError(t, err)
	}
	require.NoError(t, admin.Close(ctx))

	open := func() (*pgxpool.Pool, *ledgerpg.Store) {
		pool, err := pgxpool.New(ctx, pg.URL())
		require.NoError(t, err)
		s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: "feed_crash"})
		require.NoError(t, err)
		return pool, s
	}
	pool, s := open()
	require.NoError(t, s.Migrate(ctx))
	now := time.Now().UTC()
	ids := []string{"op-1", "op-2"}
	attempts := map[string]int{}
	for _, id := range ids { // durable: the attempt journal
		res, err := s.Begin(ctx, ledger.BeginParams{Op: ledgertest.NewOp(id), Owner: "w", Now: now, LeaseUntil: now.Add(time.Hour), StartAttempt: true})
		require.NoError(t, err)
		attempts[id] = res.Attempt.Number
	}
	for _, id := range ids { // lazy: the outcomes
		_, err := s.Finish(ctx, ledger.FinishParams{ID: id, Owner: "w", Now: now, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
			Attempt: &ledger.AttemptOutcome{Number: attempts[id], Class: ledger.OutcomeSuccess}, ProviderRef: "pi_" + id})
		require.NoError(t, err)
	}
	var given []ledger.FeedEntry
	for deadline := time.Now().Add(5 * time.Second); len(given) < 4 && time.Now().Before(deadline); {
		given, err = s.Feed(ctx, ledger.FeedParams{})
		require.NoError(t, err)
	}
	require.Len(t, given, 4, "two creations and two settlements")
	cursor := given[3].Cursor

	pool.Close()
	out, err := pg.pgCtl(2*time.Minute, "stop", "-m", "immediate")
	require.NoError(t, err, "%s", out)
	out, err = pg.pgCtl(2*time.Minute, "start")
	require.NoError(t, err, "%s\n%s", out, pg.log())

	pool, s = open()
	defer pool.Close()
	for _, id := range ids {
		op, _, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, ledger.StatusSucceeded, op.Status, "%s: the feed handed out its settlement, the crash must not take it back", id)
	}
	_, _, err = s.CreateOrGet(ctx, ledgertest.NewOp("op-after"), now)
	require.NoError(t, err)
	var after []ledger.FeedEntry
	for deadline := time.Now().Add(5 * time.Second); len(after) == 0 && time.Now().Before(deadline); {
		after, err = s.Feed(ctx, ledger.FeedParams{After: cursor})
		require.NoError(t, err)
	}
	require.Len(t, after, 1, "the entry written after the crash comes after the consumer's cursor")
	require.Equal(t, "op-after", after[0].OperationID)
}
