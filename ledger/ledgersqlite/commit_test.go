package ledgersqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync/atomic"
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
	s := openAt(t, filepath.Join(t.TempDir(), "l.db"))
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

// The fast path of a call that succeeds costs two commits: Begin (create,
// lease, attempt) and Finish.
func TestFastPathIsTwoCommits(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	before := ledgersqlite.Commits(s)
	res, err := s.Begin(ctx, begin(newOp("op-1"), "w", t0, true))
	require.NoError(t, err)
	require.True(t, res.Created)
	require.True(t, res.Claimed)
	require.NotNil(t, res.Attempt)
	_, err = s.Finish(ctx, succeed("op-1", "w", t0.Add(time.Second), res.Attempt.Number))
	require.NoError(t, err)
	require.EqualValues(t, 2, ledgersqlite.Commits(s)-before)

	// A replay of the finished call reads the recorded result and sends
	// nothing.
	res, err = s.Begin(ctx, begin(newOp("op-1"), "w2", t0.Add(time.Minute), true))
	require.NoError(t, err)
	require.False(t, res.Claimed)
	require.Nil(t, res.Attempt)
	require.Equal(t, ledger.StatusSucceeded, res.Op.Status)
	require.Equal(t, "pi_op-1", res.Op.ProviderRef)
}

// BenchmarkFastPath measures one successful synchronous operation: Begin
// (create, lease, start attempt) then Finish (succeeded), with
// synchronous=FULL. commits/op counts the COMMITs the store issued.
func BenchmarkFastPath(b *testing.B) {
	s := openStore(b)
	ctx := b.Context()
	before := ledgersqlite.Commits(s)
	n := 0
	for b.Loop() {
		id := fmt.Sprintf("op-%09d", n)
		now := t0.Add(time.Duration(n) * time.Millisecond)
		n++
		res, err := s.Begin(ctx, begin(newOp(id), "w", now, true))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Finish(ctx, succeed(id, "w", now, res.Attempt.Number)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(ledgersqlite.Commits(s)-before)/float64(n), "commits/op")
}

// BenchmarkFastPathParallel runs the fast path from many goroutines on one
// store: writes queue inside the store, so throughput is bounded by one
// writer (and one fsync per commit).
func BenchmarkFastPathParallel(b *testing.B) {
	s := openStore(b)
	ctx := b.Context()
	before := ledgersqlite.Commits(s)
	var seq, ops atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		owner := fmt.Sprintf("w-%d", seq.Add(1))
		for pb.Next() {
			n := ops.Add(1)
			id := fmt.Sprintf("op-%09d", n)
			now := t0.Add(time.Duration(n) * time.Millisecond)
			res, err := s.Begin(ctx, begin(newOp(id), owner, now, true))
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := s.Finish(ctx, succeed(id, owner, now, res.Attempt.Number)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(ledgersqlite.Commits(s)-before)/float64(ops.Load()), "commits/op")
}
