package ledgertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

func claimDue(owner string, now time.Time, limit int) ledger.ClaimDueParams {
	return ledger.ClaimDueParams{Owner: owner, Now: now, LeaseUntil: now.Add(leaseFor), Limit: limit}
}

// requireClaimedBy checks what ClaimDue returned for one operation.
func requireClaimedBy(t *testing.T, op ledger.Operation, p ledger.ClaimDueParams) {
	t.Helper()
	requireLease(t, op, p.Owner, p.LeaseUntil)
	requireTime(t, p.LeaseUntil, op.NextCheckAt, "NextCheckAt (the lease expiry)")
}

func testClaimDueBatches(t *testing.T, h *Harness) {
	s := h.Store
	const total = 25
	want := numberedIDs("op-batch", total)
	for _, id := range want {
		mustCreate(t, s, NewOp(id), base)
	}

	var got []string
	for call, size := range []int{10, 10, 5, 0} {
		p := claimDue(fmt.Sprintf("scanner-%d", call), at(time.Second), 10)
		ops := mustClaimDue(t, s, p)
		require.Len(t, ops, size, "call %d", call+1)
		for _, op := range ops {
			require.Equal(t, ledger.StatusPending, op.Status)
			requireClaimedBy(t, op, p)
		}
		if len(ops) > 0 {
			requireStored(t, s, ops[0])
		}
		got = append(got, ids(ops)...)
	}
	// Same NextCheckAt everywhere: ID order, each exactly once.
	require.Equal(t, want, got)
}

func testClaimDueOrder(t *testing.T, h *Harness) {
	s := h.Store
	mustCreate(t, s, NewOp("op-c"), at(3*time.Second))
	mustCreate(t, s, NewOp("op-b"), at(time.Second))
	mustCreate(t, s, NewOp("op-a"), at(2*time.Second))
	mustCreate(t, s, NewOp("op-d"), at(time.Second))
	mustCreate(t, s, NewOp("op-e"), at(10*time.Minute)) // not due yet
	// Due through Finish rather than creation.
	mustBegin(t, s, beginParams(NewOp("op-0"), ownerA, base, false))
	mustFinish(t, s, ledger.FinishParams{ID: "op-0", Owner: ownerA, Now: at(time.Second), From: ledger.StatusPending, To: ledger.StatusPending, NextCheckAt: at(2 * time.Second)})

	// Limit takes the oldest due first.
	ops := mustClaimDue(t, s, claimDue(ownerB, at(5*time.Second), 2))
	require.Equal(t, []string{"op-b", "op-d"}, ids(ops))
	ops = mustClaimDue(t, s, claimDue(ownerB, at(5*time.Second), 100))
	require.Equal(t, []string{"op-0", "op-a", "op-c"}, ids(ops))

	// Leases taken at 5s lapsed at 5m05s, which is when those operations
	// became due again; op-e became due at 10m.
	ops = mustClaimDue(t, s, claimDue(ownerB, at(11*time.Minute), 100))
	require.Equal(t, []string{"op-0", "op-a", "op-b", "op-c", "op-d", "op-e"}, ids(ops))
}

func testClaimDueProvider(t *testing.T, h *Harness) {
	s := h.Store
	mustCreate(t, s, newOpFor("op-p1", "stripe", "charge"), base)
	mustCreate(t, s, newOpFor("op-p2", "adyen", "charge"), base)
	mustCreate(t, s, newOpFor("op-p3", "stripe", "refund"), base)
	mustCreate(t, s, newOpFor("op-p4", "adyen", "refund"), base)

	p := claimDue(ownerA, at(time.Second), 100)
	p.Provider = "adyen"
	ops := mustClaimDue(t, s, p)
	require.Equal(t, []string{"op-p2", "op-p4"}, ids(ops))
	for _, op := range ops {
		require.Equal(t, "adyen", op.Provider)
	}

	p.Provider = "nobody"
	require.Empty(t, mustClaimDue(t, s, p))

	ops = mustClaimDue(t, s, claimDue(ownerB, at(time.Second), 100))
	require.Equal(t, []string{"op-p1", "op-p3"}, ids(ops))
}

func testClaimDueSkipsLeased(t *testing.T, h *Harness) {
	s := h.Store
	// Due (NextCheckAt defaults to Now) but its owner kept the lease.
	pending := NewOp("op-kept-pending")
	mustBegin(t, s, beginParams(pending, ownerA, base, false))
	mustFinish(t, s, ledger.FinishParams{ID: pending.ID, Owner: ownerA, Now: at(time.Second), From: ledger.StatusPending, To: ledger.StatusPending, KeepLease: true})
	// Unknown, due at 1m, lease kept until 5m.
	unknown := NewOp("op-kept-unknown")
	reach(t, s, unknown, ownerA, ledger.StatusUnknown)
	before := snapshot(t, s)

	require.Empty(t, mustClaimDue(t, s, claimDue(ownerB, at(2*time.Minute), 100)), "live leases are never handed out")
	require.Equal(t, before, snapshot(t, s))

	p := claimDue(ownerB, at(leaseFor+time.Second), 100)
	ops := mustClaimDue(t, s, p)
	require.Equal(t, []string{pending.ID, unknown.ID}, ids(ops))
	require.Equal(t, ledger.StatusPending, ops[0].Status)
	require.Equal(t, ledger.StatusUnknown, ops[1].Status)
	for _, op := range ops {
		requireClaimedBy(t, op, p)
		requireStored(t, s, op)
	}
}

func testClaimDueExpiredInFlight(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-due-inflight")
	mustBegin(t, s, ledger.BeginParams{Op: op, Owner: ownerA, Now: base, LeaseUntil: at(time.Minute), StartAttempt: true})

	require.Empty(t, mustClaimDue(t, s, claimDue(ownerB, at(30*time.Second), 10)))

	p := claimDue(ownerB, at(2*time.Minute), 10)
	ops := mustClaimDue(t, s, p)
	require.Equal(t, []string{op.ID}, ids(ops))
	require.Equal(t, ledger.StatusUnknown, ops[0].Status, "an expired in_flight operation becomes unknown")
	requireClaimedBy(t, ops[0], p)
	requireStored(t, s, ops[0])
	_, atts := mustGet(t, s, op.ID)
	require.Len(t, atts, 1)
	require.True(t, atts[0].MayHaveReached)
}

func testClaimDueReview(t *testing.T, h *Harness) {
	s := h.Store
	toReview := func(id string, next time.Time) {
		op := NewOp(id)
		mustStart(t, s, op, ownerA, base)
		mustFinish(t, s, ledger.FinishParams{
			ID: id, Owner: ownerA, Now: at(time.Second), From: ledger.StatusInFlight, To: ledger.StatusManualReview,
			Attempt: attemptOutcome(1, ledger.StatusManualReview), ReviewCode: ledger.ReviewCodeWindowPassed, ReviewReason: "window passed", NextCheckAt: next,
		})
	}
	toReview("op-review-lookup", at(time.Minute))
	toReview("op-review-quiet", time.Time{})
	before := snapshot(t, s)

	now := at(2 * time.Minute)
	require.Empty(t, mustClaimDue(t, s, claimDue(ownerB, now, 10)), "review only with IncludeReview")
	require.Equal(t, before, snapshot(t, s))

	p := claimDue(ownerB, now, 10)
	p.IncludeReview = true
	ops := mustClaimDue(t, s, p)
	require.Equal(t, []string{"op-review-lookup"}, ids(ops), "only reviews that asked for lookups")
	require.Equal(t, ledger.StatusManualReview, ops[0].Status)
	requireClaimedBy(t, ops[0], p)
	requireStored(t, s, ops[0])
}

func testClaimDueSkipsFinal(t *testing.T, h *Harness) {
	s := h.Store
	reach(t, s, newOpFor("op-final-ok", "psp-final-ok", "charge"), ownerA, ledger.StatusSucceeded)
	reach(t, s, newOpFor("op-final-ko", "psp-final-ko", "charge"), ownerA, ledger.StatusFailed)
	mustCreate(t, s, NewOp("op-later"), at(time.Hour))
	before := snapshot(t, s)

	p := claimDue(ownerB, at(10*time.Minute), 10)
	p.IncludeReview = true
	require.Empty(t, mustClaimDue(t, s, p))
	require.Equal(t, before, snapshot(t, s))
}
