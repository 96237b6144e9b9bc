package ledgertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// claimers is how many workers race for one operation.
const claimers = 50

// together starts n calls at the same moment and returns their results by
// index. Calls must not use require: it may only stop the test's goroutine.
func together[T any](n int, call func(i int) (T, error)) ([]T, []error) {
	start := make(chan struct{})
	results := make([]T, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = call(i)
		})
	}
	close(start)
	wg.Wait()
	return results, errs
}

// storesOf returns the harness's store, and a second independent one when
// two are asked for; it skips the test when the store cannot be shared.
func storesOf(t *testing.T, h *Harness, two bool) []ledger.Store {
	t.Helper()
	if !two {
		return []ledger.Store{h.Store}
	}
	if h.OpenAnother == nil {
		t.Skip("Harness.OpenAnother is nil: the store cannot be opened twice")
	}
	return []ledger.Store{h.Store, h.OpenAnother(t)}
}

func testConcurrentBegin(t *testing.T, h *Harness)          { concurrentBegin(t, storesOf(t, h, false)) }
func testConcurrentBeginTwoStores(t *testing.T, h *Harness) { concurrentBegin(t, storesOf(t, h, true)) }
func testConcurrentClaim(t *testing.T, h *Harness)          { concurrentClaim(t, storesOf(t, h, false)) }
func testConcurrentClaimTwoStores(t *testing.T, h *Harness) { concurrentClaim(t, storesOf(t, h, true)) }
func testConcurrentClaimPendingTwoStores(t *testing.T, h *Harness) {
	concurrentClaimPending(t, storesOf(t, h, true))
}
func testConcurrentClaimDue(t *testing.T, h *Harness) { concurrentClaimDue(t, storesOf(t, h, false)) }
func testConcurrentClaimDueTwoStores(t *testing.T, h *Harness) {
	concurrentClaimDue(t, storesOf(t, h, true))
}

func racerOwner(i int) string { return fmt.Sprintf("racer-%02d", i) }

// requireOneWinner checks that exactly one call succeeded and every other
// one was refused with ErrInProgress, and returns the winner's index.
func requireOneWinner(t *testing.T, won []bool, errs []error) int {
	t.Helper()
	winner, winners := -1, 0
	var unexpected []string
	for i, err := range errs {
		switch {
		case err == nil && won[i]:
			winner = i
			winners++
		case errors.Is(err, ledger.ErrInProgress):
		default:
			unexpected = append(unexpected, fmt.Sprintf("%s: claimed=%v err=%v", racerOwner(i), won[i], err))
		}
	}
	require.Empty(t, unexpected, "every loser must get ErrInProgress")
	require.Equal(t, 1, winners, "exactly one claimer must win")
	return winner
}

func concurrentBegin(t *testing.T, stores []ledger.Store) {
	op := NewOp("op-race-begin")
	results, errs := together(claimers, func(i int) (ledger.BeginResult, error) {
		return stores[i%len(stores)].Begin(t.Context(), beginParams(op, racerOwner(i), base, true))
	})
	won := make([]bool, claimers)
	created := 0
	for i, r := range results {
		won[i] = r.Claimed && r.Attempt != nil
		if errs[i] != nil {
			require.Equal(t, op.ID, r.Op.ID, "BeginResult.Op carries the operation with ErrInProgress")
		}
		if r.Created {
			created++
		}
	}
	winner := requireOneWinner(t, won, errs)
	require.Equal(t, 1, created, "exactly one Begin creates the operation")

	got, atts := mustGet(t, stores[0], op.ID)
	require.Equal(t, ledger.StatusInFlight, got.Status)
	require.Equal(t, racerOwner(winner), got.LeaseOwner)
	require.Equal(t, 1, got.Attempts)
	require.Len(t, atts, 1, "one attempt, whoever created the operation")
}

func concurrentClaim(t *testing.T, stores []ledger.Store) {
	op := NewOp("op-race-claim")
	mustBegin(t, stores[0], ledger.BeginParams{Op: op, Owner: ownerA, Now: base, LeaseUntil: at(time.Minute), StartAttempt: true})

	// Two rounds: the first races for an expired in_flight lease (the row
	// also turns unknown), the second for the winner's lease once it expired.
	for round, now := range []time.Time{at(2 * time.Minute), at(time.Hour)} {
		results, errs := together(claimers, func(i int) (ledger.Operation, error) {
			return stores[i%len(stores)].Claim(t.Context(), ledger.ClaimParams{
				ID: op.ID, Owner: racerOwner(i), Now: now, LeaseUntil: now.Add(leaseFor),
			})
		})
		won := make([]bool, claimers)
		for i, r := range results {
			won[i] = errs[i] == nil && r.ID == op.ID
		}
		winner := requireOneWinner(t, won, errs)

		got, atts := mustGet(t, stores[0], op.ID)
		require.Equal(t, ledger.StatusUnknown, got.Status, "round %d", round+1)
		requireLease(t, got, racerOwner(winner), now.Add(leaseFor))
		require.Len(t, atts, 1)
	}
}

// pendingRaces is how many pending operations concurrentClaimPending races
// for, one after the other.
const pendingRaces = 20

// concurrentClaimPending races claimers for each of pendingRaces pending
// operations that nobody leased yet: exactly one wins each, every other one
// gets ErrInProgress and nothing else (no busy or lock error).
func concurrentClaimPending(t *testing.T, stores []ledger.Store) {
	for i := range pendingRaces {
		mustCreate(t, stores[0], NewOp(fmt.Sprintf("op-race-pending-%02d", i)), base)
	}
	now := at(time.Second)
	for i := range pendingRaces {
		id := fmt.Sprintf("op-race-pending-%02d", i)
		results, errs := together(claimers, func(i int) (ledger.Operation, error) {
			return stores[i%len(stores)].Claim(t.Context(), ledger.ClaimParams{ID: id, Owner: racerOwner(i), Now: now, LeaseUntil: now.Add(leaseFor)})
		})
		won := make([]bool, claimers)
		for i, r := range results {
			won[i] = errs[i] == nil && r.ID == id
		}
		winner := requireOneWinner(t, won, errs)
		got, _ := mustGet(t, stores[0], id)
		requireLease(t, got, racerOwner(winner), now.Add(leaseFor))
	}
}

// scannersPerStore is how many goroutines scan each store at once.
const scannersPerStore = 4

func concurrentClaimDue(t *testing.T, stores []ledger.Store) {
	const total = 500
	for i := range total {
		mustCreate(t, stores[0], NewOp(fmt.Sprintf("op-due-%03d", i)), base)
	}

	type batch struct {
		owner string
		ids   []string
	}
	now := at(time.Minute)
	scanners := scannersPerStore * len(stores)
	batches, errs := together(scanners, func(i int) ([]batch, error) {
		s := stores[i%len(stores)]
		owner := fmt.Sprintf("scanner-%d", i)
		var got []batch
		for {
			ops, err := s.ClaimDue(t.Context(), ledger.ClaimDueParams{Owner: owner, Now: now, LeaseUntil: now.Add(time.Hour), Limit: 7})
			if err != nil || len(ops) == 0 {
				return got, err
			}
			got = append(got, batch{owner: owner, ids: ids(ops)})
		}
	})
	for i, err := range errs {
		require.NoError(t, err, "scanner %d", i)
	}

	claimedBy := make(map[string]string, total)
	for _, bs := range batches {
		for _, b := range bs {
			require.LessOrEqual(t, len(b.ids), 7, "Limit respected")
			for _, id := range b.ids {
				prev, dup := claimedBy[id]
				require.False(t, dup, "%s returned to both %s and %s", id, prev, b.owner)
				claimedBy[id] = b.owner
			}
		}
	}
	require.Len(t, claimedBy, total, "every due operation is returned")
	require.Empty(t, mustClaimDue(t, stores[0], ledger.ClaimDueParams{Owner: ownerB, Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10}))

	ops, err := stores[0].List(t.Context(), ledger.ListFilter{Limit: ledger.MaxLimit})
	require.NoError(t, err)
	require.Len(t, ops, total)
	for _, op := range ops {
		require.Equal(t, claimedBy[op.ID], op.LeaseOwner, "the lease of %s belongs to the scanner that got it", op.ID)
	}
}
