package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// A lease is never granted already lapsed. Leases are stamped with the
// caller's clock read before the call (Now, LeaseUntil); a call that waits
// on a lock for longer than the lease lasts must write nothing and return
// ErrLeaseLost, or it would hand back a lease another worker may already
// have taken over, and both would send.

const (
	shortLease = 300 * time.Millisecond
	blockedFor = 600 * time.Millisecond
)

// blocked runs call while the store's writes are blocked, and releases them
// after blockedFor. A call with a short lease may give up before it reaches
// the lock (on a loaded machine, getting a connection can take longer than
// the lease); one that succeeds must have waited (the "long enough" case
// proves the hook blocks).
func blocked[T any](t *testing.T, h *Harness, call func() (T, error)) (T, error) {
	t.Helper()
	release := h.BlockWrites(t)
	type result struct {
		v   T
		err error
	}
	started := time.Now()
	done := make(chan result, 1)
	go func() {
		v, err := call()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		release()
		require.Error(t, r.err, "the call succeeded without waiting for the blocked write")
		return r.v, r.err
	case <-time.After(blockedFor):
	}
	release()
	r := <-done
	if r.err == nil {
		require.GreaterOrEqual(t, time.Since(started), blockedFor, "the call waited for the blocked write")
	}
	return r.v, r.err
}

func testLeaseNotGrantedLapsed(t *testing.T, h *Harness) {
	if h.BlockWrites == nil {
		t.Skip("Harness.BlockWrites is nil")
	}
	s := h.Store
	now := at(time.Hour)
	lapsed := func(name string, err error) {
		t.Helper()
		require.ErrorIs(t, err, ledger.ErrLeaseLost, name)
		require.ErrorContains(t, err, "the lease would have lapsed before it was granted: the write waited", name)
	}

	t.Run("Begin of a new operation", func(t *testing.T) {
		op := NewOp("op-lapse-new")
		p := beginParams(op, ownerA, now, true)
		p.LeaseUntil = now.Add(shortLease)
		_, err := blocked(t, h, func() (ledger.BeginResult, error) { return s.Begin(t.Context(), p) })
		lapsed("Begin", err)
		_, _, err = s.Get(t.Context(), op.ID)
		require.ErrorIs(t, err, ledger.ErrNotFound, "nothing was recorded")
	})

	pending := NewOp("op-lapse-pending")
	mustCreate(t, s, pending, base)
	due := NewOp("op-lapse-due")
	mustCreate(t, s, due, base)
	before := snapshot(t, s)
	t.Run("Begin of a pending operation", func(t *testing.T) {
		p := beginParams(pending, ownerA, now, true)
		p.LeaseUntil = now.Add(shortLease)
		_, err := blocked(t, h, func() (ledger.BeginResult, error) { return s.Begin(t.Context(), p) })
		lapsed("Begin", err)
		require.Equal(t, before, snapshot(t, s), "no attempt journaled, no lease taken")
	})
	t.Run("Claim", func(t *testing.T) {
		_, err := blocked(t, h, func() (ledger.Operation, error) {
			return s.Claim(t.Context(), ledger.ClaimParams{ID: pending.ID, Owner: ownerA, Now: now, LeaseUntil: now.Add(shortLease)})
		})
		lapsed("Claim", err)
		require.Equal(t, before, snapshot(t, s))
	})
	t.Run("ClaimDue", func(t *testing.T) {
		_, err := blocked(t, h, func() ([]ledger.Operation, error) {
			return s.ClaimDue(t.Context(), ledger.ClaimDueParams{Owner: ownerB, Now: now, LeaseUntil: now.Add(shortLease), Limit: 10})
		})
		lapsed("ClaimDue", err)
		require.Equal(t, before, snapshot(t, s), "the whole batch is rolled back")
	})

	// StartAttempt extends a lease the caller holds.
	mustClaim(t, s, pending.ID, ownerA, now)
	before = snapshot(t, s)
	t.Run("StartAttempt", func(t *testing.T) {
		_, err := blocked(t, h, func() (ledger.Attempt, error) {
			_, a, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: pending.ID, Owner: ownerA, Now: now, LeaseUntil: now.Add(shortLease)})
			return a, err
		})
		lapsed("StartAttempt", err)
		require.Equal(t, before, snapshot(t, s), "no attempt journaled")
	})

	// A lease long enough to outlast the wait is granted.
	t.Run("long enough", func(t *testing.T) {
		res, err := blocked(t, h, func() (ledger.BeginResult, error) {
			return s.Begin(t.Context(), beginParams(NewOp("op-lapse-long"), ownerA, now, true))
		})
		require.NoError(t, err)
		require.NotNil(t, res.Attempt)
		att, err := blocked(t, h, func() (ledger.Attempt, error) {
			_, a, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: pending.ID, Owner: ownerA, Now: now, LeaseUntil: now.Add(time.Minute)})
			return a, err
		})
		require.NoError(t, err)
		require.Equal(t, 1, att.Number)
	})
}
