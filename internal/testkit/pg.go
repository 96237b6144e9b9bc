// Package testkit holds the helpers the project's tests share (only tests
// import it):
//
//   - a PostgreSQL database: its URL from the environment and a private
//     schema per test, so that packages testing in parallel against one
//     database never see each other's rows (pg.go);
//
//   - for the provider adapters' tests: canned HTTP answers and doers,
//     request building, the checks of a ValidationError and of a secret
//     that must not leak, and an end-to-end client over a fresh SQLite
//     ledger (adapter.go);
//
//   - a buffer safe to write from another goroutine while the test reads
//     it (buffer.go).
//
//     func TestSomething(t *testing.T) {
//     pool := testkit.NewPool(t)          // skips when no database is configured
//     schema := testkit.NewSchema(t, pool) // dropped when the test ends
//     ...
//     }
package testkit

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger/ledgerpg"
)

const (
	// EnvURL names the variable holding the test database URL.
	EnvURL = "PAYONCE_TEST_DATABASE_URL"
	// EnvRequire, set to 1, turns a missing EnvURL into a test failure
	// instead of a skip (for CI, where a silently skipped suite would pass).
	EnvRequire = "PAYONCE_REQUIRE_POSTGRES"
	// ExampleURL is the database the skip message suggests.
	ExampleURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// URL returns the test database URL from PAYONCE_TEST_DATABASE_URL. When it
// is unset the test is skipped with a message saying how to run it, or fails
// when PAYONCE_REQUIRE_POSTGRES=1.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url != "" {
		return url
	}
	msg := "needs PostgreSQL: set " + EnvURL + ", e.g. " + EnvURL + "=" + ExampleURL + " go test ./..."
	if os.Getenv(EnvRequire) == "1" {
		t.Fatal(msg + "; " + EnvRequire + "=1 makes a missing database a failure")
	}
	t.Skip(msg)
	return ""
}

// NewPool opens a pool on URL(t), checks that the database answers, and
// closes the pool when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL(t))
	if err != nil {
		t.Fatalf("testkit: parsing %s: %v", EnvURL, err)
	}
	return NewPoolConfig(t, cfg)
}

// NewPoolConfig opens a pool with cfg (e.g. from pgxpool.ParseConfig(URL(t))
// with a tracer added), checks that the database answers, and closes the
// pool when the test ends.
func NewPoolConfig(t testing.TB, cfg *pgxpool.Config) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("testkit: opening pool: %v", err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("testkit: database at %s does not answer: %v", EnvURL, err)
	}
	return pool
}

// NewSchema creates an empty schema with a unique random name and drops it
// (CASCADE) when the test ends. The name is a plain lower-case identifier.
func NewSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	name := "payonce_test_" + strings.ToLower(rand.Text())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("testkit: creating schema %s: %v", name, err)
	}
	DropOnCleanup(t, pool.Config().ConnConfig, "schema "+name, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	return name
}

// DropOnCleanup runs drop, the statement that drops what is named by what
// (such as "schema x"), when the test ends. It uses a connection of its own
// to cfg: the test may have closed its pools first. A failure is reported
// with t.Errorf.
func DropOnCleanup(t testing.TB, cfg *pgx.ConnConfig, what, drop string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Errorf("testkit: connecting to drop %s: %v", what, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, drop); err != nil {
			t.Errorf("testkit: dropping %s: %v", what, err)
		}
	})
}

// NewPGLedger opens a fresh PostgreSQL ledger in a schema of its own
// (NewPool, NewSchema), migrated with ctx, and returns it with the pool it
// runs on.
func NewPGLedger(tb testing.TB, ctx context.Context) (*pgxpool.Pool, *ledgerpg.Store) {
	tb.Helper()
	pool := NewPool(tb)
	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: NewSchema(tb, pool)})
	require.NoError(tb, err)
	require.NoError(tb, store.Migrate(ctx))
	return pool, store
}

// EachStore runs fn as two parallel subtests, "sqlite" and "postgres", with
// pg false and true: a test of either ledger (the postgres one skips
// without PAYONCE_TEST_DATABASE_URL unless PAYONCE_REQUIRE_POSTGRES=1, when
// it opens its database through URL).
func EachStore(t *testing.T, fn func(t *testing.T, pg bool)) {
	for _, pg := range []bool{false, true} {
		name := "sqlite"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, pg)
		})
	}
}
