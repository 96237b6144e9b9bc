package ledgersqlite_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

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

// After an operator approves a resend under a new key, the attempts made with
// the old key no longer count for the key window: a not_sent outcome of the
// first attempt with the new key closes the window again.
func TestResendWindowIgnoresEarlierGenerations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	op := newOp("op-1")

	_, err := s.Begin(ctx, begin(op, "w", t0, true))
	require.NoError(t, err)
	now := t0.Add(time.Second)
	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: op.ID, Owner: "w", Now: now, From: ledger.StatusInFlight, To: ledger.StatusManualReview,
		Attempt:      &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
		ReviewReason: "window passed",
	})
	require.NoError(t, err)
	now = now.Add(48 * time.Hour)
	got, err := s.Resolve(ctx, ledger.ResolveParams{
		ID: op.ID, Actor: "ops@example.com", Note: "provider has no record", Outcome: ledger.ResolveResend,
		NewKey: "op-1.g1", NewGeneration: 1, Now: now,
	})
	require.NoError(t, err)
	require.Equal(t, ledger.StatusPending, got.Status)
	require.True(t, got.WindowStart.IsZero())

	_, err = s.Claim(ctx, ledger.ClaimParams{ID: op.ID, Owner: "w", Now: now, LeaseUntil: now.Add(leaseFor)})
	require.NoError(t, err)
	got, att, err := s.StartAttempt(ctx, ledger.StartAttemptParams{ID: op.ID, Owner: "w", Now: now, LeaseUntil: now.Add(leaseFor)})
	require.NoError(t, err)
	require.Equal(t, 2, att.Number)
	require.Equal(t, "op-1.g1", att.Key)
	require.True(t, now.Equal(got.WindowStart))
	require.True(t, now.Add(24*time.Hour).Equal(got.KeyExpiresAt))

	got, err = s.Finish(ctx, ledger.FinishParams{
		ID: op.ID, Owner: "w", Now: now.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusPending,
		Attempt: &ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeNotSent, Error: "connection refused"},
	})
	require.NoError(t, err)
	require.True(t, got.WindowStart.IsZero(), "attempt 1 carried the old key: it does not hold the new window open")
	require.True(t, got.KeyExpiresAt.IsZero())
}

// Values that cannot be read back are reported as ErrCorrupt, not panics,
// and the row stays as it is.
func TestCorruptValues(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := dbPath(t)
	s := openAt(t, path)
	raw := rawDB(t, path)
	for _, id := range []string{"bad-refs", "bad-outcome", "bad-resolution"} {
		_, err := s.Begin(ctx, begin(newOp(id), "w", t0, true))
		require.NoError(t, err)
	}
	_, err := raw.Exec(`UPDATE payonce_operations SET refs = 'not json' WHERE id = 'bad-refs'`)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE payonce_attempts SET outcome = 'teleported' WHERE operation_id = 'bad-outcome'`)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE payonce_operations SET resolved_by = 'x', resolution_outcome = 'maybe' WHERE id = 'bad-resolution'`)
	require.NoError(t, err)

	for _, id := range []string{"bad-refs", "bad-outcome", "bad-resolution"} {
		_, _, err := s.Get(ctx, id)
		require.ErrorIs(t, err, ledger.ErrCorrupt, id)
	}
	_, err = s.Begin(ctx, begin(newOp("bad-refs"), "w", t0, true))
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "bad-outcome", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
	})
	require.ErrorIs(t, err, ledger.ErrCorrupt)
}

// Finish refuses an attempt that is not the latest or already finished.
func TestFinishAttemptMustBeLatestAndOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	_, err := s.Begin(ctx, begin(newOp("op-1"), "w", t0, true))
	require.NoError(t, err)
	fin := ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: &ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeMaybeSent}, KeepLease: true,
	}
	_, err = s.Finish(ctx, fin)
	require.ErrorIs(t, err, ledger.ErrStateConflict)
	fin.Attempt.Number = 1
	_, err = s.Finish(ctx, fin)
	require.NoError(t, err)

	// Force the status back by hand: the attempt is still finished.
	_, err = ledgersqlite.DB(s).Exec(`UPDATE payonce_operations SET status = 'in_flight' WHERE id = 'op-1'`)
	require.NoError(t, err)
	_, err = s.Finish(ctx, fin)
	require.ErrorIs(t, err, ledger.ErrStateConflict)
}
