package ledgerpg_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// A flow of writes on one operation, run on a store with the one-statement
// writes (revision.go) and on one without: both must leave the same rows,
// attempts and audit trail, and the first must send one round trip per
// write.
type writeFlow struct {
	name string
	// setup creates the operation (its round trips are not counted).
	setup ledgertest.Write
	// writes are the counted writes; each costs one round trip on the
	// store with one-statement writes.
	writes []ledgertest.Write
	// longWay counts the writes of the flow that must take the long way
	// even with a copy (an attempt other than the first proven not sent).
	longWay int
}

// claimDueAt creates the operation pending and claims it as background
// work would.
func claimDueAt(at time.Time) ledgertest.Write {
	return func(t *testing.T, s ledger.Store, id string) {
		_, _, err := s.CreateOrGet(t.Context(), newOp(id), t0)
		require.NoError(t, err)
		got, err := s.ClaimDue(t.Context(), ledger.ClaimDueParams{Owner: "w", Now: at, LeaseUntil: at.Add(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Len(t, got, 1)
	}
}

var (
	t1       = t0.Add(time.Second)
	t2       = t0.Add(2 * time.Second)
	lookupEv = []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: "found pi_1 succeeded"}, {Kind: ledger.EventNote, Detail: "second"}}
)

var writeFlows = []writeFlow{
	{
		name:  "charge succeeds",
		setup: ledgertest.BeginWithAttempt(t0),
		writes: []ledgertest.Write{ledgertest.FinishWith(ledger.FinishParams{
			Now: t1, From: ledger.StatusInFlight, To: ledger.StatusSucceeded, ProviderRef: "pi_1", Result: []byte(`{"id":"pi_1"}`),
			Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess, HTTPStatus: 200, ProviderRequestID: "req_1", Replayed: true},
		})},
	},
	{
		name:  "declined",
		setup: ledgertest.BeginWithAttempt(t0),
		writes: []ledgertest.Write{ledgertest.FinishWith(ledger.FinishParams{
			Now: t1, From: ledger.StatusInFlight, To: ledger.StatusFailed, Result: []byte(`{"code":"card_declined"}`),
			Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeRefused, HTTPStatus: 402, Error: "card_declined"},
		})},
	},
	{
		name:  "maybe sent, kept lease, resent, succeeded with events",
		setup: ledgertest.BeginWithAttempt(t0),
		writes: []ledgertest.Write{
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t1, From: ledger.StatusInFlight, To: ledger.StatusUnknown, NextCheckAt: t1, KeepLease: true,
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent, Error: "timeout"},
			}),
			ledgertest.StartAttemptAt(t1, ledger.NewEvent{Kind: ledger.EventLookup, Detail: "not found"}),
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t2, From: ledger.StatusInFlight, To: ledger.StatusSucceeded, ProviderRef: "pi_1", Events: lookupEv,
				Attempt: &ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeSuccess, HTTPStatus: 200},
			}),
		},
	},
	{
		// The first attempt never left: the window closes again, known
		// without reading the other attempts (there are none). The second
		// never left either: where its window starts depends on the first,
		// which the copy does not hold, so that write takes the long way.
		name:  "not sent twice",
		setup: ledgertest.BeginWithAttempt(t0),
		writes: []ledgertest.Write{
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t1, From: ledger.StatusInFlight, To: ledger.StatusPending, NextCheckAt: t1, KeepLease: true,
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeNotSent, Error: "connection refused"},
			}),
			ledgertest.StartAttemptAt(t1),
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t2, From: ledger.StatusInFlight, To: ledger.StatusPending, NextCheckAt: t2,
				Attempt: &ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeNotSent, Error: "connection refused"},
			}),
		},
		longWay: 1,
	},
	{
		name:  "background work: claimed, sent, succeeded",
		setup: claimDueAt(t1),
		writes: []ledgertest.Write{
			ledgertest.StartAttemptAt(t1),
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t2, From: ledger.StatusInFlight, To: ledger.StatusSucceeded, ProviderRef: "pi_1",
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess, HTTPStatus: 200},
			}),
		},
	},
	{
		name: "background work: a lookup settles an unknown operation",
		setup: func(t *testing.T, s ledger.Store, id string) {
			ledgertest.BeginWithAttempt(t0)(t, s, id)
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t1, From: ledger.StatusInFlight, To: ledger.StatusUnknown, NextCheckAt: t1,
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
			})(t, s, id)
			got, err := s.ClaimDue(t.Context(), ledger.ClaimDueParams{Owner: "w", Now: t2, LeaseUntil: t2.Add(time.Minute), Limit: 10})
			require.NoError(t, err)
			require.Len(t, got, 1)
		},
		writes: []ledgertest.Write{ledgertest.FinishWith(ledger.FinishParams{
			Now: t2, From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_1", Events: lookupEv,
		})},
	},
	{
		name:  "to review",
		setup: ledgertest.BeginWithAttempt(t0),
		writes: []ledgertest.Write{ledgertest.FinishWith(ledger.FinishParams{
			Now: t1, From: ledger.StatusInFlight, To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeWindowPassed, ReviewReason: "key_window_expired",
			Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
		})},
	},
}

func TestOneStatementWritesMatchTheLongWay(t *testing.T) {
	t.Parallel()
	for _, f := range writeFlows {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			fast, counter := countingStore(t)
			slow, _ := newStore(t)
			ledgerpg.SetLongWayOnly(slow)
			id := "op-" + f.name
			f.setup(t, fast, id)
			f.setup(t, slow, id)
			for i, w := range f.writes {
				before := counter.roundTrips.Load()
				w(t, fast, id)
				w(t, slow, id)
				if trips := counter.roundTrips.Load() - before; i < len(f.writes)-f.longWay {
					require.Equal(t, int64(1), trips, "write %d: one statement", i)
				} else {
					require.Greater(t, trips, int64(1), "write %d: the long way", i)
				}
			}
			ledgertest.RequireSameLedger(t, slow, fast, id)
		})
	}
}

// The copy is never an authority: when another process moves the row on
// (here: takes over the expired lease), the write takes the long way and
// reports what the row says.
func TestOneStatementWriteYieldsToAnotherWriter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	other := storeOn(t, s.Schema())
	ledgertest.BeginWithAttempt(t0)(t, s, "op-1")
	later := t0.Add(2 * time.Minute)
	got, err := other.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "w2", Now: later, LeaseUntil: later.Add(time.Minute), Limit: 10})
	require.NoError(t, err)
	require.Len(t, got, 1)

	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: later, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess},
	})
	require.ErrorIs(t, err, ledger.ErrLeaseLost)
	op, attempts, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.Equal(t, ledger.StatusUnknown, op.Status)
	require.Equal(t, "w2", op.LeaseOwner)
	require.True(t, attempts[0].FinishedAt.IsZero())

	// The other worker's copy (from ClaimDue) still matches the row: its
	// lookup's outcome is one statement.
	op, err = other.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w2", Now: later, From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_1",
	})
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
}

// A copy that the rules refuse (another owner asks) turns into no error of
// its own: the long way decides, on the row.
func TestOneStatementWriteRefusedByTheRulesTakesTheLongWay(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, counter := countingStore(t)
	ledgertest.BeginWithAttempt(t0)(t, s, "op-1")
	before := counter.roundTrips.Load()
	_, err := s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "intruder", Now: t1, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess},
	})
	require.ErrorIs(t, err, ledger.ErrLeaseLost)
	require.Greater(t, counter.roundTrips.Load()-before, int64(1), "read under the lock")
	// The copy was used up: the owner's Finish takes the long way, and succeeds.
	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t1, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess},
	})
	require.NoError(t, err)
}

// An attempt row changed by a writer that commits while the one-statement
// Finish waits for its lock: the statement's guard fails it, nothing of it
// is committed, and the long way records the outcome on what the row holds
// then.
func TestOneStatementFinishGuardsTheAttemptRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	ledgertest.BeginWithAttempt(t0)(t, s, "op-1")

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	_, err = tx.Exec(ctx, "UPDATE "+table(s.Schema(), "payonce_attempts")+" SET provider_request_id = 'edited' WHERE operation_id = 'op-1'")
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := s.Finish(ctx, ledger.FinishParams{
			ID: "op-1", Owner: "w", Now: t1, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
			Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess, HTTPStatus: 200},
		})
		done <- err
	}()
	waitForLockWait(t, pool, s.Schema())
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-done)

	op, attempts, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
	require.Equal(t, ledger.OutcomeSuccess, attempts[0].Outcome)
	require.False(t, attempts[0].FinishedAt.IsZero())
}

// waitForLockWait returns once a backend waits for a lock in a statement
// on schema's tables.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		err := pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0)`, table(schema, "payonce_attempts")).Scan(&waiting)
		require.NoError(t, err)
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(errors.New("no backend waited for the attempt row's lock"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Begin's one trip opens its own READ COMMITTED transaction, whatever the
// server's default isolation; the one-statement writes, which need no
// particular level, run in the server's default and stay one statement.
func TestOneTripUnderAnotherDefaultIsolation(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"repeatable read", "serializable"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			counter := &txCounter{}
			s, pool := storeWith(t, func(cfg *pgxpool.Config) {
				cfg.ConnConfig.Tracer = counter
				onConnect("SET default_transaction_isolation = '" + level + "'")(cfg)
			})
			var got string
			require.NoError(t, pool.QueryRow(t.Context(), "SHOW transaction_isolation").Scan(&got))
			require.Equal(t, level, got)

			ledgertest.BeginWithAttempt(t0)(t, s, "op-1")
			before := counter.roundTrips.Load()
			ledgertest.BeginWithAttempt(t0)(t, s, "op-2")
			require.Equal(t, int64(1), counter.roundTrips.Load()-before, "Begin: one round trip")
			for _, id := range []string{"op-1", "op-2"} {
				before = counter.roundTrips.Load()
				ledgertest.FinishWith(ledger.FinishParams{
					Now: t1, From: ledger.StatusInFlight, To: ledger.StatusSucceeded, ProviderRef: "pi_" + id,
					Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess},
				})(t, s, id)
				require.Equal(t, int64(1), counter.roundTrips.Load()-before, "Finish: one statement")
				op, attempts, err := s.Get(t.Context(), id)
				require.NoError(t, err)
				require.Equal(t, ledger.StatusSucceeded, op.Status)
				require.Len(t, attempts, 1)
				require.Equal(t, ledger.OutcomeSuccess, attempts[0].Outcome)
			}
		})
	}
}

// The conformance suite on a server whose default isolation is REPEATABLE
// READ: every write path keeps its rules whichever way it runs.
func TestConformanceUnderRepeatableReadDefault(t *testing.T) {
	t.Parallel()
	testkit.URL(t)
	rr := onConnect("SET default_transaction_isolation = 'repeatable read'")
	newRRPool := func(t *testing.T) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(testkit.URL(t))
		require.NoError(t, err)
		rr(cfg)
		return testkit.NewPoolConfig(t, cfg)
	}
	ledgertest.Run(t, func(t *testing.T) *ledgertest.Harness {
		pool := newRRPool(t)
		h := harness(t, pool, testkit.NewSchema(t, pool))
		schema := h.Store.(*ledgerpg.Store).Schema()
		h.OpenAnother = func(t *testing.T) ledger.Store {
			s, err := ledgerpg.New(newRRPool(t), ledgerpg.Config{Schema: schema})
			require.NoError(t, err)
			return s
		}
		return h
	})
}
