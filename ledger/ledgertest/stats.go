package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// Stats is a read-only summary: what is open, how old the oldest of it is,
// why operations wait in review, and (when asked) what has settled.

func mustStats(t *testing.T, s ledger.Store, includeSettled bool) ledger.Stats {
	t.Helper()
	st, err := s.Stats(t.Context(), ledger.StatsParams{IncludeSettled: includeSettled})
	require.NoError(t, err, "Stats (IncludeSettled %v)", includeSettled)
	return st
}

// reviewFor records op at created and moves it from pending to
// manual_review with reason (and its code, reviewCodeOf) at reviewed.
func reviewFor(t *testing.T, s ledger.Store, op ledger.NewOperation, reason string, created, reviewed time.Time) {
	t.Helper()
	mustBegin(t, s, beginParams(op, ownerA, created, false))
	mustFinish(t, s, ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: reviewed, From: ledger.StatusPending, To: ledger.StatusManualReview,
		ReviewCode: reviewCodeOf(reason), ReviewReason: reason})
}

// reviewCodeOf is the code the suite records with each review reason it
// makes up.
func reviewCodeOf(reason string) ledger.ReviewCode {
	switch reason {
	case "window passed":
		return ledger.ReviewCodeWindowPassed
	case "duplicate":
		return ledger.ReviewCodeDuplicated
	}
	return ledger.ReviewCodeOther
}

func testStatsEmpty(t *testing.T, h *Harness) {
	empty := ledger.Stats{Open: []ledger.StatusCount{}, Oldest: []ledger.OldestOpen{}, Reviews: []ledger.ReasonCount{}, Consumers: []ledger.ConsumerLag{}, Findings: []ledger.FindingCount{}}
	require.Equal(t, empty, mustStats(t, h.Store, false))
	empty.Settled = []ledger.StatusCount{}
	require.Equal(t, empty, mustStats(t, h.Store, true), "Settled counted (none): empty, not nil")
}

func testStatsCounts(t *testing.T, h *Harness) {
	s := h.Store
	charge := func(id string) ledger.NewOperation { return newOpFor(id, "stripe", "charge") }
	refund := func(id string) ledger.NewOperation { return newOpFor(id, "adyen", "refund") }

	// stripe charges. Three pending: p-b and p-a recorded at the same
	// instant (the smaller ID is the oldest), p-c later. One in flight,
	// one unknown (created after the in-flight one), two succeeded and one
	// failed (created before everything open: they must not be the oldest).
	mustCreate(t, s, charge("p-c"), at(3*time.Second))
	mustCreate(t, s, charge("p-b"), at(time.Second))
	mustCreate(t, s, charge("p-a"), at(time.Second))
	mustStart(t, s, charge("f-1"), ownerA, at(2*time.Second))
	_, a := mustStart(t, s, charge("u-1"), ownerA, at(4*time.Second))
	mustFinishUnknown(t, s, "u-1", ownerA, at(5*time.Second), attemptOutcome(a.Number, ledger.StatusUnknown))
	finished(t, s, charge("s-1"), ledger.StatusSucceeded, base)
	finished(t, s, charge("s-2"), ledger.StatusSucceeded, at(time.Hour))
	finished(t, s, charge("s-3"), ledger.StatusFailed, base)

	// adyen refunds: one pending, three in review for two reasons (the
	// oldest by ReviewAt, r-2, is not the oldest by CreatedAt, r-1), and
	// one resolved out of review (failed: settled).
	mustCreate(t, s, refund("r-p"), at(10*time.Second))
	reviewFor(t, s, refund("r-1"), "duplicate", at(11*time.Second), at(30*time.Second))
	reviewFor(t, s, refund("r-2"), "duplicate", at(19*time.Second), at(20*time.Second))
	reviewFor(t, s, refund("r-3"), "window passed", at(24*time.Second), at(25*time.Second))
	reviewFor(t, s, refund("r-4"), "window passed", at(6*time.Second), at(15*time.Second))
	_, err := s.Resolve(t.Context(), ledger.ResolveParams{ID: "r-4", Actor: "alice", Note: "refunded by hand", Outcome: ledger.ResolveFailed, Now: at(40 * time.Second)})
	require.NoError(t, err)

	open := []ledger.StatusCount{
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusPending, Count: 1},
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusManualReview, Count: 3},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusPending, Count: 3},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusInFlight, Count: 1},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusUnknown, Count: 1},
	}
	oldest := []ledger.OldestOpen{
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusPending, Since: at(10 * time.Second), OperationID: "r-p"},
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusManualReview, Since: at(20 * time.Second), OperationID: "r-2"},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusPending, Since: at(time.Second), OperationID: "p-a"},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusInFlight, Since: at(2 * time.Second), OperationID: "f-1"},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusUnknown, Since: at(4 * time.Second), OperationID: "u-1"},
	}
	reviews := []ledger.ReasonCount{
		{Provider: "adyen", Kind: "refund", Code: ledger.ReviewCodeDuplicated, Reason: "duplicate", Count: 2},
		{Provider: "adyen", Kind: "refund", Code: ledger.ReviewCodeWindowPassed, Reason: "window passed", Count: 1},
	}
	require.Equal(t, ledger.Stats{Open: open, Oldest: oldest, Reviews: reviews, Consumers: []ledger.ConsumerLag{}, Findings: []ledger.FindingCount{}}, mustStats(t, s, false),
		"without IncludeSettled, Settled is nil")
	require.Equal(t, ledger.Stats{Open: open, Oldest: oldest, Reviews: reviews, Consumers: []ledger.ConsumerLag{}, Findings: []ledger.FindingCount{}, Settled: []ledger.StatusCount{
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusFailed, Count: 1},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusSucceeded, Count: 2},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusFailed, Count: 1},
	}}, mustStats(t, s, true))

	// Moves are counted where they land: the in-flight charge succeeds, the
	// oldest pending one is sent, the oldest in review is resolved.
	mustFinish(t, s, ledger.FinishParams{ID: "f-1", Owner: ownerA, Now: at(time.Minute), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: attemptOutcome(1, ledger.StatusSucceeded)})
	mustClaim(t, s, "p-a", ownerB, at(time.Minute))
	mustStartAttempt(t, s, "p-a", ownerB, at(time.Minute))
	_, err = s.Resolve(t.Context(), ledger.ResolveParams{ID: "r-2", Actor: "alice", Note: "confirmed at the provider", Outcome: ledger.ResolveSucceeded,
		ProviderRef: "rf_2", Now: at(time.Minute)})
	require.NoError(t, err)
	got := mustStats(t, s, true)
	require.Equal(t, []ledger.StatusCount{
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusPending, Count: 1},
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusManualReview, Count: 2},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusPending, Count: 2},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusInFlight, Count: 1},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusUnknown, Count: 1},
	}, got.Open)
	require.Equal(t, []ledger.OldestOpen{
		oldest[0],
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusManualReview, Since: at(25 * time.Second), OperationID: "r-3"},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusPending, Since: at(time.Second), OperationID: "p-b"},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusInFlight, Since: at(time.Second), OperationID: "p-a"},
		oldest[4],
	}, got.Oldest)
	require.Equal(t, []ledger.ReasonCount{
		{Provider: "adyen", Kind: "refund", Code: ledger.ReviewCodeDuplicated, Reason: "duplicate", Count: 1},
		{Provider: "adyen", Kind: "refund", Code: ledger.ReviewCodeWindowPassed, Reason: "window passed", Count: 1},
	}, got.Reviews)
	require.Equal(t, []ledger.StatusCount{
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusSucceeded, Count: 1},
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusFailed, Count: 1},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusSucceeded, Count: 3},
		{Provider: "stripe", Kind: "charge", Status: ledger.StatusFailed, Count: 1},
	}, got.Settled)
}

// Operations that Cleanup removed are history kept as tombstones: not
// counted, and a late duplicate of one does not bring it back.
func testStatsTombstones(t *testing.T, h *Harness) {
	s := h.Store
	finished(t, s, NewOp("gone-1"), ledger.StatusSucceeded, base)
	finished(t, s, NewOp("gone-2"), ledger.StatusFailed, base)
	finished(t, s, NewOp("kept"), ledger.StatusSucceeded, cleanedAt.Add(-time.Hour))
	mustCreate(t, s, NewOp("live"), base)
	rep, err := s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)
	require.Equal(t, 2, rep.Tombstoned)
	res := mustBegin(t, s, beginParams(NewOp("gone-1"), ownerA, cleanedAt, true))
	require.True(t, res.Op.Tombstone, "the late duplicate gets the tombstone")

	require.Equal(t, ledger.Stats{
		Open:      []ledger.StatusCount{{Provider: "stripe", Kind: "charge", Status: ledger.StatusPending, Count: 1}},
		Oldest:    []ledger.OldestOpen{{Provider: "stripe", Kind: "charge", Status: ledger.StatusPending, Since: base, OperationID: "live"}},
		Reviews:   []ledger.ReasonCount{},
		Consumers: []ledger.ConsumerLag{}, Findings: []ledger.FindingCount{},
		Settled: []ledger.StatusCount{{Provider: "stripe", Kind: "charge", Status: ledger.StatusSucceeded, Count: 1}},
	}, mustStats(t, s, true))
}

// Stats writes nothing, and neither waits for a writer nor holds one up.
func testStatsReadOnly(t *testing.T, h *Harness) {
	s := h.Store
	for _, st := range []ledger.Status{ledger.StatusPending, ledger.StatusUnknown, ledger.StatusManualReview, ledger.StatusSucceeded} {
		reachOwn(t, s, "ro-"+string(st), st)
	}
	before := snapshot(t, s)
	want := mustStats(t, s, true)
	require.Len(t, want.Open, 3)
	require.Equal(t, want, mustStats(t, s, true), "a second call sees the same")
	require.Equal(t, before, snapshot(t, s), "Stats changed the ledger")

	t.Run("WhileWritesAreBlocked", func(t *testing.T) {
		if h.BlockWrites == nil {
			t.Skip("Harness.BlockWrites is nil")
		}
		release := h.BlockWrites(t)
		defer release()
		// A bound, not a timing assertion: a Stats that waited for the
		// writer would otherwise hang until the test binary's timeout.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		got, err := s.Stats(ctx, ledger.StatsParams{IncludeSettled: true})
		require.NoError(t, err, "Stats waited for a blocked writer")
		require.Equal(t, want, got)
	})
}

// Stats running in a loop beside a writer: every write succeeds, and every
// result is one snapshot (each operation counted exactly once).
func testStatsConcurrentWriters(t *testing.T, h *Harness) {
	s := h.Store
	const n = 30
	ids := numberedIDs("cw", n)
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			for i := range n {
				op := NewOp(ids[i])
				now := at(time.Duration(i) * time.Second)
				res, err := s.Begin(context.Background(), beginParams(op, ownerA, now, true))
				if err != nil {
					return err
				}
				if _, err := s.Finish(context.Background(), ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: now.Add(time.Millisecond),
					From: ledger.StatusInFlight, To: ledger.StatusSucceeded, Attempt: attemptOutcome(res.Attempt.Number, ledger.StatusSucceeded)}); err != nil {
					return err
				}
			}
			return nil
		}()
	}()
	// counts returns the operations a result counts as open and as settled.
	counts := func(st ledger.Stats) (open, settled int64) {
		for _, c := range st.Open {
			open += c.Count
		}
		for _, c := range st.Settled {
			settled += c.Count
		}
		return open, settled
	}
	var last int64
	for running := true; running; {
		select {
		case err := <-done:
			require.NoError(t, err, "a write failed while Stats ran")
			running = false
		default:
		}
		open, settled := counts(mustStats(t, s, true))
		// The writer has at most one operation open at a time, and never
		// removes one: a result mixing two snapshots counts an operation
		// twice (in flight and settled) or not at all.
		require.LessOrEqual(t, open, int64(1), "open operations")
		require.GreaterOrEqual(t, open+settled, last, "an operation disappeared between two results")
		require.LessOrEqual(t, open+settled, int64(n), "more operations counted than recorded")
		last = open + settled
	}
	open, settled := counts(mustStats(t, s, true))
	require.Zero(t, open)
	require.Equal(t, int64(n), settled)
}

func testStatsCancelled(t *testing.T, h *Harness) {
	reachOwn(t, h.Store, "cancelled", ledger.StatusPending)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, settled := range []bool{false, true} {
		_, err := h.Store.Stats(ctx, ledger.StatsParams{IncludeSettled: settled})
		require.ErrorIs(t, err, context.Canceled, "IncludeSettled %v", settled)
	}
}
