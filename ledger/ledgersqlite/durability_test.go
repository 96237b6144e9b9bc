package ledgersqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// A lazily durable Finish lowers synchronous on its connection; the writes
// that rule 2 depends on (the attempt journal) must still run with FULL on
// every connection afterwards.
func TestLazyFinishLeavesJournalWritesFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "l.db"))
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
