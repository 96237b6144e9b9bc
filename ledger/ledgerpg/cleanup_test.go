package ledgerpg_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
)

// finishedOp records id and finishes it as succeeded at t0 + 1m, with a key
// TTL of an hour: deletable by cleanupAt.
func finishedOp(t testing.TB, s *ledgerpg.Store, id string) ledger.NewOperation {
	t.Helper()
	op := newOp(id)
	op.KeyTTL = time.Hour
	res, err := s.Begin(context.Background(), ledger.BeginParams{Op: op, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	_, err = s.Finish(context.Background(), ledger.FinishParams{ID: id, Owner: "w", Now: t0.Add(time.Minute), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: res.Attempt.Number, Class: ledger.OutcomeSuccess}, ProviderRef: "pi_" + id, Result: []byte(`{"status":"succeeded"}`)})
	require.NoError(t, err)
	return op
}

var cleanedAt = t0.Add(30 * 24 * time.Hour)

func cleanupAt(now time.Time) ledger.CleanupParams {
	return ledger.CleanupParams{Now: now, Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour}
}

// liveAndTombstoned counts the IDs that have both a live operation row and a
// tombstone: never any.
func liveAndTombstoned(t testing.TB, pool *pgxpool.Pool, schema string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table(schema, "payonce_operations")+
		" o JOIN "+table(schema, "payonce_tombstones")+" t USING (id)").Scan(&n))
	return n
}

// A late Begin whose insert waits for the Cleanup transaction deleting its
// ID: under READ COMMITTED the insert's snapshot cannot see the tombstone
// written in that transaction, so once Cleanup commits the insert goes
// ahead. The store must find the tombstone in a later statement and undo
// the insert. The same for CreateOrGet and CreateOrGetTx.
func TestLateCallsWaitingOnCleanupGetTheTombstone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const n = 6
	s, pool := storeWith(t, maxConns(2*n+2)) // every late call, and its CreateOrGetTx caller, holds one while it waits
	observer := testkit.NewPool(t)
	var ops []ledger.NewOperation
	for i := range n {
		ops = append(ops, finishedOp(t, s, fmt.Sprintf("op-%d", i)))
	}

	deleted, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ledgerpg.AfterCleanupBatch(s, func() {
		once.Do(func() {
			close(deleted)
			<-proceed
		})
	})
	cleaned := make(chan error, 1)
	go func() {
		_, err := s.Cleanup(ctx, cleanupAt(cleanedAt))
		cleaned <- err
	}()
	<-deleted // the rows are deleted and the tombstones written, not yet committed

	late := cleanedAt.Add(time.Hour)
	results := make([]ledger.Operation, n)
	created := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Go(func() {
			switch i % 3 {
			case 0:
				var res ledger.BeginResult
				res, errs[i] = s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "late", Now: late, LeaseUntil: late.Add(time.Hour), StartAttempt: true})
				results[i], created[i] = res.Op, res.Created || res.Claimed || res.Attempt != nil
			case 1:
				results[i], created[i], errs[i] = s.CreateOrGet(ctx, op, late)
			case 2:
				results[i], created[i], errs[i] = createOrGetInTx(ctx, s, pool, op, late)
			}
		})
	}
	// Let every late call reach the insert and wait for the Cleanup.
	time.Sleep(300 * time.Millisecond)
	var waiting int
	require.NoError(t, observer.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'transactionid' AND datname = current_database()").Scan(&waiting))
	require.GreaterOrEqual(t, waiting, n, "the late calls wait for the Cleanup's transaction")
	close(proceed)
	require.NoError(t, <-cleaned)
	wg.Wait()

	for i := range ops {
		require.NoError(t, errs[i], "call %d", i)
		require.False(t, created[i], "call %d created or claimed %s", i, ops[i].ID)
		require.True(t, results[i].Tombstone, "call %d gets the tombstone", i)
		require.Equal(t, ledger.StatusSucceeded, results[i].Status)
		require.Equal(t, "pi_"+ops[i].ID, results[i].ProviderRef, "the recorded outcome")
	}
	require.Zero(t, countRows(t, pool, table(s.Schema(), "payonce_operations")), "no operation came back")
	require.Zero(t, countRows(t, pool, table(s.Schema(), "payonce_attempts")), "nothing was journaled")
	require.Equal(t, n, countRows(t, pool, table(s.Schema(), "payonce_tombstones")))
}

// Cleanup and late duplicates, in two processes, many times over: no live
// row ever coexists with a tombstone, and every late call gets the recorded
// outcome.
func TestCleanupAndLateBeginsConcurrently(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	stores := []*ledgerpg.Store{s, storeOn(t, s.Schema())}
	const rounds, ops, callers = 40, 10, 12
	for round := range rounds {
		var ids []ledger.NewOperation
		for i := range ops {
			ids = append(ids, finishedOp(t, s, fmt.Sprintf("op-%02d-%02d", round, i)))
		}
		now := cleanedAt.Add(time.Duration(round) * time.Hour)
		var wg sync.WaitGroup
		errs := make(chan error, callers*ops+1)
		wg.Go(func() {
			p := cleanupAt(now)
			p.BatchSize = 3
			if _, err := stores[round%2].Cleanup(ctx, p); err != nil {
				errs <- fmt.Errorf("cleanup: %w", err)
			}
		})
		for c := range callers {
			wg.Go(func() {
				st := stores[c%2]
				for i := range ops {
					op := ids[(i+c)%ops]
					var (
						got ledger.Operation
						bad bool
						err error
					)
					if c%3 == 0 {
						var made bool
						got, made, err = st.CreateOrGet(ctx, op, now)
						bad = made
					} else {
						var res ledger.BeginResult
						res, err = st.Begin(ctx, ledger.BeginParams{Op: op, Owner: fmt.Sprintf("late-%d", c), Now: now, LeaseUntil: now.Add(time.Hour), StartAttempt: true})
						got, bad = res.Op, res.Created || res.Claimed || res.Attempt != nil
					}
					switch {
					case err != nil:
						errs <- fmt.Errorf("%s: %w", op.ID, err)
					case bad:
						errs <- fmt.Errorf("%s: recreated or claimed: %+v", op.ID, got)
					case got.Status != ledger.StatusSucceeded || got.ProviderRef != "pi_"+op.ID:
						errs <- fmt.Errorf("%s: not the recorded outcome: %+v", op.ID, got)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d", round)
		}
		require.Zero(t, liveAndTombstoned(t, pool, s.Schema()), "round %d: a live row next to its tombstone", round)
		// A Cleanup may have skipped rows a Begin held locked: finish the job.
		_, err := s.Cleanup(ctx, cleanupAt(now))
		require.NoError(t, err)
		require.Zero(t, countRows(t, pool, table(s.Schema(), "payonce_operations")), "round %d: an operation was recreated", round)
	}
	require.Zero(t, countRows(t, pool, table(s.Schema(), "payonce_attempts")), "nothing new was journaled")
	require.Equal(t, rounds*ops, countRows(t, pool, table(s.Schema(), "payonce_tombstones")))
}

// A tombstone keeps the amount and the currency of the request it no longer
// holds, for operators reading the table.
func TestTombstoneColumns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	finishedOp(t, s, "op-1")
	_, err := s.Cleanup(ctx, cleanupAt(cleanedAt))
	require.NoError(t, err)
	var (
		amount             int64
		currency, status   string
		finished, tombAt   time.Time
		providerRef, reslt string
	)
	require.NoError(t, pool.QueryRow(ctx, "SELECT amount, currency, status, provider_ref, result, finished_at, tombstoned_at FROM "+
		table(s.Schema(), "payonce_tombstones")+" WHERE id = 'op-1'").Scan(&amount, &currency, &status, &providerRef, &reslt, &finished, &tombAt))
	require.Equal(t, int64(1000), amount)
	require.Equal(t, "EUR", currency)
	require.Equal(t, "succeeded", status)
	require.Equal(t, "pi_op-1", providerRef)
	require.JSONEq(t, `{"status":"succeeded"}`, reslt)
	require.True(t, t0.Add(time.Minute).Equal(finished))
	require.True(t, cleanedAt.Equal(tombAt))
}
