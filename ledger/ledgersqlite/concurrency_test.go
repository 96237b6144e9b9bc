package ledgersqlite_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// Many goroutines writing through one Store never see SQLITE_BUSY (or any
// error): writes queue inside the Store, not in SQLite.
func TestConcurrentWritersNeverBusy(t *testing.T) {
	t.Parallel()
	const (
		workers = 50
		rounds  = 10
	)
	s := openStore(t)
	ctx := t.Context()
	var (
		wg      sync.WaitGroup
		claimed atomic.Int64
		errs    = make(chan error, workers*rounds*4)
	)
	for w := range workers {
		wg.Go(func() {
			owner := fmt.Sprintf("worker-%d", w)
			for r := range rounds {
				now := t0.Add(time.Duration(r) * time.Second)
				id := fmt.Sprintf("op-%02d-%03d", w, r)
				// Every third operation is left unfinished, under a provider
				// of its own: due for ClaimDue once its lease has passed.
				// (A finished one must not be taken over by a worker whose
				// clock runs ahead before its owner finishes it.)
				unfinished := r%3 == 0
				op := newOp(id)
				if unfinished {
					op.Provider = "abandoned"
				}
				res, err := s.Begin(ctx, begin(op, owner, now, true))
				if err != nil {
					errs <- fmt.Errorf("begin %s: %w", id, err)
					continue
				}
				if !unfinished {
					if _, err := s.Finish(ctx, succeed(id, owner, now, res.Attempt.Number)); err != nil {
						errs <- fmt.Errorf("finish %s: %w", id, err)
					}
				}
				later := now.Add(2 * leaseFor)
				ops, err := s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: owner + "-due", Now: later, LeaseUntil: later.Add(leaseFor), Limit: 5, Provider: "abandoned"})
				if err != nil {
					errs <- fmt.Errorf("claim due: %w", err)
				}
				claimed.Add(int64(len(ops)))
				if _, _, err := s.Get(ctx, id); err != nil {
					errs <- fmt.Errorf("get %s: %w", id, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Positive(t, claimed.Load(), "ClaimDue found the unfinished operations")

	ops, err := s.List(ctx, ledger.ListFilter{Limit: ledger.MaxLimit})
	require.NoError(t, err)
	require.Len(t, ops, workers*rounds)
}
