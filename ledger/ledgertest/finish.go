package ledgertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

func testFinishNextCheckAt(t *testing.T, h *Harness) {
	s := h.Store
	for _, c := range []struct {
		name     string
		from, to ledger.Status
		wantNow  bool // zero NextCheckAt means Now; otherwise it stays zero
	}{
		{"in_flight_to_unknown", ledger.StatusInFlight, ledger.StatusUnknown, true},
		{"in_flight_to_pending", ledger.StatusInFlight, ledger.StatusPending, true},
		{"pending_to_pending", ledger.StatusPending, ledger.StatusPending, true},
		{"unknown_to_unknown", ledger.StatusUnknown, ledger.StatusUnknown, true},
		{"in_flight_to_manual_review", ledger.StatusInFlight, ledger.StatusManualReview, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, hd := reachOwn(t, s, "next-"+c.name, c.from)
			p := transitionParams(hd, c.from, c.to)
			p.NextCheckAt = time.Time{}

			got := mustFinish(t, s, p)
			want := time.Time{}
			if c.wantNow {
				want = p.Now
			}
			requireTime(t, want, got.NextCheckAt, "NextCheckAt")
			requireStored(t, s, got)
		})
	}
}

func testFinishKeepLease(t *testing.T, h *Harness) {
	s := h.Store
	t.Run("kept_when_not_terminal", func(t *testing.T) {
		t.Parallel()
		op := NewOp("op-keep")
		mustStart(t, s, op, ownerA, base)
		now := at(time.Second)
		got := mustFinishUnknown(t, s, op.ID, ownerA, now, attemptOutcome(1, ledger.StatusUnknown))
		requireLease(t, got, ownerA, at(leaseFor))
		requireStored(t, s, got)

		// Still held: another worker is refused, the owner may go on.
		_, err := s.Claim(t.Context(), ledger.ClaimParams{ID: op.ID, Owner: ownerB, Now: now, LeaseUntil: now.Add(leaseFor)})
		require.ErrorIs(t, err, ledger.ErrInProgress)
		_, att := mustStartAttempt(t, s, op.ID, ownerA, at(2*time.Second))
		require.Equal(t, 2, att.Number)
	})
	for _, to := range []ledger.Status{ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview} {
		t.Run("released_when_"+string(to), func(t *testing.T) {
			t.Parallel()
			_, hd := reachOwn(t, s, "keep-"+string(to), ledger.StatusInFlight)
			p := transitionParams(hd, ledger.StatusInFlight, to)
			p.KeepLease = true
			got := mustFinish(t, s, p)
			requireNoLease(t, got)
			requireStored(t, s, got)
		})
	}
}

func testFinishStale(t *testing.T, h *Harness) {
	s := h.Store
	t.Run("status_is_not_From", func(t *testing.T) {
		t.Parallel()
		op := NewOp("op-stale-status")
		mustBegin(t, s, beginParams(op, ownerA, base, false))
		before, beforeAtts := mustGet(t, s, op.ID)
		now := at(time.Second)
		for _, p := range []ledger.FinishParams{
			{ID: op.ID, Owner: ownerA, Now: now, From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_x"},
			{ID: op.ID, Owner: ownerA, Now: now, From: ledger.StatusInFlight, To: ledger.StatusSucceeded, Attempt: attemptOutcome(1, ledger.StatusSucceeded)},
			{ID: op.ID, Owner: ownerA, Now: now, From: ledger.StatusManualReview, To: ledger.StatusFailed},
		} {
			_, err := s.Finish(t.Context(), p)
			require.ErrorIs(t, err, ledger.ErrStateConflict, "Finish from %s of a pending operation", p.From)
			requireUnchanged(t, s, before, beforeAtts)
		}
	})
	t.Run("attempt_is_not_the_latest_unfinished", func(t *testing.T) {
		t.Parallel()
		op := NewOp("op-stale-attempt")
		mustStart(t, s, op, ownerA, base)
		mustFinishUnknown(t, s, op.ID, ownerA, at(time.Second), attemptOutcome(1, ledger.StatusUnknown))
		mustStartAttempt(t, s, op.ID, ownerA, at(2*time.Second))
		before, beforeAtts := mustGet(t, s, op.ID)

		for _, n := range []int{1, 3} {
			_, err := s.Finish(t.Context(), ledger.FinishParams{
				ID: op.ID, Owner: ownerA, Now: at(3 * time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
				Attempt: attemptOutcome(n, ledger.StatusSucceeded),
			})
			require.ErrorIs(t, err, ledger.ErrStateConflict, "Finish of attempt %d while attempt 2 is current", n)
			requireUnchanged(t, s, before, beforeAtts)
		}
		mustFinish(t, s, ledger.FinishParams{
			ID: op.ID, Owner: ownerA, Now: at(3 * time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
			Attempt: attemptOutcome(2, ledger.StatusSucceeded),
		})
	})
}

func testFinishStaleEarlierAttempt(t *testing.T, h *Harness) {
	s := h.Store
	// A's attempt 1 never got an outcome (A died); B took over and started
	// attempt 2. Attempt 1 is unfinished but no longer the latest.
	op := NewOp("op-stale-earlier")
	mustBegin(t, s, ledger.BeginParams{Op: op, Owner: ownerA, Now: base, LeaseUntil: at(time.Minute), StartAttempt: true})
	mustClaim(t, s, op.ID, ownerB, at(2*time.Minute))
	mustStartAttempt(t, s, op.ID, ownerB, at(3*time.Minute))
	before, beforeAtts := mustGet(t, s, op.ID)

	_, err := s.Finish(t.Context(), ledger.FinishParams{
		ID: op.ID, Owner: ownerB, Now: at(4 * time.Minute), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: attemptOutcome(1, ledger.StatusSucceeded),
	})
	require.ErrorIs(t, err, ledger.ErrStateConflict, "attempt 1 is not the latest")
	requireUnchanged(t, s, before, beforeAtts)
}

func testFinishRequiresLease(t *testing.T, h *Harness) {
	requireNeedsLease(t, h.Store, "op-fin", "Finish", func(id, owner string) error {
		_, err := h.Store.Finish(t.Context(), ledger.FinishParams{ID: id, Owner: owner, Now: at(2 * time.Second), From: ledger.StatusPending, To: ledger.StatusFailed})
		return err
	})
}

func testFinishOwnExpiredLease(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-fin-expired")
	mustBegin(t, s, ledger.BeginParams{Op: op, Owner: ownerA, Now: base, LeaseUntil: at(time.Minute), StartAttempt: true})

	// The answer came after the lease expired, but nobody took over: the
	// outcome is recorded rather than lost.
	now := at(10 * time.Minute)
	got := mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: now, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: attemptOutcome(1, ledger.StatusSucceeded), ProviderRef: "pi_1",
	})
	requireTime(t, now, got.FinishedAt, "FinishedAt")
}

func testFinishProviderRefAndResult(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-ref")
	hd := reach(t, s, op, ownerA, ledger.StatusUnknown)
	unknownToUnknown := func(now time.Time, ref string, result []byte) ledger.Operation {
		return mustFinish(t, s, ledger.FinishParams{
			ID: op.ID, Owner: ownerA, Now: now, From: ledger.StatusUnknown, To: ledger.StatusUnknown,
			ProviderRef: ref, Result: result, KeepLease: true,
		})
	}

	got := unknownToUnknown(hd.now, "pi_first", []byte(`{"status":"processing"}`))
	require.Equal(t, "pi_first", got.ProviderRef)
	require.JSONEq(t, `{"status":"processing"}`, string(got.Result))

	// Empty reference and nil result keep what was recorded.
	got = unknownToUnknown(hd.now.Add(time.Second), "", nil)
	require.Equal(t, "pi_first", got.ProviderRef)
	require.JSONEq(t, `{"status":"processing"}`, string(got.Result))
	requireStored(t, s, got)

	got = mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: hd.now.Add(2 * time.Second), From: ledger.StatusUnknown, To: ledger.StatusSucceeded,
		ProviderRef: "pi_second", Result: []byte(`{"status":"succeeded","amount":1000}`),
	})
	require.Equal(t, "pi_second", got.ProviderRef)
	require.JSONEq(t, `{"status":"succeeded","amount":1000}`, string(got.Result))
	requireStored(t, s, got)
}

func testFinishReview(t *testing.T, h *Harness) {
	s := h.Store
	t.Run("entered_once_reason_updated", func(t *testing.T) {
		t.Parallel()
		op, hd := reachOwn(t, s, "review", ledger.StatusManualReview)
		entered, _ := mustGet(t, s, op.ID)
		requireTime(t, at(time.Second), entered.ReviewAt, "ReviewAt is when the operation entered review")

		got := mustFinish(t, s, ledger.FinishParams{
			ID: op.ID, Owner: ownerA, Now: hd.now, From: ledger.StatusManualReview, To: ledger.StatusManualReview,
			ReviewCode: ledger.ReviewCodeOther, ReviewReason: "provider lookup still failing",
		})
		require.Equal(t, "provider lookup still failing", got.ReviewReason)
		requireTime(t, entered.ReviewAt, got.ReviewAt, "ReviewAt is kept while the operation stays in review")
		requireTime(t, time.Time{}, got.NextCheckAt, "NextCheckAt (no further lookups asked)")
		requireNoLease(t, got)
		requireStored(t, s, got)

		// No lookups asked: background work leaves it alone.
		now := at(time.Hour)
		due := mustClaimDue(t, s, ledger.ClaimDueParams{Owner: ownerB, Now: now, LeaseUntil: now.Add(leaseFor), Limit: 10, Provider: op.Provider, IncludeReview: true})
		require.Empty(t, due)
	})
	t.Run("settled_with_resolution", func(t *testing.T) {
		t.Parallel()
		op, hd := reachOwn(t, s, "review-settled", ledger.StatusManualReview)
		res := &ledger.Resolution{Actor: "reconciler", Note: "provider reports the charge succeeded", Outcome: ledger.ResolveSucceeded, At: hd.now}

		got := mustFinish(t, s, ledger.FinishParams{
			ID: op.ID, Owner: ownerA, Now: hd.now, From: ledger.StatusManualReview, To: ledger.StatusSucceeded,
			ProviderRef: "pi_found", Resolution: res,
		})
		require.Equal(t, "pi_found", got.ProviderRef)
		requireTime(t, hd.now, got.FinishedAt, "FinishedAt")
		require.NotNil(t, got.Resolution)
		require.Equal(t, canon(ledger.Operation{Resolution: res}).Resolution, canon(got).Resolution)
		requireStored(t, s, got)
	})
}

func testFinishNotFound(t *testing.T, h *Harness) {
	_, err := h.Store.Finish(t.Context(), ledger.FinishParams{ID: "op-missing", Owner: ownerA, Now: base, From: ledger.StatusPending, To: ledger.StatusFailed})
	require.ErrorIs(t, err, ledger.ErrNotFound)
}

func testKeyWindow(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-window")
	requireWindow := func(got ledger.Operation, start time.Time, step string) {
		t.Helper()
		requireTime(t, start, got.WindowStart, step+": WindowStart")
		want := time.Time{}
		if !start.IsZero() {
			want = start.Add(op.KeyTTL)
		}
		requireTime(t, want, got.KeyExpiresAt, step+": KeyExpiresAt")
		requireStored(t, s, got)
	}

	got, _ := mustStart(t, s, op, ownerA, base)
	requireWindow(got, base, "first attempt opens the window")

	got = mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: at(time.Second), From: ledger.StatusInFlight, To: ledger.StatusPending,
		Attempt: attemptOutcome(1, ledger.StatusPending), NextCheckAt: at(time.Minute),
	})
	requireWindow(got, time.Time{}, "a not_sent first attempt closes it again")

	t2 := at(2 * time.Minute)
	mustClaim(t, s, op.ID, ownerA, t2)
	got, _ = mustStartAttempt(t, s, op.ID, ownerA, t2)
	requireWindow(got, t2, "the next attempt opens it")

	got = mustFinishUnknown(t, s, op.ID, ownerA, t2.Add(time.Second), attemptOutcome(2, ledger.StatusUnknown))
	requireWindow(got, t2, "a maybe_sent attempt keeps it")

	t3 := at(3 * time.Minute)
	got, _ = mustStartAttempt(t, s, op.ID, ownerA, t3)
	requireWindow(got, t2, "a later attempt does not move it")

	// Attempt 2 may have reached the provider: even a not_sent attempt 3
	// cannot make the operation "safe to send" (pending) again.
	before, beforeAtts := mustGet(t, s, op.ID)
	_, err := s.Finish(context.Background(), ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: t3.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusPending,
		Attempt: attemptOutcome(3, ledger.StatusPending),
	})
	require.ErrorIs(t, err, ledger.ErrStateConflict, "in_flight -> pending while an earlier attempt may have reached the provider")
	requireUnchanged(t, s, before, beforeAtts)

	got = mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: t3.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: attemptOutcome(3, ledger.StatusPending),
	})
	requireWindow(got, t2, "a not_sent later attempt leaves it at the attempt that may have reached")

	_, atts := mustGet(t, s, op.ID)
	require.Len(t, atts, 3)
	require.Equal(t, []bool{false, true, false}, []bool{atts[0].MayHaveReached, atts[1].MayHaveReached, atts[2].MayHaveReached})
}

func testAttemptBookkeeping(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-attempts")
	errText := "délai dépassé ✓ (read tcp 10.0.0.1:443: i/o timeout)"
	maxText := strings.Repeat("e", ledger.MaxTextBytes) // the longest text allowed

	mustStart(t, s, op, ownerA, base)
	mustFinishUnknown(t, s, op.ID, ownerA, at(time.Second),
		&ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent, HTTPStatus: 502, ProviderRequestID: "req_1", Error: errText})
	mustStartAttempt(t, s, op.ID, ownerA, at(time.Minute))
	mustFinishUnknown(t, s, op.ID, ownerA, at(time.Minute+time.Second),
		&ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeKeyInUse, HTTPStatus: 409, ProviderRequestID: "req_2", Error: maxText})
	mustStartAttempt(t, s, op.ID, ownerA, at(2*time.Minute))
	got := mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: at(2*time.Minute + time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt:     &ledger.AttemptOutcome{Number: 3, Class: ledger.OutcomeSuccess, HTTPStatus: 200, ProviderRequestID: "req_3"},
		ProviderRef: "pi_1",
	})
	require.Equal(t, 3, got.Attempts)

	_, atts := mustGet(t, s, op.ID)
	want := []ledger.Attempt{
		{OperationID: op.ID, Number: 1, Key: op.Key, StartedAt: base, FinishedAt: at(time.Second), MayHaveReached: true, Outcome: ledger.OutcomeMaybeSent, HTTPStatus: 502, ProviderRequestID: "req_1", Error: errText},
		{OperationID: op.ID, Number: 2, Key: op.Key, StartedAt: at(time.Minute), FinishedAt: at(time.Minute + time.Second), MayHaveReached: true, Outcome: ledger.OutcomeKeyInUse, HTTPStatus: 409, ProviderRequestID: "req_2", Error: maxText},
		{OperationID: op.ID, Number: 3, Key: op.Key, StartedAt: at(2 * time.Minute), FinishedAt: at(2*time.Minute + time.Second), MayHaveReached: true, Outcome: ledger.OutcomeSuccess, HTTPStatus: 200, ProviderRequestID: "req_3"},
	}
	require.Len(t, atts, len(want))
	for i := range want {
		require.Equal(t, want[i], canonAttempt(atts[i]), "attempt %d", i+1)
	}
}

// Replayed records that the provider answered an attempt with a stored
// answer for its key instead of processing it; Get returns it per attempt.
func testAttemptReplayed(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-replayed")
	mustStart(t, s, op, ownerA, base)
	mustFinishUnknown(t, s, op.ID, ownerA, at(time.Second),
		&ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent, HTTPStatus: 500, Error: "api_error"})
	mustStartAttempt(t, s, op.ID, ownerA, at(time.Minute))
	mustFinishUnknown(t, s, op.ID, ownerA, at(time.Minute+time.Second),
		&ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeMaybeSent, HTTPStatus: 500, Error: "api_error", Replayed: true})
	_, open := mustStartAttempt(t, s, op.ID, ownerA, at(2*time.Minute))
	require.False(t, open.Replayed, "an attempt in flight has no answer yet")

	_, atts := mustGet(t, s, op.ID)
	require.Len(t, atts, 3)
	require.Equal(t, []bool{false, true, false}, []bool{atts[0].Replayed, atts[1].Replayed, atts[2].Replayed})
	if h.Reopen != nil {
		_, atts = mustGet(t, h.Reopen(t), op.ID)
		require.True(t, atts[1].Replayed, "stored, not only returned")
	}
}

// Finish refuses an attempt that is not the latest, or the latest once it is
// finished, even when the operation's status says in_flight again.
func testFinishAttemptLatestAndOpen(t *testing.T, h *Harness) {
	if h.SetRawStatus == nil {
		t.Skip("Harness.SetRawStatus is nil")
	}
	s := h.Store
	op := NewOp("op-fin-open")
	mustStart(t, s, op, ownerA, base)
	fin := ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: at(time.Second), From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: &ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeMaybeSent}, KeepLease: true,
	}
	_, err := s.Finish(t.Context(), fin)
	require.ErrorIs(t, err, ledger.ErrStateConflict, "attempt 2 does not exist")
	fin.Attempt.Number = 1
	mustFinish(t, s, fin)

	// Force the status back by hand: the attempt is still finished.
	h.SetRawStatus(t, op.ID, string(ledger.StatusInFlight))
	_, err = s.Finish(t.Context(), fin)
	require.ErrorIs(t, err, ledger.ErrStateConflict, "attempt 1 is already finished")
}
