package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

func testDurability(t *testing.T, h *Harness) {
	if h.Reopen == nil {
		t.Skip("Harness.Reopen is nil")
	}
	s := h.Store
	reach(t, s, newOpFor("op-dur-ok", "psp-dur-ok", "charge"), ownerA, ledger.StatusSucceeded)
	reach(t, s, newOpFor("op-dur-unknown", "psp-dur-unknown", "refund"), ownerA, ledger.StatusUnknown)
	reach(t, s, newOpFor("op-dur-inflight", "psp-dur-inflight", "capture"), ownerA, ledger.StatusInFlight)
	mustCreate(t, s, NewOp("op-dur-pending"), base)
	toReview(t, s, NewOp("op-dur-resent"))
	mustResolve(t, s, ledger.ResolveParams{ID: "op-dur-resent", Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend, NewKey: "op-dur-resent-g1", NewGeneration: 1, Now: at(time.Minute)})
	toReview(t, s, NewOp("op-dur-review"))
	before := snapshot(t, s)
	require.Len(t, before, 6)

	s = h.Reopen(t)
	require.Equal(t, before, snapshot(t, s), "everything reads back the same after reopening")

	// The reopened store carries on where the old one stopped.
	now := at(time.Hour)
	got := mustClaim(t, s, "op-dur-inflight", ownerB, now)
	require.Equal(t, ledger.StatusUnknown, got.Status)
	_, att := mustStart(t, s, NewOp("op-dur-new"), ownerB, now)
	require.Equal(t, 1, att.Number)
}

func testCorruption(t *testing.T, h *Harness) {
	if h.SetRawStatus == nil {
		t.Skip("Harness.SetRawStatus is nil")
	}
	s := h.Store
	bad := NewOp("op-corrupt")
	mustCreate(t, s, bad, base)
	fine := NewOp("op-fine")
	mustCreate(t, s, fine, base)
	h.SetRawStatus(t, bad.ID, "bogus")

	var getErr, listErr, beginErr error
	require.NotPanics(t, func() {
		_, _, getErr = s.Get(t.Context(), bad.ID)
		_, listErr = s.List(t.Context(), ledger.ListFilter{})
		_, beginErr = s.Begin(t.Context(), beginParams(bad, ownerA, at(time.Second), true))
	})
	require.ErrorIs(t, getErr, ledger.ErrCorrupt, "Get")
	require.ErrorIs(t, listErr, ledger.ErrCorrupt, "List")
	require.ErrorIs(t, beginErr, ledger.ErrCorrupt, "Begin")

	// The rest of the ledger still works.
	_, att := mustStart(t, s, fine, ownerA, at(time.Second))
	require.Equal(t, 1, att.Number)
}
