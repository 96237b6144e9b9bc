package payonce_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// A reconciler stopped mid-batch gives up the leases of what it claimed and
// never started: another reconciler takes them at once, on the same clock,
// instead of after LeaseDuration. Run reports the stop as normal.
func TestStoppedReconcilerReleasesUnstarted(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		const n = 8
		ids := make([]string, n)
		for i := range n {
			op, err := b.client.PrepareCharge(b.ctx, charge(orderID("stop", i), 1000+int64(i)))
			require.NoError(t, err)
			_, err = b.client.Enqueue(b.ctx, op)
			require.NoError(t, err)
			ids[i] = op.ID
		}

		ctx, stop := context.WithCancel(b.ctx)
		defer stop()
		var settled atomic.Int32
		var passes []payonce.ReconcileReport
		r1 := newReconciler(t, b, func(c *payonce.ReconcilerConfig) {
			c.Hooks.OnPass = func(rep payonce.ReconcileReport) { passes = append(passes, rep) }
			c.Owner, c.Concurrency, c.BatchSize = "replica-1", 1, n
			// The service stops while the first operation of the batch
			// is being reported: the rest of the batch was claimed and
			// never started.
			c.Hooks.OnSettled = func(context.Context, payonce.Result) {
				settled.Add(1)
				stop()
			}
		})
		require.NoError(t, r1.Run(ctx), "a cancelled context is a normal stop")
		require.EqualValues(t, 1, settled.Load(), "nothing is started after the stop")
		require.Len(t, passes, 1)
		require.Equal(t, n, passes[0].Claimed)
		require.Equal(t, n-1, passes[0].Released)

		unstarted := 0
		for _, id := range ids {
			op, _ := attemptsOf(t, b, id)
			switch op.Status {
			case ledger.StatusSucceeded:
			case ledger.StatusPending:
				unstarted++
				require.Empty(t, op.LeaseOwner, "the lease of %s was given up", id)
				require.Zero(t, op.Attempts)
				require.False(t, op.NextCheckAt.After(b.clock.Now()), "due at once")
			default:
				t.Fatalf("operation %s is %s", id, op.Status)
			}
		}
		require.Equal(t, n-1, unstarted)

		// No time passes: only released operations can be claimed.
		r2 := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.Owner = "replica-2" })
		rep, err := r2.RunOnce(b.ctx)
		require.NoError(t, err)
		require.Equal(t, n-1, rep.Claimed)
		require.Equal(t, n-1, rep.Settled)
		for _, id := range ids {
			op, _ := attemptsOf(t, b, id)
			require.Equal(t, ledger.StatusSucceeded, op.Status)
			require.Equal(t, 1, b.chargesOf(t, id), "charged once")
		}
	})
}

// Run returns nil for every normal stop: cancelled, past its deadline, or
// cancelled with a cause; already before its first pass and while waiting
// between passes.
func TestRunNormalStops(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	r := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.Interval = time.Hour })

	cancelled, cancel := context.WithCancel(b.ctx)
	cancel()
	require.NoError(t, r.Run(cancelled))

	past, cancelPast := context.WithDeadline(b.ctx, time.Now().Add(-time.Second))
	defer cancelPast()
	require.NoError(t, r.Run(past))

	caused, cancelCause := context.WithCancelCause(b.ctx)
	passes := make(chan payonce.ReconcileReport, 1)
	r = newReconciler(t, b, func(c *payonce.ReconcilerConfig) {
		c.Interval = time.Hour
		c.Hooks.OnPass = func(rep payonce.ReconcileReport) { passes <- rep }
	})
	done := make(chan error, 1)
	go func() { done <- r.Run(caused) }()
	<-passes // the first pass is over: Run waits out its interval
	cancelCause(errors.New("terminated (test)"))
	require.NoError(t, <-done)
}

// A pass whose releases cannot be written (the ledger gone by then) still
// returns; the operations wait for their leases to end.
func TestReleaseFailureIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for i := range 3 {
		op, err := b.client.PrepareCharge(b.ctx, charge(orderID("norel", i), 100+int64(i)))
		require.NoError(t, err)
		_, err = b.client.Enqueue(b.ctx, op)
		require.NoError(t, err)
	}
	ctx, stop := context.WithCancel(b.ctx)
	defer stop()
	broken := &finishFailing{Store: b.store}
	var last payonce.ReconcileReport
	r := newReconciler(t, b, func(c *payonce.ReconcilerConfig) {
		c.Store, c.Concurrency, c.StatsInterval = broken, 1, -1
		c.Hooks.OnPass = func(rep payonce.ReconcileReport) { last = rep }
		c.Hooks.OnSettled = func(context.Context, payonce.Result) {
			broken.failing.Store(true)
			stop()
		}
	})
	require.NoError(t, r.Run(ctx))
	require.EqualValues(t, 2, broken.refused.Load(), "both unstarted operations were tried")
	require.Zero(t, last.Released)

	r2 := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.Owner = "replica-2" })
	rep, err := r2.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Claimed, "unreleased leases are still live")
	b.clock.Advance(time.Minute)
	rep, err = r2.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Claimed, "due again once their leases end")
}

// finishFailing refuses Finish once failing is set.
type finishFailing struct {
	ledger.Store
	failing atomic.Bool
	refused atomic.Int32
}

func (s *finishFailing) Finish(ctx context.Context, p ledger.FinishParams) (ledger.Operation, error) {
	if s.failing.Load() {
		s.refused.Add(1)
		return ledger.Operation{}, context.DeadlineExceeded
	}
	return s.Store.Finish(ctx, p)
}
