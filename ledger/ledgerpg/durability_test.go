package ledgerpg_test

import (
	"bytes"
	"context"
	"log/slog"
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
)

// A lazily durable Finish (synchronous_commit off) must not leak into the
// transactions that follow on its connection: the attempt journal that
// rule 2 depends on is always committed durably.
func TestLazyFinishDoesNotLeak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := storeWith(t, func(cfg *pgxpool.Config) {
		cfg.MaxConns = 1 // the Finish and the checks share one connection
	})

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

// The attempt journal (and every write but the lazily durable Finish) is
// durable whatever the session's, role's or database's synchronous_commit
// default is. Here every connection of the pool starts with
// synchronous_commit off (as an ALTER ROLE ... SET synchronous_commit = off
// would make it), and a probe reads the setting inside each write
// transaction just before its COMMIT.
func TestJournalIsDurableWhateverTheDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sessionDefault string
		want           string // in the durable writes
	}{
		{"off", "on"},
		{"local", "on"},
		{"remote_write", "on"},
		{"on", "on"},
		{"remote_apply", "remote_apply"}, // stronger than on: kept
	} {
		t.Run(c.sessionDefault, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, pool := storeWith(t, func(cfg *pgxpool.Config) {
				cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
					_, err := conn.Exec(ctx, "SET synchronous_commit = "+c.sessionDefault)
					return err
				}
			})
			schema := s.Schema()
			var (
				mu   sync.Mutex
				seen = map[string][]string{}
			)
			probe := func(method, value string) {
				mu.Lock()
				defer mu.Unlock()
				seen[method] = append(seen[method], value)
			}
			ledgerpg.SetProbe(s, "SELECT current_setting('synchronous_commit')", probe)
			durableOutcomes, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema, DurableOutcomes: true})
			require.NoError(t, err)
			ledgerpg.SetProbe(durableOutcomes, "SELECT current_setting('synchronous_commit')", func(method, value string) { probe("durable "+method, value) })

			lease := func(now time.Time) time.Time { return now.Add(time.Minute) }
			_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-new"), Owner: "w", Now: t0, LeaseUntil: lease(t0), StartAttempt: true}) // one trip
			require.NoError(t, err)
			_, _, err = s.CreateOrGet(ctx, newOp("op-queued"), t0)
			require.NoError(t, err)
			_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-queued"), Owner: "w", Now: t0, LeaseUntil: lease(t0)}) // existing
			require.NoError(t, err)
			_, _, err = s.StartAttempt(ctx, ledger.StartAttemptParams{ID: "op-queued", Owner: "w", Now: t0, LeaseUntil: lease(t0)})
			require.NoError(t, err)
			_, err = s.Finish(ctx, ledger.FinishParams{ID: "op-queued", Owner: "w", Now: t0, From: ledger.StatusInFlight, To: ledger.StatusManualReview,
				ReviewReason: "r", Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent}})
			require.NoError(t, err)
			_, err = s.Resolve(ctx, ledger.ResolveParams{ID: "op-queued", Actor: "a", Note: "n", Outcome: ledger.ResolveResend, NewKey: "op-queued-g1", NewGeneration: 1, Now: t0})
			require.NoError(t, err)
			_, err = s.Claim(ctx, ledger.ClaimParams{ID: "op-queued", Owner: "w", Now: t0, LeaseUntil: lease(t0)})
			require.NoError(t, err)
			now := t0.Add(time.Hour)
			_, err = s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "r", Now: now, LeaseUntil: lease(now), Limit: 10})
			require.NoError(t, err)
			_, err = durableOutcomes.Finish(ctx, ledger.FinishParams{ID: "op-new", Owner: "r", Now: now, From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_1"})
			require.NoError(t, err)
			_, err = s.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(30 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour})
			require.NoError(t, err)

			mu.Lock()
			defer mu.Unlock()
			for _, method := range []string{"begin", "create", "start attempt", "resolve", "claim", "claim due", "cleanup", "durable finish"} {
				require.NotEmpty(t, seen[method], "no write transaction of %s was probed", method)
				for _, v := range seen[method] {
					require.Equal(t, c.want, v, "synchronous_commit inside %s", method)
				}
			}
			require.Len(t, seen["begin"], 3, "the one-trip path of both Begins, then the existing-operation path of the second")
			require.Equal(t, []string{"off"}, seen["finish"], "the lazily durable Finish is the exception")

			// Everything was local to the transactions: the session keeps its
			// own setting.
			var after string
			require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&after))
			require.Equal(t, c.sessionDefault, after)
		})
	}
}

// A server running with fsync off makes no commit durable: Migrate says so,
// once per Store, in its logger.
func TestFsyncOffIsWarnedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testkit.NewPool(t)
	schema := testkit.NewSchema(t, pool)
	var logs bytes.Buffer
	s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	require.Empty(t, logs.String(), "the test server runs with fsync on")

	ledgerpg.SetFsyncQuery(s, "SELECT 'off'")
	require.NoError(t, s.Migrate(ctx))
	require.NoError(t, s.Migrate(ctx))
	require.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), logs.String())
	require.Contains(t, logs.String(), "fsync=off")

	// Without a logger, nothing is printed and nothing fails.
	quiet, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	ledgerpg.SetFsyncQuery(quiet, "SELECT 'off'")
	require.NoError(t, quiet.Migrate(ctx))
}
