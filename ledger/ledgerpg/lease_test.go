package ledgerpg_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// A caller's transaction that recorded an operation with CreateOrGetTx and
// stays open makes a Begin of the same operation wait on its row, without
// limit. The lease Begin grants is stamped with the time the caller read
// before the call: when the wait outlasts it, Begin must not hand back a
// lease that has already lapsed (a reconciler could take the operation over
// while the caller sends). Begin fails with ErrLeaseLost and journals
// nothing.
func TestBeginWaitingOnCallersTransactionGrantsNoLapsedLease(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, c := range []struct {
		name  string
		lease time.Duration
		ok    bool
	}{
		{"lease shorter than the wait", 300 * time.Millisecond, false},
		{"lease longer than the wait", time.Minute, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, pool := newStore(t)
			// Warm the pool up, so that the Begin below reaches the row
			// lock at once rather than spend its lease connecting.
			_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-warm"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
			require.NoError(t, err)
			op := newOp("op-1")
			holder, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer holder.Rollback(ctx) //nolint:errcheck // committed below
			_, created, err := s.CreateOrGetTx(ctx, holder, op, t0)
			require.NoError(t, err)
			require.True(t, created)

			type result struct {
				res ledger.BeginResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "caller", Now: t0, LeaseUntil: t0.Add(c.lease), StartAttempt: true})
				done <- result{res, err}
			}()
			var r result
			select {
			case r = <-done:
				// Only a lease that lapsed before Begin reached the lock (a
				// loaded machine) may end the call before the holder does.
				require.False(t, c.ok, "Begin did not wait for the open transaction: %+v, %v", r.res, r.err)
				require.NoError(t, holder.Commit(ctx))
			case <-time.After(600 * time.Millisecond):
				require.NoError(t, holder.Commit(ctx))
				r = <-done
			}

			got, atts, err := s.Get(ctx, op.ID)
			require.NoError(t, err)
			if c.ok {
				require.NoError(t, r.err)
				require.NotNil(t, r.res.Attempt)
				require.Len(t, atts, 1)
				return
			}
			require.ErrorIs(t, r.err, ledger.ErrLeaseLost)
			require.ErrorContains(t, r.err, `operation "op-1": the lease would have lapsed before it was granted: the write waited`)
			require.Empty(t, atts, "nothing was journaled")
			require.Equal(t, ledger.StatusPending, got.Status, "the operation is still pending")
			require.Empty(t, got.LeaseOwner, "and nobody holds it")
			require.Equal(t, 1, countRowsOf(t, pool, s.Schema(), "payonce_attempts"), "only op-warm's")
		})
	}
}
