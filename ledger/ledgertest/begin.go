package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// requireCreatedLeased checks what a Begin by ownerA at base of a new ID
// returns, with or without an attempt: op recorded with its identity and
// leased for leaseFor, its next check at the lease expiry. It returns the
// operation.
func requireCreatedLeased(t *testing.T, op ledger.NewOperation, res ledger.BeginResult) ledger.Operation {
	t.Helper()
	require.True(t, res.Created)
	require.True(t, res.Claimed)
	got := res.Op
	requireIdentity(t, op, got)
	requireLease(t, got, ownerA, at(leaseFor))
	requireTime(t, at(leaseFor), got.NextCheckAt, "NextCheckAt (the lease expiry)")
	return got
}

func testBeginNewOperation(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-new")
	res := mustBegin(t, s, beginParams(op, ownerA, base, false))

	got := requireCreatedLeased(t, op, res)
	require.Nil(t, res.Attempt, "no attempt without StartAttempt")
	require.Equal(t, ledger.StatusPending, got.Status)
	require.Zero(t, got.Attempts)
	requireTime(t, time.Time{}, got.WindowStart, "WindowStart")
	requireTime(t, time.Time{}, got.KeyExpiresAt, "KeyExpiresAt")
	requireTime(t, base, got.CreatedAt, "CreatedAt")
	requireTime(t, time.Time{}, got.FinishedAt, "FinishedAt")
	requireTime(t, time.Time{}, got.ReviewAt, "ReviewAt")
	require.Empty(t, got.ProviderRef)
	require.Empty(t, got.Result)
	require.Empty(t, got.ReviewReason)
	require.Nil(t, got.Resolution)

	requireStored(t, s, got)
	_, atts := mustGet(t, s, op.ID)
	require.Empty(t, atts)
}

func testBeginStartsAttempt(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-start")
	res := mustBegin(t, s, beginParams(op, ownerA, base, true))

	got := requireCreatedLeased(t, op, res)
	require.NotNil(t, res.Attempt)
	require.Equal(t, ledger.StatusInFlight, got.Status)
	require.Equal(t, 1, got.Attempts)
	requireTime(t, base, got.WindowStart, "WindowStart")
	requireTime(t, base.Add(keyTTL), got.KeyExpiresAt, "KeyExpiresAt")

	att := *res.Attempt
	require.Equal(t, op.ID, att.OperationID)
	require.Equal(t, 1, att.Number)
	require.Equal(t, op.Key, att.Key)
	requireTime(t, base, att.StartedAt, "Attempt.StartedAt")
	requireTime(t, time.Time{}, att.FinishedAt, "Attempt.FinishedAt")
	require.True(t, att.MayHaveReached, "a started attempt may reach the provider")
	require.Empty(t, att.Outcome)

	requireStored(t, s, got)
	_, atts := mustGet(t, s, op.ID)
	require.Len(t, atts, 1)
	require.Equal(t, canonAttempt(att), canonAttempt(atts[0]))
}

func testBeginReentrant(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-reentrant")
	mustBegin(t, s, beginParams(op, ownerA, base, false))

	// The same owner comes back while its lease is live, now to send.
	now := at(time.Second)
	res := mustBegin(t, s, beginParams(op, ownerA, now, true))
	require.False(t, res.Created)
	require.True(t, res.Claimed)
	require.NotNil(t, res.Attempt)
	require.Equal(t, 1, res.Attempt.Number)
	require.Equal(t, ledger.StatusInFlight, res.Op.Status)
	requireLease(t, res.Op, ownerA, now.Add(leaseFor))
	requireTime(t, now, res.Op.WindowStart, "WindowStart")
	requireStored(t, s, res.Op)
}

func testBeginOwnInFlight(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-own-inflight")
	mustStart(t, s, op, ownerA, base)

	// The owner calls again while its attempt is in flight: that attempt may
	// have been sent, so the operation is unknown and nothing new is started.
	now := at(time.Second)
	res := mustBegin(t, s, beginParams(op, ownerA, now, true))
	require.True(t, res.Claimed)
	require.Nil(t, res.Attempt, "no attempt may start while the previous one may have been sent")
	require.Equal(t, ledger.StatusUnknown, res.Op.Status)
	require.Equal(t, 1, res.Op.Attempts)
	requireLease(t, res.Op, ownerA, now.Add(leaseFor))
	requireTime(t, base, res.Op.WindowStart, "WindowStart")
	requireStored(t, s, res.Op)
	_, atts := mustGet(t, s, op.ID)
	require.Len(t, atts, 1)
}

func testBeginUnknown(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-unknown")
	mustStart(t, s, op, ownerA, base)
	mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: at(time.Second), From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: attemptOutcome(1, ledger.StatusUnknown), NextCheckAt: at(10 * time.Minute),
	})

	now := at(time.Minute)
	res := mustBegin(t, s, beginParams(op, ownerB, now, true))
	require.False(t, res.Created)
	require.True(t, res.Claimed)
	require.Nil(t, res.Attempt, "an unknown operation must be looked up before anything is sent")
	require.Equal(t, ledger.StatusUnknown, res.Op.Status)
	require.Equal(t, 1, res.Op.Attempts)
	requireLease(t, res.Op, ownerB, now.Add(leaseFor))
	requireTime(t, now.Add(leaseFor), res.Op.NextCheckAt, "NextCheckAt (the lease expiry)")
	requireStored(t, s, res.Op)
	_, atts := mustGet(t, s, op.ID)
	require.Len(t, atts, 1)
}

func testBeginInProgress(t *testing.T, h *Harness) {
	s := h.Store
	eachReached(t, s, "busy", []ledger.Status{ledger.StatusPending, ledger.StatusInFlight, ledger.StatusUnknown}, func(t *testing.T, st ledger.Status, op ledger.NewOperation, hd held, before ledger.Operation, beforeAtts []ledger.Attempt) {
		res, err := s.Begin(t.Context(), beginParams(op, ownerB, hd.now, true))
		require.ErrorIs(t, err, ledger.ErrInProgress)
		require.False(t, res.Claimed)
		require.Nil(t, res.Attempt)
		require.Equal(t, op.ID, res.Op.ID, "BeginResult.Op carries the operation with ErrInProgress")
		require.Equal(t, ownerA, res.Op.LeaseOwner)
		requireUnchanged(t, s, before, beforeAtts)
	})
}

func testTimesAreUTCMicroseconds(t *testing.T, h *Harness) {
	s := h.Store
	// Nanoseconds and a non-UTC zone: the store keeps UTC microseconds,
	// truncated (not rounded), as ledgerdriver.UTC does.
	now := time.Date(2026, 11, 30, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
	op := NewOp("op-times")
	res := mustBegin(t, s, beginParams(op, ownerA, now, true))
	got, atts := mustGet(t, s, op.ID)
	require.Len(t, atts, 1)

	for _, c := range []struct {
		field     string
		want, got time.Time
	}{
		{"CreatedAt", now, got.CreatedAt},
		{"WindowStart", now, got.WindowStart},
		{"KeyExpiresAt", now.Add(keyTTL), got.KeyExpiresAt},
		{"LeaseExpiresAt", now.Add(leaseFor), got.LeaseExpiresAt},
		{"NextCheckAt", now.Add(leaseFor), got.NextCheckAt},
		{"Attempt.StartedAt", now, atts[0].StartedAt},
		{"returned WindowStart", now, res.Op.WindowStart},
		{"returned Attempt.StartedAt", now, res.Attempt.StartedAt},
	} {
		require.Equal(t, time.UTC, c.got.Location(), "%s must be in UTC", c.field)
		require.Equal(t, ledgerdriver.UTC(c.want), c.got, "%s must be the UTC microsecond", c.field)
	}
}

func testCreateOrGetCreates(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-create")
	got, created, err := s.CreateOrGet(t.Context(), op, base)
	require.NoError(t, err)
	require.True(t, created)
	requireIdentity(t, op, got)
	require.Equal(t, ledger.StatusPending, got.Status)
	require.Zero(t, got.Attempts)
	requireNoLease(t, got)
	requireTime(t, base, got.NextCheckAt, "NextCheckAt (due at once)")
	requireTime(t, base, got.CreatedAt, "CreatedAt")
	requireTime(t, time.Time{}, got.WindowStart, "WindowStart")
	requireStored(t, s, got)

	// Due at once: background work finds it.
	due := mustClaimDue(t, s, ledger.ClaimDueParams{Owner: ownerB, Now: base, LeaseUntil: at(leaseFor), Limit: 10})
	require.Equal(t, []string{op.ID}, ids(due))
}

func testCreateOrGetExisting(t *testing.T, h *Harness) {
	s := h.Store
	eachReached(t, s, "existing", ledger.Statuses, func(t *testing.T, st ledger.Status, op ledger.NewOperation, hd held, before ledger.Operation, beforeAtts []ledger.Attempt) {
		got, created, err := s.CreateOrGet(t.Context(), op, at(time.Hour))
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, canon(before), canon(got))
		requireUnchanged(t, s, before, beforeAtts)
	})
}

func testFingerprintMismatch(t *testing.T, h *Harness) {
	s := h.Store
	eachReached(t, s, "mismatch", ledger.Statuses, func(t *testing.T, st ledger.Status, op ledger.NewOperation, hd held, before ledger.Operation, beforeAtts []ledger.Attempt) {
		other := OtherRequest(op)

		// Checked before anything else: the lease holder, another
		// worker, and a caller after every lease expired are all refused.
		for _, p := range []ledger.BeginParams{
			beginParams(other, ownerA, hd.now, true),
			beginParams(other, ownerB, hd.now, true),
			beginParams(other, ownerB, at(24*time.Hour), true),
		} {
			_, err := s.Begin(t.Context(), p)
			require.ErrorIs(t, err, ledger.ErrFingerprintMismatch, "Begin by %s at %v", p.Owner, p.Now)
			requireUnchanged(t, s, before, beforeAtts)
		}

		_, _, err := s.CreateOrGet(t.Context(), other, hd.now)
		require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
		requireUnchanged(t, s, before, beforeAtts)
	})
}

func testTerminalReplay(t *testing.T, h *Harness) {
	s := h.Store
	eachReached(t, s, "replay", []ledger.Status{ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview}, func(t *testing.T, st ledger.Status, op ledger.NewOperation, hd held, before ledger.Operation, beforeAtts []ledger.Attempt) {
		for _, owner := range []string{ownerA, ownerB} {
			res, err := s.Begin(t.Context(), beginParams(op, owner, at(time.Hour), true))
			require.NoError(t, err, "a terminal operation replays its result without error")
			require.False(t, res.Claimed)
			require.False(t, res.Created)
			require.Nil(t, res.Attempt)
			require.Equal(t, canon(before), canon(res.Op), "Begin returns the recorded operation")
			requireUnchanged(t, s, before, beforeAtts)
		}
	})
}
