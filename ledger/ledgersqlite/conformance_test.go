package ledgersqlite_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgertest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, func(t *testing.T) *ledgertest.Harness {
		path := dbPath(t)
		current := openAt(t, path)
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
