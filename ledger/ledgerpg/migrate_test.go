package ledgerpg_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// A schema left at version 1 by an older build upgrades to the current
// version with its data intact: the upgraded store reads the operations it
// already had (their attempts not replayed), records events for them, and
// finishes and cleans them up with tombstones.
func TestUpgradeFromVersion1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	old, pool := unmigratedStore(t)
	schema := old.Schema()
	ledgerpg.KeepMigrationsUpTo(old, 1)
	applied, err := old.MigrateReport(ctx)
	require.NoError(t, err)
	require.Len(t, applied, 1)
	require.Equal(t, "initial", applied[0].Name)
	for _, name := range []string{"payonce_events", "payonce_tombstones"} {
		var reg *string
		require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass($1)::text", table(schema, name)).Scan(&reg))
		require.Nil(t, reg, "version 1 has no %s table", name)
	}

	// What a version 1 build wrote: an operation sent once, waiting for a
	// lookup under a live lease, and one only recorded.
	ops, atts := table(schema, "payonce_operations"), table(schema, "payonce_attempts")
	op1, op2 := newOp("op-1"), newOp("op-2")
	_, err = pool.Exec(ctx, `INSERT INTO `+ops+` (id, key, provider, kind, refs, generation, fingerprint, request, status, attempts,
		key_ttl_ms, window_start, key_expires_at, lease_owner, lease_expires_at, next_check_at, created_at, updated_at)
		VALUES ($1, $1, 'stripe', 'charge', $2, 0, $3, $4, 'unknown', 1, 86400000, $5, $6, 'w', $7, $7, $5, $8)`,
		op1.ID, op1.References, op1.Fingerprint, string(op1.Request), t0, t0.Add(24*time.Hour), t0.Add(time.Minute), t0.Add(time.Second))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+atts+` (operation_id, number, key, started_at, finished_at, may_have_reached, outcome, error)
		VALUES ('op-1', 1, 'op-1', $1, $2, true, 'maybe_sent', 'timeout')`, t0, t0.Add(time.Second))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+ops+` (id, key, provider, kind, refs, generation, fingerprint, request, status, attempts,
		key_ttl_ms, next_check_at, created_at, updated_at)
		VALUES ($1, $1, 'stripe', 'charge', $2, 0, $3, $4, 'pending', 0, 86400000, $5, $5, $5)`,
		op2.ID, op2.References, op2.Fingerprint, string(op2.Request), t0)
	require.NoError(t, err)

	s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	applied, err = s.MigrateReport(ctx)
	require.NoError(t, err)
	require.Equal(t, s.Migrations()[1:], applied, "every version after 1")
	require.Equal(t, "events", applied[0].Name)
	require.Equal(t, "tombstones", applied[1].Name)
	applied, err = s.MigrateReport(ctx)
	require.NoError(t, err)
	require.Empty(t, applied)

	ledgertest.RequireUpgradedFromVersion1(t, s, op1, t0)
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s, err := ledgerpg.New(pool, ledgerpg.Config{})
	require.NoError(t, err)

	ms := s.Migrations()
	require.NotEmpty(t, ms)
	require.Equal(t, 1, ms[0].Version)
	require.Equal(t, "initial", ms[0].Name)
	for i := 1; i < len(ms); i++ {
		require.Greater(t, ms[i].Version, ms[i-1].Version)
	}
}

func TestMigrateTwiceIsNoop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := unmigratedStore(t)
	schema := s.Schema()

	applied, err := s.MigrateReport(ctx)
	require.NoError(t, err)
	require.Equal(t, s.Migrations(), applied)

	_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)

	applied, err = s.MigrateReport(ctx)
	require.NoError(t, err)
	require.Empty(t, applied)
	require.NoError(t, s.Migrate(ctx))

	_, _, err = s.Get(ctx, "op-1")
	require.NoError(t, err, "data survives a second migration")
	var versions []int
	rows, err := pool.Query(ctx, "SELECT version FROM "+table(schema, "payonce_schema_migrations")+" ORDER BY version")
	require.NoError(t, err)
	versions, err = pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	require.Len(t, versions, len(s.Migrations()), "each version recorded once")
}

func TestConcurrentMigrateCreatesSchemaOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	poolA, poolB := testkit.NewPool(t), testkit.NewPool(t)
	schema := testkit.NewSchema(t, poolA)
	// Start from nothing: Migrate must create the schema, and the two
	// processes race for it.
	_, err := poolA.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)

	var wg sync.WaitGroup
	applied := make([][]ledgerpg.Migration, 2)
	errs := make([]error, 2)
	for i, pool := range []*pgxpool.Pool{poolA, poolB} {
		wg.Go(func() {
			s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
			if err != nil {
				errs[i] = err
				return
			}
			applied[i], errs[i] = s.MigrateReport(ctx)
		})
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.True(t, (len(applied[0]) == 0) != (len(applied[1]) == 0), "exactly one of the two applied the migrations: %v", applied)

	s, err := ledgerpg.New(poolB, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
}
