package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// toReview records op, sends one attempt at base that may have reached the
// provider, and moves it to manual_review at 1s with no lease and no lookups
// asked: the state an operator finds it in.
func toReview(t *testing.T, s ledger.Store, op ledger.NewOperation) {
	t.Helper()
	toReviewWith(t, s, op, "", nil)
}

// toReviewWith is toReview with a provider reference and a result recorded
// on the way (what an answer or a lookup attached before the review).
func toReviewWith(t *testing.T, s ledger.Store, op ledger.NewOperation, ref string, result []byte) {
	t.Helper()
	mustStart(t, s, op, ownerA, base)
	mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: at(time.Second), From: ledger.StatusInFlight, To: ledger.StatusManualReview,
		Attempt: attemptOutcome(1, ledger.StatusUnknown), ReviewCode: ledger.ReviewCodeWindowPassed, ReviewReason: "window passed, outcome unknown",
		ProviderRef: ref, Result: result,
	})
}

func mustResolve(t *testing.T, s ledger.Store, p ledger.ResolveParams) ledger.Operation {
	t.Helper()
	got, err := s.Resolve(t.Context(), p)
	require.NoError(t, err, "Resolve %s as %s", p.ID, p.Outcome)
	return got
}

func requireResolution(t *testing.T, p ledger.ResolveParams, got ledger.Operation) {
	t.Helper()
	require.NotNil(t, got.Resolution, "the decision is recorded")
	require.Equal(t, ledger.Resolution{Actor: p.Actor, Note: p.Note, Outcome: p.Outcome, At: ledgerdriver.UTC(p.Now)}, *canon(got).Resolution)
}

func testResolveSucceeded(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-res-ok")
	toReview(t, s, op)
	before, beforeAtts := mustGet(t, s, op.ID)

	p := ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "charge found in the dashboard", Outcome: ledger.ResolveSucceeded, ProviderRef: "pi_manual", Now: at(time.Hour)}
	got := requireSettled(t, s, p, ledger.StatusSucceeded, beforeAtts)
	require.Equal(t, "pi_manual", got.ProviderRef)
	require.Equal(t, before.Key, got.Key)
	require.Equal(t, before.Generation, got.Generation)
	require.Equal(t, before.ReviewReason, got.ReviewReason, "the review stays as history")
	requireTime(t, before.ReviewAt, got.ReviewAt, "ReviewAt stays as history")
}

func testResolveFailed(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-res-ko")
	toReview(t, s, op)
	_, beforeAtts := mustGet(t, s, op.ID)

	p := ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "provider has no such charge; customer informed", Outcome: ledger.ResolveFailed, Now: at(time.Hour)}
	requireSettled(t, s, p, ledger.StatusFailed, beforeAtts)
}

// requireSettled resolves with p and checks that the operation is final
// with status want at p.Now, carries the decision, reads back as returned
// and kept its attempts (beforeAtts). It returns the resolved operation.
func requireSettled(t *testing.T, s ledger.Store, p ledger.ResolveParams, want ledger.Status, beforeAtts []ledger.Attempt) ledger.Operation {
	t.Helper()
	got := mustResolve(t, s, p)
	require.Equal(t, want, got.Status)
	requireTime(t, p.Now, got.FinishedAt, "FinishedAt")
	requireTime(t, time.Time{}, got.NextCheckAt, "NextCheckAt of a final operation")
	requireResolution(t, p, got)
	requireStored(t, s, got)
	_, atts := mustGet(t, s, p.ID)
	require.Equal(t, beforeAtts, atts)
	return got
}

func testResolveResend(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-res-resend")
	toReviewWith(t, s, op, "pi_seen", []byte(`{"status":"requires_payment_method"}`))
	inReview, beforeAtts := mustGet(t, s, op.ID)
	require.Equal(t, "pi_seen", inReview.ProviderRef)

	now := at(time.Hour)
	p := ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "provider confirms it never saw the key", Outcome: ledger.ResolveResend, NewKey: op.ID + "-g1", NewGeneration: 1, Now: now}
	got := mustResolve(t, s, p)
	require.Equal(t, op.ID, got.ID, "the ID never changes")
	require.Equal(t, p.NewKey, got.Key)
	require.Equal(t, 1, got.Generation)
	require.Equal(t, ledger.StatusPending, got.Status)
	require.Equal(t, 1, got.Attempts)
	requireTime(t, time.Time{}, got.WindowStart, "WindowStart (a new key has no window yet)")
	requireTime(t, time.Time{}, got.KeyExpiresAt, "KeyExpiresAt")
	requireTime(t, now, got.NextCheckAt, "NextCheckAt (due at once)")
	requireTime(t, time.Time{}, got.FinishedAt, "FinishedAt")
	requireNoLease(t, got)
	require.Empty(t, got.ProviderRef, "the new generation does not inherit the previous one's reference")
	require.Nil(t, got.Result, "nor its result")
	requireResolution(t, p, got)
	requireStored(t, s, got) // both are written as cleared, not left in the row
	_, atts := mustGet(t, s, op.ID)
	require.Equal(t, beforeAtts, atts, "past attempts are kept")
	requireEvents(t, s, op.ID, resolutionEvent(op.ID, 1, now, "alice", map[string]any{
		"outcome": "resend", "new_key": p.NewKey, "new_generation": float64(1), "previous_provider_ref": "pi_seen",
	}))

	// Background work picks it up and sends under the new key.
	due := mustClaimDue(t, s, claimDue(ownerB, now.Add(time.Second), 10))
	require.Equal(t, []string{op.ID}, ids(due))
	sent, att := mustStartAttempt(t, s, op.ID, ownerB, now.Add(2*time.Second))
	require.Equal(t, 2, att.Number)
	require.Equal(t, p.NewKey, att.Key, "the attempt carries the new key")
	requireTime(t, now.Add(2*time.Second), sent.WindowStart, "WindowStart of the new key")

	// The window belongs to the key: when the first attempt under the new
	// key proves not sent, the window closes, whatever the old key's
	// attempts did.
	got = mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerB, Now: now.Add(3 * time.Second), From: ledger.StatusInFlight, To: ledger.StatusPending,
		Attempt: attemptOutcome(2, ledger.StatusPending),
	})
	requireTime(t, time.Time{}, got.WindowStart, "WindowStart after the new key's only attempt was not sent")
	requireTime(t, time.Time{}, got.KeyExpiresAt, "KeyExpiresAt")
	requireStored(t, s, got)
}

func testResolveResendThenBegin(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-res-begin")
	toReviewWith(t, s, op, "pi_seen", []byte(`{"status":"canceled"}`))
	newKey := op.ID + "-g1"
	mustResolve(t, s, ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend, NewKey: newKey, NewGeneration: 1, Now: at(time.Hour)})

	// The caller comes back with the operation as it first described it
	// (generation 0): the ledger's current key is the one sent.
	res := mustBegin(t, s, beginParams(op, ownerB, at(2*time.Hour), true))
	require.True(t, res.Claimed)
	require.NotNil(t, res.Attempt)
	require.Equal(t, newKey, res.Attempt.Key)
	require.Equal(t, 2, res.Attempt.Number)
	require.Equal(t, newKey, res.Op.Key)
	require.Equal(t, 1, res.Op.Generation)
	require.Empty(t, res.Op.ProviderRef, "nothing of the previous generation's outcome is reported")
	require.Nil(t, res.Op.Result)
	requireStored(t, s, res.Op)
}

func testResolveResendGeneration(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-res-gen")
	toReview(t, s, op)
	resend := func(gen int, key string, now time.Time) ledger.ResolveParams {
		return ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend, NewKey: key, NewGeneration: gen, Now: now}
	}
	refused := func(p ledger.ResolveParams) {
		t.Helper()
		before, beforeAtts := mustGet(t, s, op.ID)
		_, err := s.Resolve(t.Context(), p)
		require.ErrorIs(t, err, ledger.ErrStateConflict, "resend to generation %d from %d", p.NewGeneration, before.Generation)
		requireUnchanged(t, s, before, beforeAtts)
	}

	refused(resend(2, op.ID+"-g2", at(time.Hour)))
	mustResolve(t, s, resend(1, op.ID+"-g1", at(time.Hour)))

	// Sent again under generation 1, and back in review.
	now := at(2 * time.Hour)
	mustClaim(t, s, op.ID, ownerA, now)
	mustStartAttempt(t, s, op.ID, ownerA, now)
	mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: now.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusManualReview,
		Attempt: attemptOutcome(2, ledger.StatusUnknown), ReviewCode: ledger.ReviewCodeWindowPassed, ReviewReason: "window passed again",
	})

	refused(resend(1, op.ID+"-g1b", at(3*time.Hour)))
	refused(resend(3, op.ID+"-g3", at(3*time.Hour)))
	got := mustResolve(t, s, resend(2, op.ID+"-g2", at(3*time.Hour)))
	require.Equal(t, 2, got.Generation)
	require.Equal(t, op.ID+"-g2", got.Key)
}

func testResolveKeyConflict(t *testing.T, h *Harness) {
	s := h.Store
	a := NewOp("op-kc-a")
	toReview(t, s, a)
	b := NewOp("op-kc-b")
	mustCreate(t, s, b, base)
	c := NewOp("op-kc-c")
	toReview(t, s, c)
	mustResolve(t, s, ledger.ResolveParams{ID: c.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend, NewKey: c.ID + "-g1", NewGeneration: 1, Now: at(time.Hour)})
	before := snapshot(t, s)

	for _, key := range []string{b.Key, c.ID + "-g1"} {
		_, err := s.Resolve(t.Context(), ledger.ResolveParams{ID: a.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend, NewKey: key, NewGeneration: 1, Now: at(2 * time.Hour)})
		require.ErrorIs(t, err, ledger.ErrKeyConflict, "NewKey %s belongs to another operation", key)
		require.Equal(t, before, snapshot(t, s))
	}
}

func testResolveNotInReview(t *testing.T, h *Harness) {
	s := h.Store
	eachReached(t, s, "not-review", []ledger.Status{ledger.StatusPending, ledger.StatusInFlight, ledger.StatusUnknown, ledger.StatusSucceeded, ledger.StatusFailed}, func(t *testing.T, st ledger.Status, op ledger.NewOperation, hd held, before ledger.Operation, beforeAtts []ledger.Attempt) {
		for _, p := range []ledger.ResolveParams{
			{ID: op.ID, Actor: "alice", Note: "n", Outcome: ledger.ResolveSucceeded, ProviderRef: "pi_x", Now: at(time.Hour)},
			{ID: op.ID, Actor: "alice", Note: "n", Outcome: ledger.ResolveFailed, Now: at(time.Hour)},
			{ID: op.ID, Actor: "alice", Note: "n", Outcome: ledger.ResolveResend, NewKey: op.ID + "-g1", NewGeneration: 1, Now: at(time.Hour)},
		} {
			_, err := s.Resolve(t.Context(), p)
			require.ErrorIs(t, err, ledger.ErrNotInReview, "Resolve as %s", p.Outcome)
			requireUnchanged(t, s, before, beforeAtts)
		}
	})
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		_, err := s.Resolve(t.Context(), ledger.ResolveParams{ID: "op-missing", Actor: "alice", Note: "n", Outcome: ledger.ResolveFailed, Now: at(time.Hour)})
		require.ErrorIs(t, err, ledger.ErrNotFound)
	})
}

// After an operator approves a resend under a new key, the attempts made
// with the old key no longer count for the key window: a not_sent outcome of
// the first attempt with the new key closes the window again, even though
// an attempt under the old key may have reached the provider.
func testResolveResendWindow(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-res-window")
	toReview(t, s, op)
	now := at(48 * time.Hour)
	got := mustResolve(t, s, ledger.ResolveParams{
		ID: op.ID, Actor: "ops@example.com", Note: "provider has no record", Outcome: ledger.ResolveResend,
		NewKey: op.ID + ".g1", NewGeneration: 1, Now: now,
	})
	require.Equal(t, ledger.StatusPending, got.Status)
	require.True(t, got.WindowStart.IsZero())

	mustClaim(t, s, op.ID, ownerA, now)
	got, att := mustStartAttempt(t, s, op.ID, ownerA, now)
	require.Equal(t, 2, att.Number)
	require.Equal(t, op.ID+".g1", att.Key)
	requireTime(t, now, got.WindowStart, "WindowStart")
	requireTime(t, now.Add(keyTTL), got.KeyExpiresAt, "KeyExpiresAt")

	got = mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: now.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusPending,
		Attempt: &ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeNotSent, Error: "connection refused"},
	})
	require.True(t, got.WindowStart.IsZero(), "attempt 1 carried the old key: it does not hold the new window open: %v", got.WindowStart)
	require.True(t, got.KeyExpiresAt.IsZero())
}

// A resolution decided on the audit entries read before it (CheckEvents)
// is refused once another entry was recorded in between (a provider event
// arrived while the operator's tool looked the operation up): nothing
// changes, and the caller reads again. Decided on every entry there is, it
// is recorded.
func testResolveEventsSeen(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-res-seen")
	toReviewWith(t, s, op, "pi_seen", nil)
	seen := len(mustEvents(t, s, op.ID))
	mustRecordNew(t, s, evt("evt_between", "payment_intent.payment_failed", ledger.WebhookTarget{Kind: "charge", OperationID: op.ID,
		ProviderRef: "pi_seen", Effect: ledger.EffectFailed}), at(time.Hour),
		outcome(0, op.ID, ledger.WebhookNoted, ledger.StatusManualReview, ledger.StatusManualReview))
	before, atts := mustGet(t, s, op.ID)
	p := ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend, NewKey: op.ID + "-g1",
		NewGeneration: 1, Now: at(2 * time.Hour), CheckEvents: true, EventsSeen: seen}
	_, err := s.Resolve(t.Context(), p)
	require.ErrorIs(t, err, ledger.ErrStateConflict)
	require.ErrorContains(t, err, "decide again")
	requireUnchanged(t, s, before, atts)

	p.EventsSeen = len(mustEvents(t, s, op.ID))
	got := mustResolve(t, s, p)
	require.Equal(t, 1, got.Generation)

	bad := p
	bad.EventsSeen = -1
	_, err = s.Resolve(t.Context(), bad)
	require.ErrorIs(t, err, ledger.ErrInvalid)
}
