package ledgerpg_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// newStore returns a migrated store in a fresh schema, with its pool.
func newStore(t testing.TB) (*ledgerpg.Store, *pgxpool.Pool) {
	t.Helper()
	pool, schema := freshSchema(t)
	return migratedStore(t, pool, schema), pool
}

// freshSchema is a new pool and a new, empty schema, both gone when the
// test ends.
func freshSchema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	pool := testkit.NewPool(t)
	return pool, testkit.NewSchema(t, pool)
}

// storeOn opens a store on schema with a pool of its own, as another
// process would (Migrate not called).
func storeOn(t testing.TB, schema string) *ledgerpg.Store {
	t.Helper()
	s, err := ledgerpg.New(testkit.NewPool(t), ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	return s
}

// maxConns is a storeWith configuration: at most n connections.
func maxConns(n int32) func(*pgxpool.Config) {
	return func(cfg *pgxpool.Config) { cfg.MaxConns = n }
}

// onConnect is a storeWith configuration: every new connection runs stmt
// first (a session default, as an ALTER ROLE ... SET would give it).
func onConnect(stmt string) func(*pgxpool.Config) {
	return func(cfg *pgxpool.Config) {
		cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, stmt)
			return err
		}
	}
}

// storeWith is newStore on a pool that configure set up.
func storeWith(t testing.TB, configure func(*pgxpool.Config)) (*ledgerpg.Store, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testkit.URL(t))
	require.NoError(t, err)
	configure(cfg)
	pool := testkit.NewPoolConfig(t, cfg)
	return migratedStore(t, pool, testkit.NewSchema(t, pool)), pool
}

// unmigratedStore returns a store in a fresh, empty schema (Migrate not
// called), with its pool.
func unmigratedStore(t testing.TB) (*ledgerpg.Store, *pgxpool.Pool) {
	t.Helper()
	pool := testkit.NewPool(t)
	s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: testkit.NewSchema(t, pool)})
	require.NoError(t, err)
	return s, pool
}

// offlinePool is a pool that never connects: for what needs no database.
func offlinePool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// seededStore is a migrated store in a fresh schema, with its pool, whose
// operations table one statement filled with rows operations: INSERT INTO
// the table followed by insert (its columns and a SELECT), with args. The
// table is then vacuumed and analyzed, as autovacuum would leave it. Large
// ledgers take a while to seed, so the benchmark is skipped in -short mode.
func seededStore(b *testing.B, rows int, insert string, args ...any) (*ledgerpg.Store, *pgxpool.Pool) {
	b.Helper()
	if testing.Short() {
		b.Skip("seeds a large ledger; not in -short mode")
	}
	ctx := context.Background()
	s, pool := newStore(b)
	ops := table(s.Schema(), "payonce_operations")
	start := time.Now()
	_, err := pool.Exec(ctx, "INSERT INTO "+ops+" "+insert, args...)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, "VACUUM (ANALYZE) "+ops)
	require.NoError(b, err)
	b.Logf("seeded %d operations in %v", rows, time.Since(start).Round(time.Millisecond))
	return s, pool
}

// migratedStore opens a store on schema and migrates it.
func migratedStore(t testing.TB, pool *pgxpool.Pool, schema string) *ledgerpg.Store {
	t.Helper()
	s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(context.Background()))
	return s
}

// txCounter is a pgx tracer that counts, on the client side, what each
// call costs the database: round trips (statements and batches sent) and
// committed transactions. A statement or batch that succeeds and leaves the
// connection outside a transaction (ReadyForQuery status 'I') committed one:
// either an explicit COMMIT or the implicit transaction of a statement sent
// on its own. That is what PostgreSQL counts in pg_stat_database.xact_commit.
type txCounter struct {
	roundTrips atomic.Int64
	commits    atomic.Int64
}

func (c *txCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (c *txCounter) TraceQueryEnd(_ context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	c.ended(conn, data.Err, data.CommandTag)
}

func (c *txCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *txCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *txCounter) TraceBatchEnd(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchEndData) {
	c.ended(conn, data.Err, pgconn.CommandTag{})
}

func (c *txCounter) ended(conn *pgx.Conn, err error, tag pgconn.CommandTag) {
	c.roundTrips.Add(1)
	if err == nil && conn.PgConn().TxStatus() == 'I' && tag.String() != "ROLLBACK" {
		c.commits.Add(1)
	}
}

// countingStore is a migrated store in a fresh schema whose pool counts
// round trips and commits.
func countingStore(t testing.TB) (*ledgerpg.Store, *txCounter) {
	t.Helper()
	counter := &txCounter{}
	store, _ := storeWith(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = counter })
	counter.roundTrips.Store(0)
	counter.commits.Store(0)
	return store, counter
}

// useSchema drops schema if it exists (a previous run's leftover) and drops
// it again when the test ends. The store creates it.
func useSchema(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	drop := func() {
		_, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		require.NoError(t, err)
	}
	drop()
	t.Cleanup(drop)
}

// table is the quoted name of table in schema, as the store's statements
// write it.
func table(schema, name string) string { return pgx.Identifier{schema, name}.Sanitize() }

// countRows counts the rows of a table, given by its quoted name (see table).
func countRows(t testing.TB, pool *pgxpool.Pool, quoted string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+quoted).Scan(&n))
	return n
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// The conformance suite's fixtures: newOp is a valid NewOperation for id (at
// generation 0); withOtherRequest is op with another request and
// fingerprint.
var (
	newOp            = ledgertest.NewOp
	withOtherRequest = ledgertest.OtherRequest
)
