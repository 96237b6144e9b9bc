package ledgersqlite_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// createApplied creates the table countingHandler writes.
func createApplied(t testing.TB, db *sql.DB) {
	t.Helper()
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS consumer_applied (name TEXT, cursor TEXT, n INTEGER NOT NULL, PRIMARY KEY (name, cursor))`)
	require.NoError(t, err)
}

// countingHandler adds one to the entry's count in consumer_applied, in
// the consumer's transaction, after refuse (when non-nil) let it through.
func countingHandler(name string, refuse func(ledger.FeedEntry) error) func(context.Context, *sql.Tx, ledger.FeedEntry) error {
	return func(ctx context.Context, tx *sql.Tx, e ledger.FeedEntry) error {
		if refuse != nil {
			if err := refuse(e); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO consumer_applied (name, cursor, n) VALUES (?1, ?2, 1)
			ON CONFLICT (name, cursor) DO UPDATE SET n = n + 1`, name, string(e.Cursor))
		return err
	}
}

// appliedCounts reads consumer_applied for consumer name.
func appliedCounts(t testing.TB, db *sql.DB, name string) map[ledger.FeedCursor]int {
	t.Helper()
	rows, err := db.Query(`SELECT cursor, n FROM consumer_applied WHERE name = ?1`, name)
	require.NoError(t, err)
	defer rows.Close()
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

func TestConformance(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, func(t *testing.T) *ledgertest.Harness {
		path := dbPath(t)
		current := openAt(t, path)
		raw := rawDB(t, path) // connects when first used
		return &ledgertest.Harness{
			Store:       current,
			OpenAnother: func(t *testing.T) ledger.Store { return openUnmigrated(t, path) },
			Reopen: func(t *testing.T) ledger.Store {
				require.NoError(t, current.Close())
				current = openAt(t, path)
				return current
			},
			SetRawStatus: func(t *testing.T, id, status string) {
				res, err := rawDB(t, path).Exec(`UPDATE payonce_operations SET status = ? WHERE id = ?`, status, id)
				require.NoError(t, err)
				n, err := res.RowsAffected()
				require.NoError(t, err)
				require.EqualValues(t, 1, n, "no operation %q", id)
			},
			SetRawEventKind: func(t *testing.T, id string, seq int, kind string) {
				res, err := rawDB(t, path).Exec(`UPDATE payonce_events SET kind = ? WHERE operation_id = ? AND seq = ?`, kind, id, seq)
				require.NoError(t, err)
				n, err := res.RowsAffected()
				require.NoError(t, err)
				require.EqualValues(t, 1, n, "no event %d of %q", seq, id)
			},
			BlockWrites: func(t *testing.T) func() {
				// Another process holding the file's write lock.
				return holdWriteLock(t, rawDB(t, path))
			},
			Consumer: func(t *testing.T, s ledger.Store, name string, opts ledger.ConsumerOptions, refuse func(ledger.FeedEntry) error) (ledgertest.TestConsumer, error) {
				createApplied(t, raw)
				return ledgersqlite.NewConsumer(s.(*ledgersqlite.Store), name, countingHandler(name, refuse), opts)
			},
			Applied: func(t *testing.T, name string) map[ledger.FeedCursor]int {
				createApplied(t, raw)
				return appliedCounts(t, raw, name)
			},
		}
	})
}

// holdWriteLock takes the database's write lock on a connection of db (BEGIN
// IMMEDIATE), as another process's writer would, until the returned release
// rolls it back.
func holdWriteLock(t *testing.T, db *sql.DB) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	return func() {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		_ = conn.Close()
	}
}
