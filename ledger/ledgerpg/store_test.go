package ledgerpg_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	// A pool that never connects: New does not touch the database.
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	t.Cleanup(pool.Close)

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
			require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, _, err := s.CreateOrGetTx(ctx, tx, newOp("op-3"), t0)
				return err
			}))
			ops, err := s.List(ctx, ledger.ListFilter{})
			require.NoError(t, err)
			require.Len(t, ops, 3)
			due, err := s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "r", Now: t0.Add(time.Hour), LeaseUntil: lease(t0.Add(time.Hour)), Limit: 10})
			require.NoError(t, err)
			require.Len(t, due, 2)
			_, err = s.Finish(ctx, ledger.FinishParams{ID: "op-2", Owner: "r", Now: t0.Add(time.Hour), From: ledger.StatusPending, To: ledger.StatusManualReview, ReviewReason: "r"})
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
