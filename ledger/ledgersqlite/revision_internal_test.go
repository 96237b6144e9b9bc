package ledgersqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// The copy Begin keeps, and the one a Finish that kept the lease keeps, are
// the row, the attempt and the revision exactly as they read back: a
// decision on the copy is the decision on the row.
func TestCopyIsTheRowAsStored(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(filepath.Join(t.TempDir(), "l.db"), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(ctx))
	now := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	op := ledger.NewOperation{ID: "op-1", Key: "op-1", Provider: "p", Kind: "charge", References: []string{"order", "o-1"},
		Fingerprint: "f", Request: []byte(`{"amount":1}`), KeyTTL: time.Hour + 1500*time.Microsecond, PaymentRef: "pay-1"}
	_, err = s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)

	requireStored := func(want revision, ok bool) {
		t.Helper()
		require.True(t, ok, "a copy is kept")
		err := s.read(ctx, func(c *sql.Conn) error {
			got, err := getOp(ctx, c, op.ID)
			require.NoError(t, err)
			require.Equal(t, got, want.op)
			if want.att != nil {
				att, _, err := attemptForFinish(ctx, c, op.ID, want.att.Number)
				require.NoError(t, err)
				require.Equal(t, att, want.att)
			}
			var rev int64
			require.NoError(t, c.QueryRowContext(ctx, `SELECT revision FROM payonce_operations WHERE id = ?`, op.ID).Scan(&rev))
			require.Equal(t, rev, want.rev)
			return nil
		})
		require.NoError(t, err)
	}
	rev, ok := s.revs.Take(op.ID)
	requireStored(rev, ok)
	s.revs.Put(rev.op.ID, rev)

	_, err = s.Finish(ctx, ledger.FinishParams{ID: op.ID, Owner: "w", Now: now.Add(time.Second), From: ledger.StatusInFlight,
		To: ledger.StatusUnknown, KeepLease: true, NextCheckAt: now.Add(time.Minute), Result: []byte{},
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent, Error: "timeout"}})
	require.NoError(t, err)
	require.EqualValues(t, 1, s.fastFinishes.Load())
	rev, ok = s.revs.Take(op.ID)
	requireStored(rev, ok)
}
