package ledgersqlite_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// callerDB opens the application's own *sql.DB on the ledger's file, set up
// as CreateOrGetTx's documentation advises, with a business table.
func callerDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: path, RawQuery: "_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)"}
	db, err := sql.Open("sqlite", u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Exec(`CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, amount INTEGER NOT NULL)`)
	require.NoError(t, err)
	return db
}

// callerTx is the application's *sql.Tx as ledgertest.RunCreateOrGetTx
// drives it.
type callerTx struct {
	s  *ledgersqlite.Store
	tx *sql.Tx
}

func (c callerTx) CreateOrGet(ctx context.Context, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	return c.s.CreateOrGetTx(ctx, c.tx, n, now)
}

func (c callerTx) InsertOrder(ctx context.Context, id string, amount int) error {
	_, err := c.tx.ExecContext(ctx, `INSERT INTO orders VALUES (?, ?)`, id, amount)
	return err
}

// RequireUsable has nothing to add: SQLite has no aborted state, and the
// suite goes on writing in the transaction.
func (c callerTx) RequireUsable(*testing.T) {}

func (c callerTx) Commit(context.Context) error   { return c.tx.Commit() }
func (c callerTx) Rollback(context.Context) error { return c.tx.Rollback() }

func TestCreateOrGetTx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ledgertest.RunCreateOrGetTx(t, func(t *testing.T) *ledgertest.TxHarness {
		path := dbPath(t)
		s := openAt(t, path)
		db := callerDB(t, path)
		return &ledgertest.TxHarness{
			Store: s,
			Begin: func(t *testing.T) ledgertest.CallerTx {
				tx, err := db.BeginTx(t.Context(), nil)
				require.NoError(t, err)
				return callerTx{s, tx}
			},
			CreateOrGetNilTx: func(ctx context.Context, n ledger.NewOperation, now time.Time) error {
				_, _, err := s.CreateOrGetTx(ctx, nil, n, now)
				return err
			},
			Orders:     func(t *testing.T) int { return countRows(t, db, "orders") },
			Operations: func(t *testing.T) int { return countRows(t, db, "payonce_operations") },
		}
	})

	// With New, the store and the application share one *sql.DB. A store
	// write made while the caller's transaction holds the write lock waits
	// for it (busy timeout) instead of failing.
	t.Run("SharedDBWithNew", func(t *testing.T) {
		t.Parallel()
		db := callerDB(t, dbPath(t))
		s, err := ledgersqlite.New(db, ledgersqlite.Config{})
		require.NoError(t, err)
		require.NoError(t, s.Migrate(ctx))

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, `INSERT INTO orders VALUES ('order-1', 1000)`)
		require.NoError(t, err)
		_, created, err := s.CreateOrGetTx(ctx, tx, newOp("op-1"), t0)
		require.NoError(t, err)
		require.True(t, created)

		other := make(chan error, 1)
		go func() {
			_, err := s.Begin(context.Background(), begin(newOp("op-2"), "w", t0, true))
			other <- err
		}()
		require.NoError(t, tx.Commit())
		require.NoError(t, <-other)

		for _, id := range []string{"op-1", "op-2"} {
			_, _, err := s.Get(ctx, id)
			require.NoError(t, err, id)
		}
		require.Equal(t, 1, countRows(t, db, "orders"))
	})
}
