package ledgerpg_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// TestConformance runs the suite every ledger.Store passes, each subtest in
// its own schema.
func TestConformance(t *testing.T) {
	t.Parallel()
	testkit.URL(t) // skip (or fail) once, up front, without a database
	ledgertest.Run(t, func(t *testing.T) *ledgertest.Harness {
		pool, schema := freshSchema(t)
		return harness(t, pool, schema)
	})
}

// harness is the conformance harness of a migrated store on schema, created
// with pool.
func harness(t *testing.T, pool *pgxpool.Pool, schema string) *ledgertest.Harness {
	store := migratedStore(t, pool, schema)
	return &ledgertest.Harness{
		Store:       store,
		OpenAnother: func(t *testing.T) ledger.Store { return storeOn(t, schema) },
		Reopen: func(t *testing.T) ledger.Store {
			pool.Close() // the old store's connections are gone; the data is not
			pool = testkit.NewPool(t)
			s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
			require.NoError(t, err)
			return s
		},
		SetRawStatus: func(t *testing.T, id, status string) {
			tag, err := pool.Exec(context.Background(),
				"UPDATE "+table(schema, "payonce_operations")+" SET status = $2 WHERE id = $1", id, status)
			require.NoError(t, err)
			require.Equal(t, int64(1), tag.RowsAffected(), "no operation %q", id)
		},
		SetRawEventKind: func(t *testing.T, id string, seq int, kind string) {
			tag, err := pool.Exec(context.Background(),
				"UPDATE "+table(schema, "payonce_events")+" SET kind = $3 WHERE operation_id = $1 AND seq = $2", id, seq, kind)
			require.NoError(t, err)
			require.Equal(t, int64(1), tag.RowsAffected(), "no event %d of %q", seq, id)
		},
		BlockWrites: func(t *testing.T) func() {
			// What a caller's open transaction holding the table (or
			// rows the call needs) does to the store's writes.
			return lockTable(t, testkit.NewPool(t), schema, "payonce_operations")
		},
		HoldOperation: func(t *testing.T, id string) (func() bool, func()) {
			return holdRow(t, testkit.NewPool(t), schema, id)
		},
		Consumer: func(t *testing.T, s ledger.Store, name string, opts ledger.ConsumerOptions, refuse func(ledger.FeedEntry) error) (ledgertest.TestConsumer, error) {
			createApplied(t, pool, schema)
			return ledgerpg.NewConsumer(s.(*ledgerpg.Store), name, countingHandler(schema, name, refuse), opts)
		},
		Applied: func(t *testing.T, name string) map[ledger.FeedCursor]int {
			createApplied(t, pool, schema)
			return appliedCounts(t, pool, schema, name)
		},
	}
}

// createApplied creates the table countingHandler writes, in schema.
func createApplied(t testing.TB, pool *pgxpool.Pool, schema string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS `+table(schema, "consumer_applied")+` (
		name text, cursor text, n integer NOT NULL, PRIMARY KEY (name, cursor))`)
	if err != nil && !isDuplicate(err) {
		require.NoError(t, err)
	}
}

// isDuplicate reports the catalog race of two CREATE TABLE IF NOT EXISTS.
func isDuplicate(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07")
}

// countingHandler adds one to the entry's count in consumer_applied, in
// the consumer's transaction, after refuse (when non-nil) let it through.
func countingHandler(schema, name string, refuse func(ledger.FeedEntry) error) func(context.Context, pgx.Tx, ledger.FeedEntry) error {
	stmt := `INSERT INTO ` + table(schema, "consumer_applied") + ` AS a (name, cursor, n) VALUES ($1, $2, 1)
		ON CONFLICT (name, cursor) DO UPDATE SET n = a.n + 1`
	return func(ctx context.Context, tx pgx.Tx, e ledger.FeedEntry) error {
		if refuse != nil {
			if err := refuse(e); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, stmt, name, string(e.Cursor))
		return err
	}
}

// appliedCounts reads consumer_applied for consumer name.
func appliedCounts(t testing.TB, pool *pgxpool.Pool, schema, name string) map[ledger.FeedCursor]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT cursor, n FROM `+table(schema, "consumer_applied")+` WHERE name = $1`, name)
	require.NoError(t, err)
	out := map[ledger.FeedCursor]int{}
	for rows.Next() {
		var c string
		var n int
		require.NoError(t, rows.Scan(&c, &n))
		out[ledger.FeedCursor(c)] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// holdRow locks the row of operation id in schema (SELECT ... FOR UPDATE)
// in a transaction of its own, until the returned release rolls it back;
// waiting reports whether another transaction waits for it.
func holdRow(t *testing.T, pool *pgxpool.Pool, schema, id string) (waiting func() bool, release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	var xid string
	require.NoError(t, tx.QueryRow(ctx, "SELECT pg_current_xact_id()::xid::text FROM "+table(schema, "payonce_operations")+
		" WHERE id = $1 FOR UPDATE", id).Scan(&xid))
	// A transaction waiting for a row lock waits for the holder's
	// transaction id to end.
	waiting = func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks
			WHERE locktype = 'transactionid' AND transactionid = $1::text::xid AND NOT granted`, xid).Scan(&n))
		return n > 0
	}
	return waiting, func() { _ = tx.Rollback(ctx) }
}

// lockTable locks a table of schema against every write (EXCLUSIVE mode:
// reads still run) in a transaction of its own, until the returned release
// rolls it back.
func lockTable(t *testing.T, pool *pgxpool.Pool, schema, name string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "LOCK TABLE "+table(schema, name)+" IN EXCLUSIVE MODE")
	require.NoError(t, err)
	return func() { _ = tx.Rollback(ctx) }
}
