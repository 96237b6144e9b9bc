package ledgersqlite_test

import (
	"database/sql"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// currentVersion is the schema version of the embedded migrations.
const currentVersion = 12

// A database left at schema version 1 by an older build upgrades to the
// current version with its data intact: the upgraded store reads the
// operations it already had (their attempts not replayed), records events
// for them, and finishes and cleans them up with tombstones.
func TestUpgradeFromVersion1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := dbPath(t)
	old := openUnmigrated(t, path)
	require.NoError(t, ledgersqlite.MigrateTo(ctx, old, 1))
	v, err := old.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.NoError(t, old.Close())
	raw := rawDB(t, path)
	var tables int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name IN ('payonce_events', 'payonce_tombstones')`).Scan(&tables))
	require.Zero(t, tables, "version 1 has no events or tombstones table")

	// What a version 1 build wrote: an operation sent once, waiting for a
	// lookup under a live lease, and one only recorded.
	op1, op2 := newOp("op-1"), newOp("op-2")
	us := func(d time.Duration) int64 { return t0.Add(d).UnixMicro() }
	_, err = raw.Exec(`INSERT INTO payonce_operations (id, key, provider, kind, refs, generation, fingerprint, request, status, attempts,
		key_ttl_ms, window_start, key_expires_at, lease_owner, lease_expires_at, next_check_at, created_at, updated_at)
		VALUES (?, ?, 'stripe', 'charge', '["order","op-1"]', 0, ?, ?, 'unknown', 1, 86400000, ?, ?, 'w', ?, ?, ?, ?)`,
		op1.ID, op1.ID, op1.Fingerprint, string(op1.Request), us(0), us(24*time.Hour), us(time.Minute), us(time.Minute), us(0), us(time.Second))
	require.NoError(t, err)
	_, err = raw.Exec(`INSERT INTO payonce_attempts (operation_id, number, key, started_at, finished_at, may_have_reached, outcome, error)
		VALUES ('op-1', 1, 'op-1', ?, ?, 1, 'maybe_sent', 'timeout')`, us(0), us(time.Second))
	require.NoError(t, err)
	_, err = raw.Exec(`INSERT INTO payonce_operations (id, key, provider, kind, refs, generation, fingerprint, request, status, attempts,
		key_ttl_ms, next_check_at, created_at, updated_at)
		VALUES (?, ?, 'stripe', 'charge', '["order","op-2"]', 0, ?, ?, 'pending', 0, 86400000, ?, ?, ?)`,
		op2.ID, op2.ID, op2.Fingerprint, string(op2.Request), us(0), us(0), us(0))
	require.NoError(t, err)

	s := openAt(t, path) // Migrate to the current version
	requireCurrentVersion(t, s)
	ledgertest.RequireUpgradedFromVersion1(t, s, op1, t0)
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := dbPath(t)
	s := openUnmigrated(t, path)

	v, err := s.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Zero(t, v, "nothing applied before Migrate")

	require.NoError(t, s.Migrate(ctx))
	requireCurrentVersion(t, s)

	raw := rawDB(t, path)
	var names []string
	var appliedAt int64
	rows, err := raw.Query("SELECT name, applied_at FROM payonce_schema_migrations ORDER BY version")
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name, &appliedAt))
		names = append(names, name)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"initial", "events", "tombstones", "webhooks", "stats", "feed", "revision", "feed_durable", "tombstone_refs", "review_code", "feed_consumers", "audit_findings"}, names)
	require.Positive(t, appliedAt)

	t.Run("TwiceIsNoOp", func(t *testing.T) {
		var before string
		require.NoError(t, raw.QueryRow("SELECT group_concat(sql, ';') FROM sqlite_schema").Scan(&before))
		require.NoError(t, s.Migrate(ctx))
		var after string
		require.NoError(t, raw.QueryRow("SELECT group_concat(sql, ';') FROM sqlite_schema").Scan(&after))
		require.Equal(t, before, after)
		var n, again int64
		require.NoError(t, raw.QueryRow("SELECT count(*), max(applied_at) FROM payonce_schema_migrations").Scan(&n, &again))
		require.EqualValues(t, currentVersion, n)
		require.Equal(t, appliedAt, again, "the recorded migrations are untouched")
	})

	t.Run("RefusesNewerSchema", func(t *testing.T) {
		path := dbPath(t)
		s := openAt(t, path)
		_, err := rawDB(t, path).Exec("INSERT INTO payonce_schema_migrations VALUES (999, 'future', 1)")
		require.NoError(t, err)
		err = s.Migrate(ctx)
		require.ErrorContains(t, err, "version 999")
	})
}

// Two processes starting at once both migrate; one applies, the other finds
// the schema current.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	var stores []*ledgersqlite.Store
	for range 4 {
		stores = append(stores, openUnmigrated(t, path))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, currentVersion, countRows(t, rawDB(t, path), "payonce_schema_migrations"), "each migration applied once")
}

// A database left at schema version 3 upgrades to the webhook inbox with its
// data intact: its operations and tombstones are read as they were and
// webhooks settle them or find their tombstones.
func TestUpgradeFromVersion3(t *testing.T) {
	t.Parallel()
	path, raw := fileAtVersion(t, 3)
	require.Zero(t, schemaObjects(t, raw, "payonce_webhooks", "payonce_webhook_outcomes"), "version 3 has no inbox")

	// What a version 3 build wrote: an operation waiting for a lookup, and
	// the tombstone of one Cleanup removed.
	op1, gone := newOp("op-1"), newOp("op-old")
	us := func(d time.Duration) int64 { return t0.Add(d).UnixMicro() }
	_, err := raw.Exec(`INSERT INTO payonce_operations (id, key, provider, kind, refs, generation, fingerprint, request, status, attempts,
		key_ttl_ms, window_start, key_expires_at, lease_owner, lease_expires_at, next_check_at, created_at, updated_at)
		VALUES (?, ?, 'stripe', 'charge', '["order","op-1"]', 0, ?, ?, 'unknown', 1, 86400000, ?, ?, 'w', ?, ?, ?, ?)`,
		op1.ID, op1.ID, op1.Fingerprint, string(op1.Request), us(0), us(24*time.Hour), us(time.Minute), us(time.Minute), us(0), us(time.Second))
	require.NoError(t, err)
	_, err = raw.Exec(`INSERT INTO payonce_attempts (operation_id, number, key, started_at, finished_at, may_have_reached, outcome, error, replayed)
		VALUES ('op-1', 1, 'op-1', ?, ?, 1, 'maybe_sent', 'timeout', 0)`, us(0), us(time.Second))
	require.NoError(t, err)
	_, err = raw.Exec(`INSERT INTO payonce_tombstones (id, key, provider, kind, refs, generation, fingerprint, status, provider_ref,
		key_ttl_ms, created_at, finished_at, tombstoned_at)
		VALUES (?, ?, 'stripe', 'charge', '["order","op-old"]', 0, ?, 'succeeded', 'pi_old', 86400000, ?, ?, ?)`,
		gone.ID, gone.ID, gone.Fingerprint, us(-30*24*time.Hour), us(-30*24*time.Hour), us(-time.Hour))
	require.NoError(t, err)

	s := openAt(t, path)
	requireCurrentVersion(t, s)
	ledgertest.RequireUpgradedFromVersion3(t, s, op1, t0)
}

// A database left at schema version 4 upgrades to the open-work index with
// its data intact: the index is built over the rows already there, and
// Stats counts them.
func TestUpgradeFromVersion4(t *testing.T) {
	t.Parallel()
	path, raw := fileAtVersion(t, 4)
	require.Zero(t, schemaObjects(t, raw, "payonce_operations_open"), "version 4 has no open-work index")
	insertRawOps(t, raw, ledgertest.Version4Operations(t0))

	s := openAt(t, path)
	requireCurrentVersion(t, s)
	require.Equal(t, 1, schemaObjects(t, raw, "payonce_operations_open"), "version 5 has the open-work index")
	require.Equal(t, 3, schemaObjects(t, raw, "payonce_feed", "payonce_feed_created", "payonce_feed_changed"), "version 6 has the feed and its triggers")
	ledgertest.RequireUpgradedFromVersion4(t, s, t0)
}

// insertRawOps writes ops into payonce_operations of raw with plain SQL, as
// an older build did: every field in its column, NULL for a zero or empty
// one (the review code excepted: no build before version 10 had one).
func insertRawOps(t *testing.T, raw *sql.DB, ops []ledger.Operation) {
	t.Helper()
	for _, op := range ops {
		refs, err := json.Marshal(op.References)
		require.NoError(t, err)
		_, err = raw.Exec(`INSERT INTO payonce_operations (id, key, provider, kind, refs, generation, fingerprint, request, status,
			provider_ref, attempts, key_ttl_ms, window_start, key_expires_at, lease_owner, lease_expires_at, next_check_at,
			review_reason, review_at, created_at, updated_at, finished_at, payment_ref)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			op.ID, op.Key, op.Provider, op.Kind, string(refs), op.Generation, op.Fingerprint, string(op.Request), string(op.Status),
			nullText(op.ProviderRef), op.Attempts, op.KeyTTL.Milliseconds(), nullMicros(op.WindowStart), nullMicros(op.KeyExpiresAt),
			nullText(op.LeaseOwner), nullMicros(op.LeaseExpiresAt), nullMicros(op.NextCheckAt), nullText(op.ReviewReason),
			nullMicros(op.ReviewAt), op.CreatedAt.UnixMicro(), op.UpdatedAt.UnixMicro(), nullMicros(op.FinishedAt), nullText(op.PaymentRef))
		require.NoError(t, err, "insert %s", op.ID)
	}

}

// A database left at schema version 9 upgrades to the review code: each
// operation with a reason gets the code its reason maps to, and its feed
// entries too.
func TestUpgradeFromVersion9(t *testing.T) {
	t.Parallel()
	path, raw := fileAtVersion(t, 9)
	insertRawOps(t, raw, ledgertest.Version9Operations(t0))
	s := openAt(t, path)
	requireCurrentVersion(t, s)
	ledgertest.RequireUpgradedFromVersion9(t, s, t0)
}

// fileAtVersion is a fresh database file migrated up to version only, as a
// build of that version left it (closed), and another handle on it.
func fileAtVersion(t *testing.T, version int) (string, *sql.DB) {
	t.Helper()
	path := dbPath(t)
	old := openUnmigrated(t, path)
	require.NoError(t, ledgersqlite.MigrateTo(t.Context(), old, version))
	require.NoError(t, old.Close())
	return path, rawDB(t, path)
}

// requireCurrentVersion requires s's schema to be at the newest version.
func requireCurrentVersion(t *testing.T, s *ledgersqlite.Store) {
	t.Helper()
	v, err := s.SchemaVersion(t.Context())
	require.NoError(t, err)
	require.Equal(t, currentVersion, v)
}

// schemaObjects counts the tables and indexes of names in db.
func schemaObjects(t *testing.T, db *sql.DB, names ...string) int {
	t.Helper()
	list, err := json.Marshal(names)
	require.NoError(t, err)
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name IN (SELECT value FROM json_each(?))`, string(list)).Scan(&n))
	return n
}

// nullMicros is a time as the store writes it: unix microseconds, NULL for
// the zero time.
func nullMicros(v time.Time) any {
	if v.IsZero() {
		return nil
	}
	return v.UnixMicro()
}

// nullText is optional text as the store writes it: NULL when empty.
func nullText(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// A database left at schema version 6 upgrades to the row revision with its
// data intact: the rows already there start at revision 0, the trigger
// advances it on every update from then on (whoever writes), and the
// upgraded store finishes them the long way (it holds no copy of them).
func TestUpgradeFromVersion6(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path, raw := fileAtVersion(t, 6)
	require.Zero(t, schemaObjects(t, raw, "payonce_operations_revision"), "version 6 has no revision trigger")
	// What a version 6 build wrote: two operations in flight under a live
	// lease, their first attempt journaled.
	us := func(d time.Duration) int64 { return t0.Add(d).UnixMicro() }
	for _, id := range []string{"op-1", "op-2"} {
		op := newOp(id)
		_, err := raw.ExecContext(ctx, `INSERT INTO payonce_operations (id, key, provider, kind, refs, generation, fingerprint, request, status, attempts,
			key_ttl_ms, window_start, key_expires_at, lease_owner, lease_expires_at, next_check_at, created_at, updated_at)
			VALUES (?, ?, 'stripe', 'charge', '["order"]', 0, ?, ?, 'in_flight', 1, 86400000, ?, ?, 'w', ?, ?, ?, ?)`,
			op.ID, op.ID, op.Fingerprint, string(op.Request), us(0), us(24*time.Hour), us(leaseFor), us(leaseFor), us(0), us(0))
		require.NoError(t, err)
		_, err = raw.ExecContext(ctx, `INSERT INTO payonce_attempts (operation_id, number, key, started_at, may_have_reached, replayed)
			VALUES (?, 1, ?, ?, 1, 0)`, op.ID, op.ID, us(0))
		require.NoError(t, err)
	}

	s := openAt(t, path)
	requireCurrentVersion(t, s)
	require.Equal(t, 1, schemaObjects(t, raw, "payonce_operations_revision"), "version 7 has the revision trigger")
	require.Zero(t, revisionOf(t, raw, "op-1"), "existing rows start at 0")
	require.Zero(t, revisionOf(t, raw, "op-2"))

	// A write that knows nothing of the column (an older build, a caller's
	// SQL) advances it.
	_, err := raw.ExecContext(ctx, `UPDATE payonce_operations SET next_check_at = next_check_at WHERE id = 'op-2'`)
	require.NoError(t, err)
	require.EqualValues(t, 1, revisionOf(t, raw, "op-2"))
	require.Zero(t, revisionOf(t, raw, "op-1"), "per row")

	op, err := s.Finish(ctx, succeed("op-1", "w", t1, 1))
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
	require.EqualValues(t, 1, revisionOf(t, raw, "op-1"))
	require.Zero(t, ledgersqlite.FastFinishes(s), "no copy of a row written before the upgrade")

	// A new operation Begin writes after the upgrade is finished on its copy.
	_, err = s.Begin(ctx, begin(newOp("op-3"), "w", t0, true))
	require.NoError(t, err)
	_, err = s.Finish(ctx, succeed("op-3", "w", t1, 1))
	require.NoError(t, err)
	require.EqualValues(t, 1, ledgersqlite.FastFinishes(s))
	require.EqualValues(t, 2, revisionOf(t, raw, "op-3"))
}
