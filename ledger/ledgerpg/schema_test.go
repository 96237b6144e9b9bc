package ledgerpg_test

import (
	"context"
	"crypto/rand"
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
		useSchema(t, pool, schema)
		s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
		require.NoError(t, err)
		require.NoError(t, s.Migrate(context.Background()))
		return &ledgertest.Harness{
			Store: s,
			OpenAnother: func(t *testing.T) ledger.Store {
				s, err := ledgerpg.New(testkit.NewPool(t), ledgerpg.Config{Schema: schema})
				require.NoError(t, err)
				return s
			},
			BlockWrites: func(t *testing.T) func() { return lockTable(t, testkit.NewPool(t), schema, "payonce_operations") },
		}
	})
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
