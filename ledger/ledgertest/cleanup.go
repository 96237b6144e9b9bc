package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// finished records op and finishes it as succeeded (one attempt started a
// minute before) or failed (never sent) at when.
func finished(t *testing.T, s ledger.Store, op ledger.NewOperation, to ledger.Status, when time.Time) {
	t.Helper()
	start := when.Add(-time.Minute)
	p := ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: when, To: to}
	if to == ledger.StatusSucceeded {
		mustStart(t, s, op, ownerA, start)
		p.From, p.Attempt = ledger.StatusInFlight, attemptOutcome(1, to)
	} else {
		mustBegin(t, s, beginParams(op, ownerA, start, false))
		p.From = ledger.StatusPending
	}
	mustFinish(t, s, p)
}

// shortTTL returns NewOp(id) with a key TTL of one hour, so that its key
// window closes long before the cleanups below run.
func shortTTL(id string) ledger.NewOperation {
	op := NewOp(id)
	op.KeyTTL = time.Hour
	return op
}

func testCleanupRetentionTooShort(t *testing.T, h *Harness) {
	s := h.Store
	finished(t, s, shortTTL("op-old"), ledger.StatusSucceeded, at(time.Minute))
	before := snapshot(t, s)

	for _, retention := range []time.Duration{0, keyTTL - time.Microsecond} {
		_, err := s.Cleanup(t.Context(), ledger.CleanupParams{Now: at(30 * 24 * time.Hour), Retention: retention, KeyTTL: keyTTL})
		require.ErrorIs(t, err, ledger.ErrRetentionTooShort, "retention %v", retention)
		require.Equal(t, before, snapshot(t, s), "nothing may be deleted")
	}
}

func testCleanupBatches(t *testing.T, h *Harness) {
	s := h.Store
	const total = 25
	all := numberedIDs("op-clean", total)
	for i, id := range all {
		to := ledger.StatusSucceeded
		if i%2 == 1 {
			to = ledger.StatusFailed
		}
		finished(t, s, shortTTL(id), to, at(time.Minute))
	}

	p := ledger.CleanupParams{Now: at(72 * time.Hour), Retention: 48 * time.Hour, KeyTTL: keyTTL, BatchSize: 10}
	rep, err := s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, total, rep.Deleted)
	require.Equal(t, 3, rep.Batches, "25 operations in batches of 10")
	require.Equal(t, total, rep.Tombstoned, "one tombstone per deleted operation")
	require.Equal(t, total, rep.Tombstones)
	require.Zero(t, rep.TombstonesPurged)
	requireTime(t, time.Time{}, rep.OldestFinishedAt, "OldestFinishedAt when nothing is left")
	for i, id := range all {
		got, atts := mustGet(t, s, id)
		require.True(t, got.Tombstone, "%s: only its tombstone is left", id)
		require.Empty(t, atts, "%s: the attempts went with the operation", id)
		want := ledger.StatusSucceeded
		if i%2 == 1 {
			want = ledger.StatusFailed
		}
		require.Equal(t, want, got.Status, id)
	}
	left, err := s.List(t.Context(), ledger.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, left)

	rep, err = s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Zero(t, rep.Deleted)
	require.Zero(t, rep.Tombstoned)
	require.Equal(t, total, rep.Tombstones)

	// The same ID later does not start afresh: the late call gets the
	// recorded outcome and nothing is sent.
	res := mustBegin(t, s, beginParams(shortTTL(all[0]), ownerA, at(73*time.Hour), true))
	require.False(t, res.Claimed)
	require.Nil(t, res.Attempt)
	require.True(t, res.Op.Tombstone)
	require.Equal(t, ledger.StatusSucceeded, res.Op.Status)
	_, atts := mustGet(t, s, all[0])
	require.Empty(t, atts)
}

func testCleanupKeeps(t *testing.T, h *Harness) {
	s := h.Store
	// Deletable: final, finished long ago, window closed (or never opened).
	finished(t, s, shortTTL("op-old-ok"), ledger.StatusSucceeded, at(time.Minute))
	finished(t, s, shortTTL("op-old-ko"), ledger.StatusFailed, at(time.Minute))
	// Final but the provider still remembers the key.
	openWindow := shortTTL("op-open-window")
	openWindow.KeyTTL = 30 * 24 * time.Hour
	finished(t, s, openWindow, ledger.StatusSucceeded, at(time.Minute))
	// Final but within retention.
	finished(t, s, shortTTL("op-recent"), ledger.StatusSucceeded, at(71*time.Hour))
	// Not final, however old: never deleted.
	mustCreate(t, s, shortTTL("op-live-pending"), base)
	mustStart(t, s, shortTTL("op-live-inflight"), ownerA, base)
	reach(t, s, newOpFor("op-live-unknown", "psp-unknown", "charge"), ownerA, ledger.StatusUnknown)
	toReview(t, s, shortTTL("op-live-review"))

	all := snapshot(t, s)
	var kept []record
	for _, r := range all {
		if r.Op.ID != "op-old-ok" && r.Op.ID != "op-old-ko" {
			kept = append(kept, r)
		}
	}

	rep, err := s.Cleanup(t.Context(), ledger.CleanupParams{Now: at(72 * time.Hour), Retention: 48 * time.Hour, KeyTTL: keyTTL})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Deleted)
	require.Equal(t, 1, rep.Batches)
	require.Equal(t, 2, rep.Tombstoned)
	require.Equal(t, 2, rep.Tombstones)
	requireTime(t, at(time.Minute), rep.OldestFinishedAt, "OldestFinishedAt (op-open-window)")
	require.Equal(t, kept, snapshot(t, s), "only op-old-ok and op-old-ko may go, and nothing else may change")
	for _, id := range []string{"op-old-ok", "op-old-ko"} {
		got, _ := mustGet(t, s, id)
		require.True(t, got.Tombstone, id)
	}

	// A month later both windows and retention have passed for the others.
	rep, err = s.Cleanup(t.Context(), ledger.CleanupParams{Now: at(31 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: keyTTL})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Deleted)
	require.Equal(t, 4, rep.Tombstones)
	requireTime(t, time.Time{}, rep.OldestFinishedAt, "OldestFinishedAt with no final operation left")
	left, err := s.List(t.Context(), ledger.ListFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{"op-live-inflight", "op-live-pending", "op-live-review", "op-live-unknown"}, ids(left))
}
