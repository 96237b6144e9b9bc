package ledgerpg_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
)

// Begin on a tombstoned ID is refused inside its one trip (the guard after
// the insert fails the transaction): nothing of the insert survives (no
// operation row, no attempt, no feed entry), the pool's only connection is
// back outside a transaction and usable, and the session's
// synchronous_commit, set for the transaction only, is what it was. Under
// every default isolation the server may have, in every pgx exec mode.
func TestRefusedBeginLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	type setup struct {
		level string
		mode  pgx.QueryExecMode
	}
	var setups []setup
	for _, level := range []string{"read committed", "repeatable read", "serializable"} {
		setups = append(setups, setup{level, pgx.QueryExecModeCacheStatement})
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		setups = append(setups, setup{"repeatable read", mode})
	}
	for _, c := range setups {
		level := c.level
		t.Run(level+"/"+c.mode.String(), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s, pool := storeWith(t, func(cfg *pgxpool.Config) {
				maxConns(1)(cfg)
				cfg.ConnConfig.DefaultQueryExecMode = c.mode
				onConnect("SET default_transaction_isolation = '" + level + "'; SET synchronous_commit = 'local'")(cfg)
			})
			schema := s.Schema()
			op := finishedOp(t, s, "op-1")
			_, err := s.Cleanup(ctx, cleanupAt(cleanedAt))
			require.NoError(t, err)
			require.Equal(t, 1, countRows(t, pool, table(schema, "payonce_tombstones")))
			require.Zero(t, countRows(t, pool, table(schema, "payonce_operations")))
			feed := countRows(t, pool, table(schema, "payonce_feed"))
			attempts := countRows(t, pool, table(schema, "payonce_attempts"))

			now := cleanedAt.Add(time.Minute)
			res, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w2", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
			require.NoError(t, err)
			require.True(t, res.Op.Tombstone, "the tombstone answers")
			require.False(t, res.Created)
			require.False(t, res.Claimed)

			require.Zero(t, countRows(t, pool, table(schema, "payonce_operations")), "no half-inserted operation")
			require.Equal(t, attempts, countRows(t, pool, table(schema, "payonce_attempts")), "no attempt")
			require.Equal(t, feed, countRows(t, pool, table(schema, "payonce_feed")), "no feed entry")
			require.Zero(t, liveAndTombstoned(t, pool, schema))

			conn, err := pool.Acquire(ctx)
			require.NoError(t, err)
			defer conn.Release()
			require.Equal(t, byte('I'), conn.Conn().PgConn().TxStatus(), "the connection is outside a transaction")
			var sync, iso string
			require.NoError(t, conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sync))
			require.NoError(t, conn.QueryRow(ctx, "SHOW transaction_isolation").Scan(&iso))
			require.Equal(t, "local", sync, "Begin's synchronous_commit is its transaction's only")
			require.Equal(t, level, iso)
			conn.Release()

			// The next use of the connection works: a new operation is created.
			_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-2"), Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
			require.NoError(t, err)
			require.NoError(t, pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sync))
			require.Equal(t, "local", sync)
		})
	}
}

// A Begin whose lease lapses while its one trip waits (the guard refuses
// it in the database) writes nothing and leaves the connection usable.
func TestBeginLeaseLapsedInTripLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := storeWith(t, maxConns(1))
	schema := s.Schema()
	// Warm the only connection up: its statements are prepared, so the
	// wait below is inside the trip.
	now := time.Now()
	_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("warm"), Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	feed := countRows(t, pool, table(schema, "payonce_feed"))

	lockTx, err := testkit.NewPool(t).Begin(ctx)
	require.NoError(t, err)
	_, err = lockTx.Exec(ctx, "LOCK TABLE "+table(schema, "payonce_operations")+" IN EXCLUSIVE MODE")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		now := time.Now()
		_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: now, LeaseUntil: now.Add(300 * time.Millisecond), StartAttempt: true})
		done <- err
	}()
	time.Sleep(800 * time.Millisecond)
	require.NoError(t, lockTx.Rollback(ctx))
	err = <-done
	require.ErrorIs(t, err, ledger.ErrLeaseLost)
	require.Equal(t, 1, countRows(t, pool, table(schema, "payonce_operations")), "only the warm-up operation")
	require.Equal(t, 1, countRows(t, pool, table(schema, "payonce_attempts")))
	require.Equal(t, feed, countRows(t, pool, table(schema, "payonce_feed")))

	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, byte('I'), conn.Conn().PgConn().TxStatus())
	conn.Release()
	now = time.Now()
	_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-2"), Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
}
