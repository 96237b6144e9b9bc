package ledgersqlite_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// A database left at schema version 1 by an older build upgrades to the
// current version with its data intact: the upgraded store reads the
// operations it already had (their attempts not replayed), records events
// for them, and finishes and cleans them up with tombstones.
func TestUpgradeFromVersion1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := dbPath(t)
	old, err := ledgersqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = old.Close() })
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
	v, err = s.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, v)
	got, gotAtts, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.Equal(t, ledger.Operation{
		ID: "op-1", Key: "op-1", Provider: "stripe", Kind: "charge", References: op1.References, Fingerprint: op1.Fingerprint,
		Request: op1.Request, Status: ledger.StatusUnknown, Attempts: 1, KeyTTL: 24 * time.Hour,
		WindowStart: t0, KeyExpiresAt: t0.Add(24 * time.Hour), LeaseOwner: "w", LeaseExpiresAt: t0.Add(time.Minute), NextCheckAt: t0.Add(time.Minute),
		CreatedAt: t0, UpdatedAt: t0.Add(time.Second),
	}, got)
	require.Equal(t, []ledger.Attempt{{
		OperationID: "op-1", Number: 1, Key: "op-1", StartedAt: t0, FinishedAt: t0.Add(time.Second), MayHaveReached: true,
		Outcome: ledger.OutcomeMaybeSent, Error: "timeout",
	}}, gotAtts, "an attempt of version 1 was not replayed")
	got2, _, err := s.Get(ctx, "op-2")
	require.NoError(t, err)
	require.Equal(t, ledger.StatusPending, got2.Status)
	evs, err := s.Events(ctx, "op-1")
	require.NoError(t, err)
	require.Empty(t, evs)

	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t0.Add(time.Minute), From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_1",
		Events: []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: `{"status":"succeeded"}`}},
	})
	require.NoError(t, err)
	evs, err = s.Events(ctx, "op-1")
	require.NoError(t, err)
	require.Equal(t, []ledger.Event{{OperationID: "op-1", Seq: 1, At: t0.Add(time.Minute), Kind: ledger.EventLookup, Actor: "w", Detail: `{"status":"succeeded"}`}}, evs)

	rep, err := s.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(30 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Tombstoned)
	tomb, _, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.True(t, tomb.Tombstone)
	require.Equal(t, "pi_1", tomb.ProviderRef)
}

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

func countOrders(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM orders`).Scan(&n))
	return n
}

// withOtherRequest is op with another request and fingerprint.
func withOtherRequest(op ledger.NewOperation) ledger.NewOperation {
	op.Request = []byte(`{"amount":999999,"currency":"EUR"}`)
	sum := sha256.Sum256(op.Request)
	op.Fingerprint = hex.EncodeToString(sum[:])
	return op
}

func TestCreateOrGetTx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("CommitRecordsDueOperation", func(t *testing.T) {
		t.Parallel()
		path := dbPath(t)
		s := openAt(t, path)
		db := callerDB(t, path)

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, `INSERT INTO orders VALUES ('order-1', 1000)`)
		require.NoError(t, err)
		got, created, err := s.CreateOrGetTx(ctx, tx, newOp("op-1"), t0)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, ledger.StatusPending, got.Status)
		require.Equal(t, t0, got.NextCheckAt, "due at once for background work")

		// Not visible, and not waited for, before the commit.
		_, _, err = s.Get(ctx, "op-1")
		require.ErrorIs(t, err, ledger.ErrNotFound)

		// In the same transaction, the operation is found again.
		again, created, err := s.CreateOrGetTx(ctx, tx, newOp("op-1"), t0.Add(time.Second))
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, got, again)
		require.NoError(t, tx.Commit())

		stored, atts, err := s.Get(ctx, "op-1")
		require.NoError(t, err)
		require.Equal(t, got, stored)
		require.Empty(t, atts)
		require.Equal(t, 1, countOrders(t, db))
		due, err := s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "reconciler", Now: t0, LeaseUntil: t0.Add(leaseFor), Limit: 10})
		require.NoError(t, err)
		require.Len(t, due, 1)
		require.Equal(t, "op-1", due[0].ID)
	})

	t.Run("RollbackRecordsNothing", func(t *testing.T) {
		t.Parallel()
		path := dbPath(t)
		s := openAt(t, path)
		db := callerDB(t, path)

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, `INSERT INTO orders VALUES ('order-1', 1000)`)
		require.NoError(t, err)
		_, created, err := s.CreateOrGetTx(ctx, tx, newOp("op-1"), t0)
		require.NoError(t, err)
		require.True(t, created)
		require.NoError(t, tx.Rollback())

		_, _, err = s.Get(ctx, "op-1")
		require.ErrorIs(t, err, ledger.ErrNotFound)
		require.Zero(t, countOrders(t, db))
		due, err := s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "reconciler", Now: t0.Add(time.Hour), LeaseUntil: t0.Add(2 * time.Hour), Limit: 10})
		require.NoError(t, err)
		require.Empty(t, due, "nothing to send")
		_, created, err = s.CreateOrGet(ctx, newOp("op-1"), t0)
		require.NoError(t, err)
		require.True(t, created, "the ID was never recorded")
	})

	t.Run("MismatchLeavesTxUsable", func(t *testing.T) {
		t.Parallel()
		path := dbPath(t)
		s := openAt(t, path)
		db := callerDB(t, path)
		op := newOp("op-1")
		_, _, err := s.CreateOrGet(ctx, op, t0)
		require.NoError(t, err)
		before, _, err := s.Get(ctx, op.ID)
		require.NoError(t, err)

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback() //nolint:errcheck // committed below
		_, err = tx.ExecContext(ctx, `INSERT INTO orders VALUES ('order-1', 1000)`)
		require.NoError(t, err)
		_, _, err = s.CreateOrGetTx(ctx, tx, withOtherRequest(op), t0)
		require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
		keyTaken := newOp("op-2")
		keyTaken.Generation, keyTaken.Key = 1, op.Key
		_, _, err = s.CreateOrGetTx(ctx, tx, keyTaken, t0)
		require.ErrorIs(t, err, ledger.ErrKeyConflict)
		for _, bad := range []func() error{
			func() error { _, _, err := s.CreateOrGetTx(ctx, nil, newOp("op-3"), t0); return err },
			func() error { _, _, err := s.CreateOrGetTx(ctx, tx, newOp("op-3"), time.Time{}); return err },
			func() error { _, _, err := s.CreateOrGetTx(ctx, tx, ledger.NewOperation{ID: "op-3"}, t0); return err },
		} {
			require.ErrorIs(t, bad(), ledger.ErrInvalid)
		}

		// The transaction goes on and commits.
		_, err = tx.ExecContext(ctx, `INSERT INTO orders VALUES ('order-2', 2000)`)
		require.NoError(t, err)
		got, created, err := s.CreateOrGetTx(ctx, tx, op, t0.Add(time.Second))
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, before, got)
		_, created, err = s.CreateOrGetTx(ctx, tx, newOp("op-3"), t0)
		require.NoError(t, err)
		require.True(t, created)
		require.NoError(t, tx.Commit())

		require.Equal(t, 2, countOrders(t, db))
		after, _, err := s.Get(ctx, op.ID)
		require.NoError(t, err)
		require.Equal(t, before, after, "the recorded operation is unchanged")
		_, _, err = s.Get(ctx, "op-2")
		require.ErrorIs(t, err, ledger.ErrNotFound)
		_, _, err = s.Get(ctx, "op-3")
		require.NoError(t, err)
	})

	// With New, the store and the application share one *sql.DB. A store
	// write made while the caller's transaction holds the write lock waits
	// for it (busy timeout) instead of failing.
	t.Run("SharedDBWithNew", func(t *testing.T) {
		t.Parallel()
		db := callerDB(t, dbPath(t))
		s, err := ledgersqlite.New(db)
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
		require.Equal(t, 1, countOrders(t, db))
	})
}
