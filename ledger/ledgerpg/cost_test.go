package ledgerpg_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// Events travel in the batches the calls already send: recording them costs
// no round trip and no commit.
func TestEventsCostNoRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, counter := countingStore(t)
	cost := func(call func()) (roundTrips, commits int64) {
		r, c := counter.roundTrips.Load(), counter.commits.Load()
		call()
		return counter.roundTrips.Load() - r, counter.commits.Load() - c
	}
	flow := func(id string, evs []ledger.NewEvent) (start, finish [2]int64) {
		_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp(id), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
		require.NoError(t, err)
		start[0], start[1] = cost(func() {
			_, _, err := s.StartAttempt(ctx, ledger.StartAttemptParams{ID: id, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), Events: evs})
			require.NoError(t, err)
		})
		finish[0], finish[1] = cost(func() {
			_, err := s.Finish(ctx, ledger.FinishParams{
				ID: id, Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess}, Events: evs,
			})
			require.NoError(t, err)
		})
		return start, finish
	}
	plainStart, plainFinish := flow("op-plain", nil)
	evs := []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: "a"}, {Kind: ledger.EventNote, Detail: "b"}}
	evStart, evFinish := flow("op-events", evs)
	require.Equal(t, plainStart, evStart, "StartAttempt (round trips, commits)")
	require.Equal(t, plainFinish, evFinish, "Finish (round trips, commits)")
	got, err := s.Events(ctx, "op-events")
	require.NoError(t, err)
	require.Len(t, got, 4)
}

// The fast path costs two commits: Begin (a single statement for a new
// operation) and Finish.
func TestFastPathCommitsTwice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, counter := countingStore(t)

	res, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	require.NotNil(t, res.Attempt)
	require.Equal(t, int64(1), counter.commits.Load(), "Begin")
	require.Equal(t, int64(1), counter.roundTrips.Load(), "Begin of a new operation is one statement")

	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess, HTTPStatus: 200}, ProviderRef: "pi_1",
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), counter.commits.Load(), "Begin + Finish")
}
