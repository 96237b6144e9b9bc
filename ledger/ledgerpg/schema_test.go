package ledgerpg_test

import (
	"crypto/rand"
	"errors"
	"strings"
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
	s, err := ledgerpg.New(offlinePool(t), ledgerpg.Config{})
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
	pool, schema := freshSchema(t)
	// Start from nothing: Migrate must create the schema, and the two
	// processes (each with a pool of its own) race for it.
	_, err := pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)

	stores := []*ledgerpg.Store{storeOn(t, schema), storeOn(t, schema)}
	var wg sync.WaitGroup
	applied := make([][]ledgerpg.Migration, 2)
	errs := make([]error, 2)
	for i, s := range stores {
		wg.Go(func() { applied[i], errs[i] = s.MigrateReport(ctx) })
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.True(t, (len(applied[0]) == 0) != (len(applied[1]) == 0), "exactly one of the two applied the migrations: %v", applied)

	s := stores[1]
	_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	pool := offlinePool(t) // New does not touch the database

	s, err := ledgerpg.New(pool, ledgerpg.Config{})
	require.NoError(t, err)
	require.Equal(t, "public", s.Schema())

	// Every statement quotes the schema, so any name PostgreSQL keeps byte
	// for byte is fine (TestReservedAndMixedCaseSchemas runs them).
	for _, ok := range []string{"payonce", "_x", "a1_b2", strings.Repeat("a", 63), "user", "order", "Pay Once", "1abc", "a-b", `a"b`, "a;drop", "PG_x"} {
		_, err := ledgerpg.New(pool, ledgerpg.Config{Schema: ok})
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{"pg_temp", "pg_catalog", "été", "a\nb", "a\x00b", strings.Repeat("a", 64)} {
		_, err := ledgerpg.New(pool, ledgerpg.Config{Schema: bad})
		require.ErrorIs(t, err, ledger.ErrInvalid, bad)
		require.ErrorContains(t, err, "1 to 63 printable ASCII characters", bad)
	}

	_, err = ledgerpg.New(nil, ledgerpg.Config{})
	require.ErrorIs(t, err, ledger.ErrInvalid)
}

func TestSchemasAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, pool := newStore(t)
	b := migratedStore(t, pool, testkit.NewSchema(t, pool))

	_, err := a.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	_, _, err = b.Get(ctx, "op-1")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	res, err := b.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w2", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.True(t, res.Created)
}

// The names an operator gives the CLI's --schema: every call works in
// them, and they are exactly the schemas named (not their lower-case or
// unquoted forms).
func TestReservedAndMixedCaseSchemas(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testkit.NewPool(t)
	for _, schema := range []string{"user", "order", "Pay Once"} {
		t.Run(schema, func(t *testing.T) {
			useSchema(t, pool, schema)
			s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
			require.NoError(t, err)
			require.NoError(t, s.Migrate(ctx))
			require.NoError(t, s.Migrate(ctx), "a second Migrate (advisory lock, applied versions) finds it current")
			var exists bool
			require.NoError(t, pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists))
			require.True(t, exists, "the schema is named exactly %q", schema)

			lease := func(now time.Time) time.Time { return now.Add(time.Minute) }
			res, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: lease(t0), StartAttempt: true})
			require.NoError(t, err)
			require.True(t, res.Created)
			_, err = s.Finish(ctx, ledger.FinishParams{ID: "op-1", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess, Replayed: true}, ProviderRef: "pi_1",
				Events: []ledger.NewEvent{{Kind: ledger.EventNote, Detail: "done"}}})
			require.NoError(t, err)
			_, _, err = s.CreateOrGet(ctx, newOp("op-2"), t0)
			require.NoError(t, err)
			_, _, err = createOrGetInTx(ctx, s, pool, newOp("op-3"), t0)
			require.NoError(t, err)
			ops, err := s.List(ctx, ledger.ListFilter{})
			require.NoError(t, err)
			require.Len(t, ops, 3)
			due, err := s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "r", Now: t0.Add(time.Hour), LeaseUntil: lease(t0.Add(time.Hour)), Limit: 10})
			require.NoError(t, err)
			require.Len(t, due, 2)
			_, err = s.Finish(ctx, ledger.FinishParams{ID: "op-2", Owner: "r", Now: t0.Add(time.Hour), From: ledger.StatusPending, To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeOther, ReviewReason: "r"})
			require.NoError(t, err)
			review, err := s.ListReview(ctx, ledger.ReviewFilter{})
			require.NoError(t, err)
			require.Len(t, review, 1)
			_, err = s.Resolve(ctx, ledger.ResolveParams{ID: "op-2", Actor: "a", Note: "n", Outcome: ledger.ResolveFailed, Now: t0.Add(time.Hour)})
			require.NoError(t, err)
			evs, err := s.Events(ctx, "op-1")
			require.NoError(t, err)
			require.Len(t, evs, 1)
			_, atts, err := s.Get(ctx, "op-1")
			require.NoError(t, err)
			require.True(t, atts[0].Replayed)

			rep, err := s.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(60 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour, TombstoneRetention: 30 * 24 * time.Hour})
			require.NoError(t, err)
			require.Equal(t, 2, rep.Deleted)
			require.Equal(t, 2, rep.TombstonesPurged, "finished 60 days ago: past the tombstone retention too")
			rep, err = s.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(60 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour})
			require.NoError(t, err)
			require.Zero(t, rep.Tombstones)
		})
	}
}

// The whole conformance suite in schemas whose names only work quoted: a
// reserved word, upper case, a space and a double quote. A statement that
// interpolates the schema without quoting it fails, or finds another
// schema.
func TestConformanceInQuotedSchemas(t *testing.T) {
	t.Parallel()
	testkit.URL(t)
	ledgertest.Run(t, func(t *testing.T) *ledgertest.Harness {
		pool := testkit.NewPool(t)
		schema := `Order "Pay Once" ` + rand.Text()[:12]
		// Its own pool: the harness's Reopen closes pool.
		useSchema(t, testkit.NewPool(t), schema)
		return harness(t, pool, schema)
	})
}

func TestTextPostgresCannotStoreIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	op := newOp("op-1")
	op.Request = []byte("{\"a\":\"\x00\"}") // valid UTF-8, but text cannot hold NUL
	_, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.ErrorIs(t, err, ledger.ErrInvalid)
	var ve *ledger.ValidationError
	require.True(t, errors.As(err, &ve))
	_, _, err = s.Get(ctx, "op-1")
	require.ErrorIs(t, err, ledger.ErrNotFound)
}

// Reading back a row someone edited by hand reports corruption instead of
// failing later or panicking.
func TestCorruptOutcomeIsReported(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE "+table(s.Schema(), "payonce_attempts")+" SET outcome = 'exploded'")
	require.NoError(t, err)
	_, _, err = s.Get(ctx, "op-1")
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	require.ErrorContains(t, err, "exploded")

	// Finishing that attempt reports it too, and leaves the row as it is.
	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
	})
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	var outcome string
	require.NoError(t, pool.QueryRow(ctx, "SELECT outcome FROM "+table(s.Schema(), "payonce_attempts")).Scan(&outcome))
	require.Equal(t, "exploded", outcome)
}

// A schema left at version 3 upgrades to the webhook inbox with its data
// intact: its operations and tombstones are read as they were and webhooks
// settle them or find their tombstones.
func TestUpgradeFromVersion3(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, schema := schemaAtVersion(t, 3)
	require.False(t, exists(t, pool, schema, "payonce_webhooks"), "version 3 has no inbox")

	// What a version 3 build wrote: an operation waiting for a lookup, and
	// the tombstone of one Cleanup removed.
	ops, atts, tombs := table(schema, "payonce_operations"), table(schema, "payonce_attempts"), table(schema, "payonce_tombstones")
	op1, gone := newOp("op-1"), newOp("op-old")
	_, err := pool.Exec(ctx, `INSERT INTO `+ops+` (id, key, provider, kind, refs, generation, fingerprint, request, status, attempts,
		key_ttl_ms, window_start, key_expires_at, lease_owner, lease_expires_at, next_check_at, created_at, updated_at)
		VALUES ($1, $1, 'stripe', 'charge', $2, 0, $3, $4, 'unknown', 1, 86400000, $5, $6, 'w', $7, $7, $5, $8)`,
		op1.ID, op1.References, op1.Fingerprint, string(op1.Request), t0, t0.Add(24*time.Hour), t0.Add(time.Minute), t0.Add(time.Second))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+atts+` (operation_id, number, key, started_at, finished_at, may_have_reached, outcome, error, replayed)
		VALUES ('op-1', 1, 'op-1', $1, $2, true, 'maybe_sent', 'timeout', false)`, t0, t0.Add(time.Second))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO `+tombs+` (id, key, provider, kind, refs, generation, fingerprint, status, provider_ref,
		key_ttl_ms, created_at, finished_at, tombstoned_at)
		VALUES ($1, $1, 'stripe', 'charge', $2, 0, $3, 'succeeded', 'pi_old', 86400000, $4, $4, $5)`,
		gone.ID, gone.References, gone.Fingerprint, t0.Add(-30*24*time.Hour), t0.Add(-time.Hour))
	require.NoError(t, err)

	s := upgradeFrom(t, pool, schema, 3, "webhooks")
	ledgertest.RequireUpgradedFromVersion3(t, s, op1, t0)
}

// A schema left at version 4 upgrades to the open-work index with its data
// intact: the index is built over the rows already there, and Stats counts
// them.
func TestUpgradeFromVersion4(t *testing.T) {
	t.Parallel()
	pool, schema := schemaAtVersion(t, 4)
	require.False(t, exists(t, pool, schema, "payonce_operations_open_idx"), "version 4 has no open-work index")
	insertRawOps(t, pool, schema, ledgertest.Version4Operations(t0))
	s := upgradeFrom(t, pool, schema, 4, "stats")
	require.True(t, exists(t, pool, schema, "payonce_operations_open_idx"), "version 5 has the open-work index")
	ledgertest.RequireUpgradedFromVersion4(t, s, t0)
}

// A schema left at version 9 upgrades to the review code: each operation
// with a reason gets the code its reason maps to, and its feed entries too.
func TestUpgradeFromVersion9(t *testing.T) {
	t.Parallel()
	old, pool := unmigratedStore(t)
	ledgerpg.KeepMigrationsUpTo(old, 9)
	_, err := old.MigrateReport(t.Context())
	require.NoError(t, err)
	schema := old.Schema()
	insertRawOps(t, pool, schema, ledgertest.Version9Operations(t0))
	// Version 7 is SQLite's only: version 9 is the eighth migration here.
	s := upgradeFrom(t, pool, schema, 8, "review_code")
	ledgertest.RequireUpgradedFromVersion9(t, s, t0)
}

// schemaAtVersion is a fresh schema migrated up to version only, as a build
// of that version left it, and its pool.
func schemaAtVersion(t *testing.T, version int) (*pgxpool.Pool, string) {
	t.Helper()
	old, pool := unmigratedStore(t)
	ledgerpg.KeepMigrationsUpTo(old, version)
	applied, err := old.MigrateReport(t.Context())
	require.NoError(t, err)
	require.Len(t, applied, version)
	return pool, old.Schema()
}

// upgradeFrom opens a store of this build on schema, left at version from,
// and migrates it: every later version is applied, the first named first.
func upgradeFrom(t *testing.T, pool *pgxpool.Pool, schema string, from int, first string) *ledgerpg.Store {
	t.Helper()
	s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	applied, err := s.MigrateReport(t.Context())
	require.NoError(t, err)
	require.Equal(t, s.Migrations()[from:], applied, "every version after %d", from)
	require.Equal(t, first, applied[0].Name)
	return s
}

// exists reports whether schema has a table or index called name.
func exists(t *testing.T, pool *pgxpool.Pool, schema, name string) bool {
	t.Helper()
	var reg *string
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT to_regclass($1)::text", table(schema, name)).Scan(&reg))
	return reg != nil
}

// insertRawOps writes ops into the operations table of schema with plain
// SQL, as an older build did: every field in its column, NULL for a zero
// or empty one.
func insertRawOps(t *testing.T, pool *pgxpool.Pool, schema string, ops []ledger.Operation) {
	t.Helper()
	at := func(v time.Time) any {
		if v.IsZero() {
			return nil
		}
		return v
	}
	text := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	for _, op := range ops {
		_, err := pool.Exec(t.Context(), `INSERT INTO `+table(schema, "payonce_operations")+` (id, key, provider, kind, refs, generation,
			fingerprint, request, status, provider_ref, attempts, key_ttl_ms, window_start, key_expires_at, lease_owner,
			lease_expires_at, next_check_at, review_reason, review_at, created_at, updated_at, finished_at, payment_ref)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`,
			op.ID, op.Key, op.Provider, op.Kind, op.References, op.Generation, op.Fingerprint, string(op.Request), string(op.Status),
			text(op.ProviderRef), op.Attempts, op.KeyTTL.Milliseconds(), at(op.WindowStart), at(op.KeyExpiresAt), text(op.LeaseOwner),
			at(op.LeaseExpiresAt), at(op.NextCheckAt), text(op.ReviewReason), at(op.ReviewAt), op.CreatedAt, op.UpdatedAt,
			at(op.FinishedAt), text(op.PaymentRef))
		require.NoError(t, err, "insert %s", op.ID)
	}
}
