package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// Write is one write on operation id, a step of the flows with which a
// store's tests check its writes on the copy of its last write (each
// store's one-statement fast path) against the long way.
type Write func(t *testing.T, s ledger.Store, id string)

// BeginWithAttempt creates operation id (NewOp) at at with its first
// attempt, leased to "w".
func BeginWithAttempt(at time.Time) Write {
	return func(t *testing.T, s ledger.Store, id string) {
		t.Helper()
		_, err := s.Begin(t.Context(), ledger.BeginParams{Op: NewOp(id), Owner: "w", Now: at, LeaseUntil: at.Add(time.Minute), StartAttempt: true})
		require.NoError(t, err)
	}
}

// FinishWith finishes operation id with p (its Owner "w" unless set).
func FinishWith(p ledger.FinishParams) Write {
	return func(t *testing.T, s ledger.Store, id string) {
		t.Helper()
		p.ID = id
		if p.Owner == "" {
			p.Owner = "w"
		}
		_, err := s.Finish(t.Context(), p)
		require.NoError(t, err)
	}
}

// StartAttemptAt starts the next attempt of operation id at at, under
// owner "w", recording evs with it.
func StartAttemptAt(at time.Time, evs ...ledger.NewEvent) Write {
	return func(t *testing.T, s ledger.Store, id string) {
		t.Helper()
		_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: id, Owner: "w", Now: at, LeaseUntil: at.Add(time.Minute), Events: evs})
		require.NoError(t, err)
	}
}

// RequireSameLedger requires got to hold operation id exactly as want
// does: the row, its attempts and its history.
func RequireSameLedger(t *testing.T, want, got ledger.Store, id string) {
	t.Helper()
	wantOp, wantAttempts, err := want.Get(t.Context(), id)
	require.NoError(t, err)
	gotOp, gotAttempts, err := got.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, wantOp, gotOp)
	require.Equal(t, wantAttempts, gotAttempts)
	wantEvents, err := want.Events(t.Context(), id)
	require.NoError(t, err)
	gotEvents, err := got.Events(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, wantEvents, gotEvents)
}
