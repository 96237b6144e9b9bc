package ledgerpg_test

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

// ordersTable creates the application's business table next to the
// ledger's and returns its quoted name.
func ordersTable(t *testing.T, pool *pgxpool.Pool, schema string) string {
	t.Helper()
	name := table(schema, "orders")
	_, err := pool.Exec(t.Context(), "CREATE TABLE "+name+" (id text PRIMARY KEY, amount integer NOT NULL)")
	require.NoError(t, err)
	return name
}

// createOrGetInTx is CreateOrGetTx in a transaction of the caller's own,
// begun on pool and committed unless the call fails.
func createOrGetInTx(ctx context.Context, s *ledgerpg.Store, pool *pgxpool.Pool, op ledger.NewOperation, now time.Time) (got ledger.Operation, created bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		got, created, err = s.CreateOrGetTx(ctx, tx, op, now)
		return err
	})
	return got, created, err
}

// callerTx is the application's pgx.Tx as ledgertest.RunCreateOrGetTx
// drives it.
type callerTx struct {
	s      *ledgerpg.Store
	tx     pgx.Tx
	orders string
}

func (c callerTx) CreateOrGet(ctx context.Context, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	return c.s.CreateOrGetTx(ctx, c.tx, n, now)
}

func (c callerTx) InsertOrder(ctx context.Context, id string, amount int) error {
	_, err := c.tx.Exec(ctx, "INSERT INTO "+c.orders+" VALUES ($1, $2)", id, amount)
	return err
}

// RequireUsable checks that PostgreSQL did not abort the transaction: a
// failed statement would leave it in state 'E', refusing everything until
// the rollback.
func (c callerTx) RequireUsable(t *testing.T) {
	require.Equal(t, byte('T'), c.tx.Conn().PgConn().TxStatus(), "in a transaction, not aborted ('E')")
}

func (c callerTx) Commit(ctx context.Context) error   { return c.tx.Commit(ctx) }
func (c callerTx) Rollback(ctx context.Context) error { return c.tx.Rollback(ctx) }

func TestCreateOrGetTx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ledgertest.RunCreateOrGetTx(t, func(t *testing.T) *ledgertest.TxHarness {
		s, pool := newStore(t)
		orders := ordersTable(t, pool, s.Schema())
		return &ledgertest.TxHarness{
			Store: s,
			Begin: func(t *testing.T) ledgertest.CallerTx {
				tx, err := pool.Begin(t.Context())
				require.NoError(t, err)
				return callerTx{s, tx, orders}
			},
			CreateOrGetNilTx: func(ctx context.Context, n ledger.NewOperation, now time.Time) error {
				_, _, err := s.CreateOrGetTx(ctx, nil, n, now)
				return err
			},
			Orders:            func(t *testing.T) int { return countRows(t, pool, orders) },
			Operations:        func(t *testing.T) int { return countRows(t, pool, table(s.Schema(), "payonce_operations")) },
			WritesRunBesideTx: true,
		}
	})

	// CreateOrGet is CreateOrGetTx in a transaction of its own: one commit.
	t.Run("CreateOrGetCommitsOnce", func(t *testing.T) {
		t.Parallel()
		s, counter := countingStore(t)
		_, created, err := s.CreateOrGet(context.Background(), newOp("op-1"), t0)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, int64(1), counter.commits.Load())
		_, _, err = s.CreateOrGet(context.Background(), withOtherRequest(newOp("op-1")), t0)
		require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
		require.Equal(t, int64(1), counter.commits.Load(), "a refused call commits nothing")
	})

	// Under REPEATABLE READ, a snapshot taken before the Cleanup committed
	// cannot see the tombstone: the call refuses rather than recreate the
	// operation.
	t.Run("RepeatableReadSnapshotBeforeCleanup", func(t *testing.T) {
		t.Parallel()
		s, pool := newStore(t)
		op := finishedOp(t, s, "op-1")
		tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // the test ends with it
		// The first statement takes the snapshot.
		_, err = tx.Exec(ctx, "SELECT 1 FROM "+table(s.Schema(), "payonce_tombstones"))
		require.NoError(t, err)
		_, err = s.Cleanup(ctx, cleanupAt(cleanedAt))
		require.NoError(t, err)

		_, _, err = s.CreateOrGetTx(ctx, tx, op, cleanedAt.Add(time.Hour))
		require.ErrorContains(t, err, "removed by a concurrent Cleanup")
		require.NoError(t, tx.Rollback(ctx))
		require.Zero(t, countRows(t, pool, table(s.Schema(), "payonce_operations")))
		got, _, err := s.Get(ctx, op.ID)
		require.NoError(t, err)
		require.True(t, got.Tombstone)
	})
}

// A caller's transaction that recorded an operation with CreateOrGetTx and
// stays open makes a Begin of the same operation wait on its row, without
// limit. The lease Begin grants is stamped with the time the caller read
// before the call: when the wait outlasts it, Begin must not hand back a
// lease that has already lapsed (a reconciler could take the operation over
// while the caller sends). Begin fails with ErrLeaseLost and journals
// nothing. When the caller's transaction rolls back, Begin's own insert goes
// ahead after the wait, and the check after it refuses the whole trip: no
// row, no attempt and no feed entry is left.
func TestBeginWaitingOnCallersTransactionGrantsNoLapsedLease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, c := range []struct {
		name     string
		lease    time.Duration
		rollback bool
		ok       bool
	}{
		{"lease shorter than the wait", 300 * time.Millisecond, false, false},
		{"lease longer than the wait", time.Minute, false, true},
		{"caller rolls back, lease shorter than the wait", 300 * time.Millisecond, true, false},
		{"caller rolls back, lease longer than the wait", time.Minute, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, pool := newStore(t)
			// Warm the pool up, so that the Begin below reaches the row
			// lock at once rather than spend its lease connecting.
			_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-warm"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
			require.NoError(t, err)
			op := newOp("op-1")
			holder, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer holder.Rollback(ctx) //nolint:errcheck // committed below
			_, created, err := s.CreateOrGetTx(ctx, holder, op, t0)
			require.NoError(t, err)
			require.True(t, created)

			type result struct {
				res ledger.BeginResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "caller", Now: t0, LeaseUntil: t0.Add(c.lease), StartAttempt: true})
				done <- result{res, err}
			}()
			end := holder.Commit
			if c.rollback {
				end = holder.Rollback
			}
			var r result
			select {
			case r = <-done:
				// Only a lease that lapsed before Begin reached the lock (a
				// loaded machine) may end the call before the holder does.
				require.False(t, c.ok, "Begin did not wait for the open transaction: %+v, %v", r.res, r.err)
				require.NoError(t, end(ctx))
			case <-time.After(600 * time.Millisecond):
				require.NoError(t, end(ctx))
				r = <-done
			}

			got, atts, err := s.Get(ctx, op.ID)
			if c.rollback && !c.ok {
				require.ErrorIs(t, r.err, ledger.ErrLeaseLost)
				require.ErrorIs(t, err, ledger.ErrNotFound, "the insert was rolled back")
				require.Equal(t, 1, countRows(t, pool, table(s.Schema(), "payonce_attempts")), "only op-warm's")
				var fed int
				require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+table(s.Schema(), "payonce_feed")+" WHERE operation_id = $1", op.ID).Scan(&fed))
				require.Zero(t, fed, "no feed entry of the refused insert")
				return
			}
			require.NoError(t, err)
			if c.ok {
				require.NoError(t, r.err)
				require.NotNil(t, r.res.Attempt)
				require.Len(t, atts, 1)
				return
			}
			require.ErrorIs(t, r.err, ledger.ErrLeaseLost)
			require.ErrorContains(t, r.err, `operation "op-1": the lease would have lapsed before it was granted: the write waited`)
			require.Empty(t, atts, "nothing was journaled")
			require.Equal(t, ledger.StatusPending, got.Status, "the operation is still pending")
			require.Empty(t, got.LeaseOwner, "and nobody holds it")
			require.Equal(t, 1, countRows(t, pool, table(s.Schema(), "payonce_attempts")), "only op-warm's")
		})
	}
}

func TestKeyOfAnotherOperation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)

	other := newOp("op-2")
	other.Generation, other.Key = 1, "op-1" // a (buggy) key already used by op-1
	_, err = s.Begin(ctx, ledger.BeginParams{Op: other, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.ErrorIs(t, err, ledger.ErrKeyConflict)
	_, _, err = s.CreateOrGet(ctx, other, t0)
	require.ErrorIs(t, err, ledger.ErrKeyConflict)
	_, _, err = s.Get(ctx, "op-2")
	require.ErrorIs(t, err, ledger.ErrNotFound)
}
