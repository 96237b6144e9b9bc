package sqlstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// The copies stay bounded: one never taken (its operation left to another
// process) is evicted when the map is full, and Take uses a copy up.
func TestCopiesStayBounded(t *testing.T) {
	t.Parallel()
	var c Copies[int]
	for i := range MaxCopies + 100 {
		c.Put(fmt.Sprintf("op-%d", i), i)
	}
	require.Equal(t, MaxCopies, c.Len())
	last := fmt.Sprintf("op-%d", MaxCopies+99)
	v, ok := c.Take(last)
	require.True(t, ok)
	require.Equal(t, MaxCopies+99, v)
	_, ok = c.Take(last)
	require.False(t, ok, "a copy is used once")
	c.Put("op-0", 7)
	v, _ = c.Take("op-0")
	require.Equal(t, 7, v, "a newer write replaces the copy")
}

// FinishOnCopy decides only what the copy can: the attempt it holds, a
// first attempt or one that may have reached the provider, and what the
// rules accept.
func TestFinishOnCopy(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	op := ledger.Operation{ID: "op-1", Key: "op-1", Status: ledger.StatusInFlight, Attempts: 2,
		LeaseOwner: "w", LeaseExpiresAt: now.Add(time.Minute), KeyTTL: time.Hour, WindowStart: now, KeyExpiresAt: now.Add(time.Hour)}
	att := func(n int) *ledger.Attempt {
		return &ledger.Attempt{OperationID: op.ID, Number: n, Key: op.Key, StartedAt: now}
	}
	finish := func(n int, class ledger.OutcomeClass, to ledger.Status) ledger.FinishParams {
		return ledger.FinishParams{ID: op.ID, Owner: "w", Now: now, From: ledger.StatusInFlight, To: to,
			Attempt: &ledger.AttemptOutcome{Number: n, Class: class}}
	}
	for _, tc := range []struct {
		name string
		att  *ledger.Attempt
		p    ledger.FinishParams
		ok   bool
	}{
		{"the attempt the copy holds, reached", att(2), finish(2, ledger.OutcomeMaybeSent, ledger.StatusUnknown), true},
		{"no attempt in the copy", nil, finish(2, ledger.OutcomeMaybeSent, ledger.StatusUnknown), false},
		{"another attempt", att(1), finish(2, ledger.OutcomeMaybeSent, ledger.StatusUnknown), false},
		{"a later attempt that never left: the window depends on the others", att(2), finish(2, ledger.OutcomeNotSent, ledger.StatusPending), false},
		{"another owner: only the row may refuse", att(2), func() ledger.FinishParams {
			p := finish(2, ledger.OutcomeMaybeSent, ledger.StatusUnknown)
			p.Owner = "x"
			return p
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ch, ok := FinishOnCopy(op, tc.att, tc.p)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.p.To, ch.Op.Status)
				require.NotNil(t, ch.Attempt)
			}
		})
	}
}
