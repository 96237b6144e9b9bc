package ledgerpg_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
)

// A schema left at version 1 by an older build upgrades to the current
// version with its data intact: the upgraded store reads the operations it
// already had (their attempts not replayed), records events for them, and
// finishes and cleans them up with tombstones.
func TestUpgradeFromVersion1(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testkit.NewPool(t)
	schema := testkit.NewSchema(t, pool)
	old, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	ledgerpg.KeepMigrationsUpTo(old, 1)
	applied, err := old.MigrateReport(ctx)
	require.NoError(t, err)
	require.Len(t, applied, 1)
	require.Equal(t, "initial", applied[0].Name)
	for _, table := range []string{"payonce_events", "payonce_tombstones"} {
		var reg *string
		require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass($1)::text", pgx.Identifier{schema, table}.Sanitize()).Scan(&reg))
		require.Nil(t, reg, "version 1 has no %s table", table)
	}

	// What a version 1 build wrote: an operation sent once, waiting for a
	// lookup under a live lease, and one only recorded.
	ops, atts := pgx.Identifier{schema, "payonce_operations"}.Sanitize(), pgx.Identifier{schema, "payonce_attempts"}.Sanitize()
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

// Events travel in the batches the calls already send: recording them costs
// no round trip and no commit.
func TestEventsCostNoRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, counter := countingStore(t)
	cost := func(call func()) (roundTrips, commits int64) {
		r, c := counter.roundTrips.Load(), counter.commits.Load()
		call()
		return counter.roundTrips.Load() - r, counter.commits.Load() - c
	}
	flow := func(id string, evs []ledger.NewEvent) (start, finish [2]int64) {
		_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp(id), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
		require.NoError(t, err)
		start[0], start[1] = cost(func() {
			_, _, err := s.StartAttempt(ctx, ledger.StartAttemptParams{ID: id, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), Events: evs})
			require.NoError(t, err)
		})
		finish[0], finish[1] = cost(func() {
			_, err := s.Finish(ctx, ledger.FinishParams{
				ID: id, Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess}, Events: evs,
			})
			require.NoError(t, err)
		})
		return start, finish
	}
	plainStart, plainFinish := flow("op-plain", nil)
	evs := []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: "a"}, {Kind: ledger.EventNote, Detail: "b"}}
	evStart, evFinish := flow("op-events", evs)
	require.Equal(t, plainStart, evStart, "StartAttempt (round trips, commits)")
	require.Equal(t, plainFinish, evFinish, "Finish (round trips, commits)")
	got, err := s.Events(ctx, "op-events")
	require.NoError(t, err)
	require.Len(t, got, 4)
}

func TestEventsCorruptKind(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	_, _, err = s.StartAttempt(ctx, ledger.StartAttemptParams{ID: "op-1", Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute),
		Events: []ledger.NewEvent{{Kind: ledger.EventNote}}})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE "+pgx.Identifier{s.Schema(), "payonce_events"}.Sanitize()+" SET kind = 'exploded'")
	require.NoError(t, err)
	_, err = s.Events(ctx, "op-1")
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	require.ErrorContains(t, err, "exploded")
	_, err = s.Events(ctx, "")
	require.ErrorIs(t, err, ledger.ErrInvalid)
}

// withOtherRequest is op with another request and fingerprint.
func withOtherRequest(op ledger.NewOperation) ledger.NewOperation {
	op.Request = []byte(`{"amount":999999,"currency":"EUR"}`)
	sum := sha256.Sum256(op.Request)
	op.Fingerprint = hex.EncodeToString(sum[:])
	return op
}

// ordersTable creates the application's business table next to the
// ledger's and returns its quoted name.
func ordersTable(t *testing.T, pool *pgxpool.Pool, schema string) string {
	t.Helper()
	name := pgx.Identifier{schema, "orders"}.Sanitize()
	_, err := pool.Exec(t.Context(), "CREATE TABLE "+name+" (id text PRIMARY KEY, amount integer NOT NULL)")
	require.NoError(t, err)
	return name
}

func countRows(t *testing.T, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

func TestCreateOrGetTx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("CommitRecordsDueOperation", func(t *testing.T) {
		t.Parallel()
		s, pool := newStore(t)
		orders := ordersTable(t, pool, s.Schema())

		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // committed below
		_, err = tx.Exec(ctx, "INSERT INTO "+orders+" VALUES ('order-1', 1000)")
		require.NoError(t, err)
		got, created, err := s.CreateOrGetTx(ctx, tx, newOp("op-1"), t0)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, ledger.StatusPending, got.Status)
		require.Equal(t, t0, got.NextCheckAt, "due at once for background work")

		// Invisible to others before the commit.
		_, _, err = s.Get(ctx, "op-1")
		require.ErrorIs(t, err, ledger.ErrNotFound)
		due, err := s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "reconciler", Now: t0, LeaseUntil: t0.Add(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Empty(t, due)

		// In the same transaction, the operation is found again.
		again, created, err := s.CreateOrGetTx(ctx, tx, newOp("op-1"), t0.Add(time.Second))
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, got, again)
		require.NoError(t, tx.Commit(ctx))

		stored, atts, err := s.Get(ctx, "op-1")
		require.NoError(t, err)
		require.Equal(t, got, stored)
		require.Empty(t, atts)
		require.Equal(t, 1, countRows(t, pool, orders))
		due, err = s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "reconciler", Now: t0, LeaseUntil: t0.Add(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Len(t, due, 1)
		require.Equal(t, "op-1", due[0].ID)
	})

	t.Run("RollbackRecordsNothing", func(t *testing.T) {
		t.Parallel()
		s, pool := newStore(t)
		orders := ordersTable(t, pool, s.Schema())

		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "INSERT INTO "+orders+" VALUES ('order-1', 1000)")
		require.NoError(t, err)
		_, created, err := s.CreateOrGetTx(ctx, tx, newOp("op-1"), t0)
		require.NoError(t, err)
		require.True(t, created)
		require.NoError(t, tx.Rollback(ctx))

		_, _, err = s.Get(ctx, "op-1")
		require.ErrorIs(t, err, ledger.ErrNotFound)
		require.Zero(t, countRows(t, pool, orders))
		due, err := s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "reconciler", Now: t0.Add(time.Hour), LeaseUntil: t0.Add(2 * time.Hour), Limit: 10})
		require.NoError(t, err)
		require.Empty(t, due, "nothing to send")
		_, created, err = s.CreateOrGet(ctx, newOp("op-1"), t0)
		require.NoError(t, err)
		require.True(t, created, "the ID was never recorded")
	})

	// A mismatch is found in Go, after statements that cannot fail on it:
	// PostgreSQL does not abort the caller's transaction, which goes on and
	// commits.
	t.Run("MismatchLeavesTxUsable", func(t *testing.T) {
		t.Parallel()
		s, pool := newStore(t)
		orders := ordersTable(t, pool, s.Schema())
		op := newOp("op-1")
		_, _, err := s.CreateOrGet(ctx, op, t0)
		require.NoError(t, err)
		before, _, err := s.Get(ctx, op.ID)
		require.NoError(t, err)

		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // committed below
		_, err = tx.Exec(ctx, "INSERT INTO "+orders+" VALUES ('order-1', 1000)")
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
		require.Equal(t, byte('T'), tx.Conn().PgConn().TxStatus(), "in a transaction, not aborted ('E')")

		_, err = tx.Exec(ctx, "INSERT INTO "+orders+" VALUES ('order-2', 2000)")
		require.NoError(t, err)
		got, created, err := s.CreateOrGetTx(ctx, tx, op, t0.Add(time.Second))
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, before, got)
		_, created, err = s.CreateOrGetTx(ctx, tx, newOp("op-3"), t0)
		require.NoError(t, err)
		require.True(t, created)
		require.NoError(t, tx.Commit(ctx))

		require.Equal(t, 2, countRows(t, pool, orders))
		after, _, err := s.Get(ctx, op.ID)
		require.NoError(t, err)
		require.Equal(t, before, after, "the recorded operation is unchanged")
		_, _, err = s.Get(ctx, "op-2")
		require.ErrorIs(t, err, ledger.ErrNotFound)
		_, _, err = s.Get(ctx, "op-3")
		require.NoError(t, err)
	})

	// CreateOrGet is CreateOrGetTx in a transaction of its own: one commit.
	t.Run("CreateOrGetCommitsOnce", func(t *testing.T) {
		t.Parallel()
		s, counter := countingStore(t)
		_, created, err := s.CreateOrGet(context.Background(), newOp("op-1"), t0)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, int64(1), counter.commits.Load())
		_, _, err = s.CreateOrGet(context.Background(), withOtherRequest(newOp("op-1")), t0)
		require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
		require.Equal(t, int64(1), counter.commits.Load(), "a refused call commits nothing")
	})
}
