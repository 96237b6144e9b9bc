package ledgerpg_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/pgtest"
	"github.com/payonce/payonce/ledger"
)

// A lazily durable Finish (synchronous_commit off) must not leak into the
// transactions that follow on its connection: the attempt journal that
// rule 2 depends on is always committed durably.
func TestLazyFinishDoesNotLeak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	require.NoError(t, err)
	cfg.MaxConns = 1 // the Finish and the checks share one connection
	pool := pgtest.NewPoolConfig(t, cfg)
	s := migratedStore(t, pool, pgtest.NewSchema(t, pool))

	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	op := newOp("op-lazy")
	br, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	_, err = s.Finish(ctx, ledger.FinishParams{ID: op.ID, Owner: "w", Now: now, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: br.Attempt.Number, Class: ledger.OutcomeSuccess}})
	require.NoError(t, err)

	var setting string
	require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&setting))
	require.Equal(t, "on", setting, "SET LOCAL ends with the Finish transaction")
	got, _, err := s.Get(ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, got.Status, "a lazy commit is visible at once")
}
