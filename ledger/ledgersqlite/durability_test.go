package ledgersqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// The Store shares the caller's *sql.DB (New) and must leave every
// connection as it found it: a lazily durable Finish lowers synchronous to
// NORMAL for its own transaction, and a write sets the Store's level, but
// the caller's transactions on the same pool (its CreateOrGetTx transaction,
// its business data) must run with the durability the caller configured.
// With one connection in the pool, the Store and the caller share it.
func TestStoreLeavesCallersConnectionSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		set    string // the caller's own setting, "" for the default
		want   int    // PRAGMA synchronous as the caller reads it back
		busyMS int
	}{
		{"default FULL", "", 2, 0},
		{"caller's EXTRA", "PRAGMA synchronous = EXTRA", 3, 0},
		{"caller's OFF and busy timeout", "PRAGMA synchronous = OFF; PRAGMA busy_timeout = 1234", 0, 1234},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := sql.Open("sqlite", "file:"+dbPath(t)+"?_pragma=journal_mode(WAL)")
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			db.SetMaxOpenConns(1)
			if c.set != "" {
				_, err := db.ExecContext(ctx, c.set)
				require.NoError(t, err)
			}
			s, err := ledgersqlite.New(db, ledgersqlite.Config{})
			require.NoError(t, err)
			require.NoError(t, s.Migrate(ctx))
			requireSettings := func(step string) {
				t.Helper()
				var level, busy int
				require.NoError(t, db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&level))
				require.NoError(t, db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy))
				require.Equal(t, c.want, level, "synchronous after %s", step)
				require.Equal(t, c.busyMS, busy, "busy_timeout after %s", step)
			}
			requireSettings("Migrate")

			res, err := s.Begin(ctx, begin(newOp("op-1"), "w", t0, true))
			require.NoError(t, err)
			requireSettings("Begin")
			_, err = s.Finish(ctx, succeed("op-1", "w", t0.Add(time.Second), res.Attempt.Number)) // lazily durable
			require.NoError(t, err)
			requireSettings("a lazy Finish")
			_, err = s.Finish(ctx, succeed("op-1", "w", t0.Add(time.Second), res.Attempt.Number))
			require.ErrorIs(t, err, ledger.ErrLeaseLost)
			requireSettings("a lazy Finish that failed")
			_, _, err = s.Get(ctx, "op-1")
			require.NoError(t, err)
			requireSettings("Get")

			// The caller's own transaction on the pool runs with its setting.
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, _, err = s.CreateOrGetTx(ctx, tx, newOp("op-2"), t0)
			require.NoError(t, err)
			var inTx int
			require.NoError(t, tx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&inTx))
			require.Equal(t, c.want, inTx, "inside the caller's CreateOrGetTx transaction")
			require.NoError(t, tx.Commit())
		})
	}
}

// A lazily durable Finish lowers synchronous on its connection; the writes
// that rule 2 depends on (the attempt journal) must still run with FULL on
// every connection afterwards.
func TestLazyFinishLeavesJournalWritesFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "l.db"), ledgersqlite.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(ctx))
	// One connection only, so the Finish and the next write share it.
	ledgersqlite.DB(s).SetMaxOpenConns(1)

	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	op := ledger.NewOperation{ID: "op-1", Key: "op-1", Provider: "p", Kind: "charge", References: []string{"o"},
		Fingerprint: "f", Request: []byte(`{}`), KeyTTL: time.Hour}
	br, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	_, err = s.Finish(ctx, ledger.FinishParams{ID: op.ID, Owner: "w", Now: now, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: br.Attempt.Number, Class: ledger.OutcomeSuccess}})
	require.NoError(t, err)

	level, err := ledgersqlite.WriteSynchronous(ctx, s)
	require.NoError(t, err)
	require.Equal(t, 2, level, "durable writes run with synchronous=FULL after a lazy Finish")
}
