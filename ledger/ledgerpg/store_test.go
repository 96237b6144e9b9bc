package ledgerpg_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	// A pool that never connects: New does not touch the database.
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	s, err := ledgerpg.New(pool, ledgerpg.Config{})
	require.NoError(t, err)
	require.Equal(t, "public", s.Schema())

	// Every statement quotes the schema, so any name PostgreSQL keeps byte
	// for byte is fine (TestReservedAndMixedCaseSchemas runs them).
	for _, ok := range []string{"payonce", "_x", "a1_b2", strings.Repeat("a", 63), "user", "order", "Pay Once", "1abc", "a-b", `a"b`, "a;drop", "PG_x"} {
		_, err := ledgerpg.New(pool, ledgerpg.Config{Schema: ok})
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{"pg_temp", "pg_catalog", "été", "a\nb", "a\x00b", strings.Repeat("a", 64)} {
		_, err := ledgerpg.New(pool, ledgerpg.Config{Schema: bad})
		require.ErrorIs(t, err, ledger.ErrInvalid, bad)
		require.ErrorContains(t, err, "1 to 63 printable ASCII characters", bad)
	}

	_, err = ledgerpg.New(nil, ledgerpg.Config{})
	require.ErrorIs(t, err, ledger.ErrInvalid)
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s, err := ledgerpg.New(pool, ledgerpg.Config{})
	require.NoError(t, err)

	ms := s.Migrations()
	require.NotEmpty(t, ms)
	require.Equal(t, 1, ms[0].Version)
	require.Equal(t, "initial", ms[0].Name)
	for i := 1; i < len(ms); i++ {
		require.Greater(t, ms[i].Version, ms[i-1].Version)
	}
}

func TestMigrateTwiceIsNoop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testkit.NewPool(t)
	schema := testkit.NewSchema(t, pool)
	s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)

	applied, err := s.MigrateReport(ctx)
	require.NoError(t, err)
	require.Equal(t, s.Migrations(), applied)

	_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)

	applied, err = s.MigrateReport(ctx)
	require.NoError(t, err)
	require.Empty(t, applied)
	require.NoError(t, s.Migrate(ctx))

	_, _, err = s.Get(ctx, "op-1")
	require.NoError(t, err, "data survives a second migration")
	var versions []int
	rows, err := pool.Query(ctx, "SELECT version FROM "+pgx.Identifier{schema, "payonce_schema_migrations"}.Sanitize()+" ORDER BY version")
	require.NoError(t, err)
	versions, err = pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	require.Len(t, versions, len(s.Migrations()), "each version recorded once")
}

func TestConcurrentMigrateCreatesSchemaOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	poolA, poolB := testkit.NewPool(t), testkit.NewPool(t)
	schema := testkit.NewSchema(t, poolA)
	// Start from nothing: Migrate must create the schema, and the two
	// processes race for it.
	_, err := poolA.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)

	var wg sync.WaitGroup
	applied := make([][]ledgerpg.Migration, 2)
	errs := make([]error, 2)
	for i, pool := range []*pgxpool.Pool{poolA, poolB} {
		wg.Go(func() {
			s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
			if err != nil {
				errs[i] = err
				return
			}
			applied[i], errs[i] = s.MigrateReport(ctx)
		})
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.True(t, (len(applied[0]) == 0) != (len(applied[1]) == 0), "exactly one of the two applied the migrations: %v", applied)

	s, err := ledgerpg.New(poolB, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
}

func TestSchemasAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, pool := newStore(t)
	b := migratedStore(t, pool, testkit.NewSchema(t, pool))

	_, err := a.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	_, _, err = b.Get(ctx, "op-1")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	res, err := b.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w2", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)
	require.True(t, res.Created)
}

// Fifty workers in two processes (two pools) claim one operation at once:
// exactly one wins; every other one is told the operation is in progress.
func TestConcurrentClaimHasOneWinner(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, _ := newStore(t)
	poolB := testkit.NewPool(t)
	b, err := ledgerpg.New(poolB, ledgerpg.Config{Schema: a.Schema()})
	require.NoError(t, err)

	_, created, err := a.CreateOrGet(ctx, newOp("op-1"), t0)
	require.NoError(t, err)
	require.True(t, created)

	const workers = 50
	var wg sync.WaitGroup
	errs := make([]error, workers)
	start := make(chan struct{})
	for i := range workers {
		store := a
		if i%2 == 1 {
			store = b
		}
		wg.Go(func() {
			<-start
			_, errs[i] = store.Claim(ctx, ledger.ClaimParams{
				ID: "op-1", Owner: fmt.Sprintf("worker-%d", i), Now: t0.Add(time.Second), LeaseUntil: t0.Add(time.Minute),
			})
		})
	}
	close(start)
	wg.Wait()

	winners := 0
	for i, err := range errs {
		if err == nil {
			winners++
			continue
		}
		require.ErrorIs(t, err, ledger.ErrInProgress, "worker %d", i)
	}
	require.Equal(t, 1, winners)
}

// Twenty callers in two processes Begin the same new operation with
// StartAttempt: one creates it and starts the only attempt.
func TestConcurrentBeginStartsOneAttempt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, _ := newStore(t)
	b, err := ledgerpg.New(testkit.NewPool(t), ledgerpg.Config{Schema: a.Schema()})
	require.NoError(t, err)

	const callers = 20
	var wg sync.WaitGroup
	results := make([]ledger.BeginResult, callers)
	errs := make([]error, callers)
	start := make(chan struct{})
	for i := range callers {
		store := a
		if i%2 == 1 {
			store = b
		}
		wg.Go(func() {
			<-start
			results[i], errs[i] = store.Begin(ctx, ledger.BeginParams{
				Op: newOp("op-1"), Owner: fmt.Sprintf("caller-%d", i), Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true,
			})
		})
	}
	close(start)
	wg.Wait()

	created, attempts := 0, 0
	for i := range callers {
		if errs[i] != nil {
			require.ErrorIs(t, errs[i], ledger.ErrInProgress)
			require.Equal(t, "op-1", results[i].Op.ID, "an in-progress Begin returns the operation")
			continue
		}
		if results[i].Created {
			created++
		}
		if results[i].Attempt != nil {
			attempts++
		}
	}
	require.Equal(t, 1, created)
	require.Equal(t, 1, attempts)
	_, as, err := a.Get(ctx, "op-1")
	require.NoError(t, err)
	require.Len(t, as, 1)
}

// Four reconcilers in two processes drain the due operations: each one is
// leased exactly once.
func TestConcurrentClaimDueNeverSharesRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, _ := newStore(t)
	b, err := ledgerpg.New(testkit.NewPool(t), ledgerpg.Config{Schema: a.Schema()})
	require.NoError(t, err)
	const ops = 200
	for i := range ops {
		_, _, err := a.CreateOrGet(ctx, newOp(fmt.Sprintf("op-%03d", i)), t0)
		require.NoError(t, err)
	}

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]int{}
		errs = make([]error, 4)
	)
	for w := range 4 {
		store := a
		if w%2 == 1 {
			store = b
		}
		wg.Go(func() {
			for {
				got, err := store.ClaimDue(ctx, ledger.ClaimDueParams{
					Owner: fmt.Sprintf("reconciler-%d", w), Now: t0.Add(time.Second), LeaseUntil: t0.Add(time.Minute), Limit: 7,
				})
				if err != nil || len(got) == 0 {
					errs[w] = err
					return
				}
				mu.Lock()
				for _, op := range got {
					seen[op.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, seen, ops)
	for id, n := range seen {
		require.Equal(t, 1, n, id)
	}
}

func TestKeyOfAnotherOperation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.NoError(t, err)

	other := newOp("op-2")
	other.Generation, other.Key = 1, "op-1" // a (buggy) key already used by op-1
	_, err = s.Begin(ctx, ledger.BeginParams{Op: other, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.ErrorIs(t, err, ledger.ErrKeyConflict)
	_, _, err = s.CreateOrGet(ctx, other, t0)
	require.ErrorIs(t, err, ledger.ErrKeyConflict)
	_, _, err = s.Get(ctx, "op-2")
	require.ErrorIs(t, err, ledger.ErrNotFound)
}

func TestTextPostgresCannotStoreIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	op := newOp("op-1")
	op.Request = []byte("{\"a\":\"\x00\"}") // valid UTF-8, but text cannot hold NUL
	_, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
	require.ErrorIs(t, err, ledger.ErrInvalid)
	var ve *ledger.ValidationError
	require.True(t, errors.As(err, &ve))
	_, _, err = s.Get(ctx, "op-1")
	require.ErrorIs(t, err, ledger.ErrNotFound)
}

// The fast path costs two commits: Begin (a single statement for a new
// operation) and Finish.
func TestFastPathCommitsTwice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, counter := countingStore(t)

	res, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	require.NotNil(t, res.Attempt)
	require.Equal(t, int64(1), counter.commits.Load(), "Begin")
	require.Equal(t, int64(1), counter.roundTrips.Load(), "Begin of a new operation is one statement")

	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess, HTTPStatus: 200}, ProviderRef: "pi_1",
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), counter.commits.Load(), "Begin + Finish")
}

// Reading back a row someone edited by hand reports corruption instead of
// failing later or panicking.
func TestCorruptOutcomeIsReported(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE "+pgx.Identifier{s.Schema(), "payonce_attempts"}.Sanitize()+" SET outcome = 'exploded'")
	require.NoError(t, err)
	_, _, err = s.Get(ctx, "op-1")
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	require.ErrorContains(t, err, "exploded")

	// Finishing that attempt reports it too, and leaves the row as it is.
	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
	})
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	var outcome string
	require.NoError(t, pool.QueryRow(ctx, "SELECT outcome FROM "+pgx.Identifier{s.Schema(), "payonce_attempts"}.Sanitize()).Scan(&outcome))
	require.Equal(t, "exploded", outcome)
}

// After an operator approved a resend, the key window belongs to the new
// key: an attempt under it that was never sent closes the window again, even
// though an attempt under the old key may have reached the provider.
func TestNotSentAttemptClosesTheNewKeysWindow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := newStore(t)
	lease := func(now time.Time) time.Time { return now.Add(time.Minute) }

	_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: lease(t0), StartAttempt: true})
	require.NoError(t, err)
	now := t0.Add(time.Second)
	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: now, From: ledger.StatusInFlight, To: ledger.StatusManualReview, ReviewReason: "window passed",
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
	})
	require.NoError(t, err)
	now = t0.Add(48 * time.Hour)
	_, err = s.Resolve(ctx, ledger.ResolveParams{ID: "op-1", Actor: "alice", Note: "never arrived", Outcome: ledger.ResolveResend, NewKey: "op-1-g1", NewGeneration: 1, Now: now})
	require.NoError(t, err)

	_, err = s.Claim(ctx, ledger.ClaimParams{ID: "op-1", Owner: "w", Now: now, LeaseUntil: lease(now)})
	require.NoError(t, err)
	op, a, err := s.StartAttempt(ctx, ledger.StartAttemptParams{ID: "op-1", Owner: "w", Now: now, LeaseUntil: lease(now)})
	require.NoError(t, err)
	require.Equal(t, "op-1-g1", a.Key)
	require.Equal(t, now, op.WindowStart)

	op, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: now.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusPending,
		Attempt: &ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeNotSent, Error: "connection refused"},
	})
	require.NoError(t, err)
	require.True(t, op.WindowStart.IsZero(), "window of op-1-g1: %v", op.WindowStart)
	require.True(t, op.KeyExpiresAt.IsZero())
}
