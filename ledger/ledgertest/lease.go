package ledgertest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

func testClaimPending(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-claim")
	mustCreate(t, s, op, base)

	now := at(time.Second)
	got := mustClaim(t, s, op.ID, ownerA, now)
	require.Equal(t, ledger.StatusPending, got.Status)
	requireLease(t, got, ownerA, now.Add(leaseFor))
	requireTime(t, now.Add(leaseFor), got.NextCheckAt, "NextCheckAt (the lease expiry)")
	requireStored(t, s, got)

	before, beforeAtts := mustGet(t, s, op.ID)
	_, err := s.Claim(t.Context(), ledger.ClaimParams{ID: op.ID, Owner: ownerB, Now: at(2 * time.Second), LeaseUntil: at(time.Hour)})
	require.ErrorIs(t, err, ledger.ErrInProgress)
	requireUnchanged(t, s, before, beforeAtts)
}

func testClaimReentrant(t *testing.T, h *Harness) {
	s := h.Store
	eachReached(t, s, "reclaim", []ledger.Status{ledger.StatusPending, ledger.StatusUnknown}, func(t *testing.T, st ledger.Status, op ledger.NewOperation, hd held, before ledger.Operation, beforeAtts []ledger.Attempt) {
		now := hd.now.Add(time.Second)
		got, err := s.Claim(t.Context(), ledger.ClaimParams{ID: op.ID, Owner: ownerA, Now: now, LeaseUntil: now.Add(time.Hour)})
		require.NoError(t, err, "the lease holder may claim again")
		require.Equal(t, st, got.Status)
		requireLease(t, got, ownerA, now.Add(time.Hour))
		requireTime(t, now.Add(time.Hour), got.NextCheckAt, "NextCheckAt (the lease expiry)")
		requireStored(t, s, got)
	})
}

func testClaimTerminal(t *testing.T, h *Harness) {
	s := h.Store
	eachReached(t, s, "claim-terminal", []ledger.Status{ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview}, func(t *testing.T, st ledger.Status, op ledger.NewOperation, hd held, before ledger.Operation, beforeAtts []ledger.Attempt) {
		for _, owner := range []string{ownerA, ownerB} {
			now := at(time.Hour)
			_, err := s.Claim(t.Context(), ledger.ClaimParams{ID: op.ID, Owner: owner, Now: now, LeaseUntil: now.Add(leaseFor)})
			require.ErrorIs(t, err, ledger.ErrTerminal, "Claim by %s", owner)
			requireUnchanged(t, s, before, beforeAtts)
		}
	})
}

func testClaimNotFound(t *testing.T, h *Harness) {
	_, err := h.Store.Claim(t.Context(), ledger.ClaimParams{ID: "op-missing", Owner: ownerA, Now: base, LeaseUntil: at(leaseFor)})
	require.ErrorIs(t, err, ledger.ErrNotFound)
	_, _, err = h.Store.Get(t.Context(), "op-missing")
	require.ErrorIs(t, err, ledger.ErrNotFound, "Claim must not create the operation")
}

func testLeaseExpiry(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-expiry")
	mustBegin(t, s, ledger.BeginParams{Op: op, Owner: ownerA, Now: base, LeaseUntil: at(time.Minute)})
	before, beforeAtts := mustGet(t, s, op.ID)

	// Before expiry: B is refused through every door.
	early := at(30 * time.Second)
	res, err := s.Begin(t.Context(), ledger.BeginParams{Op: op, Owner: ownerB, Now: early, LeaseUntil: early.Add(leaseFor), StartAttempt: true})
	require.ErrorIs(t, err, ledger.ErrInProgress)
	require.Equal(t, op.ID, res.Op.ID)
	require.False(t, res.Claimed)
	_, err = s.Claim(t.Context(), ledger.ClaimParams{ID: op.ID, Owner: ownerB, Now: early, LeaseUntil: early.Add(leaseFor)})
	require.ErrorIs(t, err, ledger.ErrInProgress)
	requireUnchanged(t, s, before, beforeAtts)

	// After expiry: B wins, and a pending operation stays pending.
	late := at(time.Minute + time.Second)
	got := mustClaim(t, s, op.ID, ownerB, late)
	require.Equal(t, ledger.StatusPending, got.Status)
	requireLease(t, got, ownerB, late.Add(leaseFor))
	requireStored(t, s, got)

	// Now A is the one refused.
	_, err = s.Claim(t.Context(), ledger.ClaimParams{ID: op.ID, Owner: ownerA, Now: late, LeaseUntil: late.Add(leaseFor)})
	require.ErrorIs(t, err, ledger.ErrInProgress)
}

func testLeaseExpiredInFlight(t *testing.T, h *Harness) {
	s := h.Store
	takeOver := map[string]func(t *testing.T, op ledger.NewOperation, now time.Time) ledger.Operation{
		"Claim": func(t *testing.T, op ledger.NewOperation, now time.Time) ledger.Operation {
			return mustClaim(t, s, op.ID, ownerB, now)
		},
		"Begin": func(t *testing.T, op ledger.NewOperation, now time.Time) ledger.Operation {
			res := mustBegin(t, s, beginParams(op, ownerB, now, true))
			require.True(t, res.Claimed)
			require.Nil(t, res.Attempt, "no attempt may start: the expired one may have been sent")
			return res.Op
		},
	}
	for name, take := range takeOver {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			op := NewOp("op-expired-inflight-" + name)
			mustBegin(t, s, ledger.BeginParams{Op: op, Owner: ownerA, Now: base, LeaseUntil: at(time.Minute), StartAttempt: true})

			now := at(2 * time.Minute)
			got := take(t, op, now)
			require.Equal(t, ledger.StatusUnknown, got.Status, "an expired in_flight operation becomes unknown, never pending")
			require.Equal(t, 1, got.Attempts)
			requireLease(t, got, ownerB, now.Add(leaseFor))
			requireTime(t, base, got.WindowStart, "WindowStart")
			requireStored(t, s, got)

			_, atts := mustGet(t, s, op.ID)
			require.Len(t, atts, 1)
			require.True(t, atts[0].MayHaveReached)
			requireTime(t, time.Time{}, atts[0].FinishedAt, "the dead worker's attempt has no outcome")
		})
	}
}

func testStolenLease(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-stolen")
	mustBegin(t, s, ledger.BeginParams{Op: op, Owner: ownerA, Now: base, LeaseUntil: at(time.Minute), StartAttempt: true})
	mustClaim(t, s, op.ID, ownerB, at(2*time.Minute))
	before, beforeAtts := mustGet(t, s, op.ID)

	// A's late answer arrives after B took over: every write of A is refused.
	now := at(2*time.Minute + time.Second)
	for _, p := range []ledger.FinishParams{
		{ID: op.ID, Owner: ownerA, Now: now, From: ledger.StatusInFlight, To: ledger.StatusSucceeded, Attempt: attemptOutcome(1, ledger.StatusSucceeded), ProviderRef: "pi_late"},
		{ID: op.ID, Owner: ownerA, Now: now, From: ledger.StatusInFlight, To: ledger.StatusPending, Attempt: attemptOutcome(1, ledger.StatusPending)},
		{ID: op.ID, Owner: ownerA, Now: now, From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_late"},
		{ID: op.ID, Owner: ownerA, Now: now, From: ledger.StatusUnknown, To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeOther, ReviewReason: "late"},
	} {
		_, err := s.Finish(t.Context(), p)
		require.ErrorIs(t, err, ledger.ErrLeaseLost, "Finish %s -> %s by the old owner", p.From, p.To)
		requireUnchanged(t, s, before, beforeAtts)
	}
	_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: op.ID, Owner: ownerA, Now: now, LeaseUntil: now.Add(leaseFor)})
	require.ErrorIs(t, err, ledger.ErrLeaseLost)
	requireUnchanged(t, s, before, beforeAtts)

	// B, the holder, can go on.
	got, att := mustStartAttempt(t, s, op.ID, ownerB, now)
	require.Equal(t, 2, att.Number)
	require.Equal(t, ledger.StatusInFlight, got.Status)
}

func testStartAttempt(t *testing.T, h *Harness) {
	s := h.Store
	t.Run("pending", func(t *testing.T) {
		t.Parallel()
		op := NewOp("op-sa-pending")
		mustCreate(t, s, op, base)
		mustClaim(t, s, op.ID, ownerA, at(time.Second))

		now := at(2 * time.Second)
		got, att := mustStartAttempt(t, s, op.ID, ownerA, now)
		require.Equal(t, ledger.StatusInFlight, got.Status)
		require.Equal(t, 1, got.Attempts)
		requireLease(t, got, ownerA, now.Add(leaseFor))
		requireTime(t, now.Add(leaseFor), got.NextCheckAt, "NextCheckAt (the lease expiry)")
		requireTime(t, now, got.WindowStart, "WindowStart")
		requireTime(t, now.Add(keyTTL), got.KeyExpiresAt, "KeyExpiresAt")
		require.Equal(t, ledger.Attempt{OperationID: op.ID, Number: 1, Key: op.Key, StartedAt: ledgerdriver.UTC(now), MayHaveReached: true}, canonAttempt(att))
		requireStored(t, s, got)
		_, atts := mustGet(t, s, op.ID)
		require.Len(t, atts, 1)
		require.Equal(t, canonAttempt(att), canonAttempt(atts[0]))
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		op, hd := reachOwn(t, s, "sa-unknown", ledger.StatusUnknown)

		now := hd.now.Add(time.Second)
		got, att := mustStartAttempt(t, s, op.ID, ownerA, now)
		require.Equal(t, ledger.StatusInFlight, got.Status)
		require.Equal(t, 2, got.Attempts)
		require.Equal(t, 2, att.Number)
		require.True(t, att.MayHaveReached)
		requireLease(t, got, ownerA, now.Add(leaseFor))
		requireTime(t, base, got.WindowStart, "WindowStart stays at the first attempt")
		requireStored(t, s, got)
		_, atts := mustGet(t, s, op.ID)
		require.Len(t, atts, 2)
	})
}

func testStartAttemptOwnExpiredLease(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-sa-expired")
	mustCreate(t, s, op, base)
	mustClaim(t, s, op.ID, ownerA, at(time.Second))

	// Expired but nobody took it: the owner still holds it.
	now := at(time.Hour)
	got, att := mustStartAttempt(t, s, op.ID, ownerA, now)
	require.Equal(t, 1, att.Number)
	requireLease(t, got, ownerA, now.Add(leaseFor))
}

func testStartAttemptRequiresLease(t *testing.T, h *Harness) {
	requireNeedsLease(t, h.Store, "op-sa", "StartAttempt", func(id, owner string) error {
		now := at(2 * time.Second)
		_, _, err := h.Store.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: id, Owner: owner, Now: now, LeaseUntil: now.Add(leaseFor)})
		return err
	})
}

// requireNeedsLease checks that call, made at 2s by a caller who does not
// hold the lease (on an operation never leased, on one leased by another
// owner, on one whose lease its owner released), fails with ErrLeaseLost and
// changes nothing. The operations' IDs start with prefix; method names the
// call in failure messages.
func requireNeedsLease(t *testing.T, s ledger.Store, prefix, method string, call func(id, owner string) error) {
	t.Helper()
	never := NewOp(prefix + "-never-held")
	mustCreate(t, s, never, base)
	other := NewOp(prefix + "-other-owner")
	mustBegin(t, s, beginParams(other, ownerA, base, false))
	released := NewOp(prefix + "-released")
	mustBegin(t, s, beginParams(released, ownerA, base, false))
	mustFinish(t, s, ledger.FinishParams{ID: released.ID, Owner: ownerA, Now: at(time.Second), From: ledger.StatusPending, To: ledger.StatusPending, NextCheckAt: at(time.Hour)})

	for _, c := range []struct{ id, owner string }{
		{never.ID, ownerA},
		{other.ID, ownerB},
		{released.ID, ownerA},
	} {
		before, beforeAtts := mustGet(t, s, c.id)
		require.ErrorIs(t, call(c.id, c.owner), ledger.ErrLeaseLost, "%s on %s by %s", method, c.id, c.owner)
		requireUnchanged(t, s, before, beforeAtts)
	}
}

func testStartAttemptRefused(t *testing.T, h *Harness) {
	s := h.Store
	eachReached(t, s, "sa-refused", []ledger.Status{ledger.StatusInFlight, ledger.StatusManualReview, ledger.StatusSucceeded, ledger.StatusFailed}, func(t *testing.T, st ledger.Status, op ledger.NewOperation, hd held, before ledger.Operation, beforeAtts []ledger.Attempt) {
		_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: op.ID, Owner: ownerA, Now: hd.now, LeaseUntil: hd.now.Add(leaseFor)})
		if st.Final() {
			// Nobody can hold the lease of a final operation, so either
			// refusal is right.
			require.Truef(t, errors.Is(err, ledger.ErrStateConflict) || errors.Is(err, ledger.ErrLeaseLost),
				"want ErrStateConflict or ErrLeaseLost, got %v", err)
		} else {
			require.ErrorIs(t, err, ledger.ErrStateConflict)
		}
		requireUnchanged(t, s, before, beforeAtts)
	})
}

func testStartAttemptNotFound(t *testing.T, h *Harness) {
	_, _, err := h.Store.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: "op-missing", Owner: ownerA, Now: base, LeaseUntil: at(leaseFor)})
	require.ErrorIs(t, err, ledger.ErrNotFound)
}
