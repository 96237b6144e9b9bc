package ledgersqlite_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// A flow of writes on one operation, run on a store with the writes on its
// copy (revision.go) and on one without: both must leave the same rows,
// attempts and audit trail, and the first must write the Finishes it has a
// copy for without reading the row.
type writeFlow struct {
	name  string
	setup ledgertest.Write
	// writes run in order; fast says which of them Finish writes on its
	// copy.
	writes []ledgertest.Write
	fast   []bool
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
		fast: []bool{true},
	},
	{
		name:  "declined",
		setup: ledgertest.BeginWithAttempt(t0),
		writes: []ledgertest.Write{ledgertest.FinishWith(ledger.FinishParams{
			Now: t1, From: ledger.StatusInFlight, To: ledger.StatusFailed, Result: []byte(`{"code":"card_declined"}`),
			Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeRefused, HTTPStatus: 402, Error: "card_declined"},
		})},
		fast: []bool{true},
	},
	{
		// StartAttempt writes the row the long way and drops the copy of
		// the Finish that kept the lease: the second Finish reads the row.
		name:  "maybe sent, kept lease, resent, succeeded with events",
		setup: ledgertest.BeginWithAttempt(t0),
		writes: []ledgertest.Write{
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t1, From: ledger.StatusInFlight, To: ledger.StatusUnknown, NextCheckAt: t1, KeepLease: true,
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent, Error: "timeout"},
			}),
			ledgertest.StartAttemptAt(t1),
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t2, From: ledger.StatusInFlight, To: ledger.StatusSucceeded, ProviderRef: "pi_1", Events: lookupEv,
				Attempt: &ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeSuccess, HTTPStatus: 200},
			}),
		},
		fast: []bool{true, false, false},
	},
	{
		// The first attempt never left: the window closes again, known
		// without reading the other attempts (there are none). The lookup
		// that follows under the kept lease writes on the copy that Finish
		// kept.
		name:  "not sent, kept lease, settled by a lookup",
		setup: ledgertest.BeginWithAttempt(t0),
		writes: []ledgertest.Write{
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t1, From: ledger.StatusInFlight, To: ledger.StatusUnknown, NextCheckAt: t1, KeepLease: true,
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeNotSent, Error: "connection refused"},
			}),
			ledgertest.FinishWith(ledger.FinishParams{
				Now: t2, From: ledger.StatusUnknown, To: ledger.StatusFailed, Events: lookupEv, Result: []byte(`{"code":"gone"}`),
			}),
		},
		fast: []bool{true, true},
	},
	{
		name:  "to review",
		setup: ledgertest.BeginWithAttempt(t0),
		writes: []ledgertest.Write{ledgertest.FinishWith(ledger.FinishParams{
			Now: t1, From: ledger.StatusInFlight, To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeWindowPassed, ReviewReason: "key_window_expired",
			Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
		})},
		fast: []bool{true},
	},
}

func TestWritesOnTheCopyMatchTheLongWay(t *testing.T) {
	t.Parallel()
	for _, f := range writeFlows {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			fast, slow := openStore(t), openStore(t)
			ledgersqlite.SetLongWayOnly(slow)
			id := "op-1"
			f.setup(t, fast, id)
			f.setup(t, slow, id)
			for i, w := range f.writes {
				before := ledgersqlite.FastFinishes(fast)
				w(t, fast, id)
				w(t, slow, id)
				require.Equal(t, f.fast[i], ledgersqlite.FastFinishes(fast)-before == 1, "write %d on the copy", i)
			}
			require.Zero(t, ledgersqlite.FastFinishes(slow))
			ledgertest.RequireSameLedger(t, slow, fast, id)
			require.Equal(t, revisionOf(t, rawDB(t, dbFile(t, slow)), id), revisionOf(t, rawDB(t, dbFile(t, fast)), id))
		})
	}
}

// The copy is never an authority: a write by anyone else between Begin and
// Finish (here SQL of its own on another connection, which knows nothing of
// the revision) makes Finish read the row and decide on what it says.
func TestForeignWriteMakesFinishTakeTheLongWay(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, c := range []struct {
		name    string
		update  string // run on op-1 through another *sql.DB
		wantErr error
		check   func(t *testing.T, op ledger.Operation)
	}{
		{
			// The owner and the status still match: only the revision
			// tells the row moved on, and the long way keeps what the
			// other writer recorded.
			name:   "another column",
			update: `UPDATE payonce_operations SET review_reason = 'foreign' WHERE id = 'op-1'`,
			check: func(t *testing.T, op ledger.Operation) {
				require.Equal(t, ledger.StatusSucceeded, op.Status)
				require.Equal(t, "foreign", op.ReviewReason)
			},
		},
		{
			// Setting the column to what it holds is no write of it:
			// the trigger still advances it.
			name:   "revision set to itself",
			update: `UPDATE payonce_operations SET review_reason = 'foreign', revision = revision WHERE id = 'op-1'`,
			check: func(t *testing.T, op ledger.Operation) {
				require.Equal(t, "foreign", op.ReviewReason)
			},
		},
		{
			name:    "lease taken",
			update:  `UPDATE payonce_operations SET lease_owner = 'w2' WHERE id = 'op-1'`,
			wantErr: ledger.ErrLeaseLost,
		},
		{
			name:    "status changed",
			update:  `UPDATE payonce_operations SET status = 'unknown' WHERE id = 'op-1'`,
			wantErr: ledger.ErrStateConflict,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, path := begunOnFile(t)
			raw := rawDB(t, path)
			require.EqualValues(t, 1, revisionOf(t, raw, "op-1"))
			_, err := raw.ExecContext(ctx, c.update)
			require.NoError(t, err)
			require.EqualValues(t, 2, revisionOf(t, raw, "op-1"), "the trigger advanced the revision")

			op, err := s.Finish(ctx, succeed("op-1", "w", t1, 1))
			require.Zero(t, ledgersqlite.FastFinishes(s), "the long way")
			if c.wantErr != nil {
				require.ErrorIs(t, err, c.wantErr)
				got, attempts, err := s.Get(ctx, "op-1")
				require.NoError(t, err)
				require.NotEqual(t, ledger.StatusSucceeded, got.Status, "nothing written")
				require.True(t, attempts[0].FinishedAt.IsZero(), "nothing written")
				require.EqualValues(t, 2, revisionOf(t, raw, "op-1"))
				return
			}
			require.NoError(t, err)
			c.check(t, op)
			got, _, err := s.Get(ctx, "op-1")
			require.NoError(t, err)
			require.Equal(t, op, got)
			require.EqualValues(t, 3, revisionOf(t, raw, "op-1"))
		})
	}
}

// An attempt has no revision of its own: an outcome recorded on it by
// someone else (with the operation row untouched) fails the write of the
// attempt, the write of the operation is rolled back with it, and the long
// way refuses to finish the attempt twice.
func TestForeignAttemptWriteMakesFinishTakeTheLongWay(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, path := begunOnFile(t)
	raw := rawDB(t, path)
	_, err := raw.ExecContext(ctx, `UPDATE payonce_attempts SET finished_at = ?, outcome = 'maybe_sent', error = 'foreign'
		WHERE operation_id = 'op-1' AND number = 1`, t1.UnixMicro())
	require.NoError(t, err)
	require.EqualValues(t, 1, revisionOf(t, raw, "op-1"), "the operation row is untouched")

	_, err = s.Finish(ctx, succeed("op-1", "w", t1, 1))
	require.ErrorIs(t, err, ledger.ErrStateConflict)
	require.ErrorContains(t, err, "already finished")
	require.Zero(t, ledgersqlite.FastFinishes(s))
	op, attempts, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.Equal(t, ledger.StatusInFlight, op.Status, "the operation's write was rolled back")
	require.Empty(t, op.ProviderRef)
	require.EqualValues(t, 1, revisionOf(t, raw, "op-1"))
	require.Equal(t, "foreign", attempts[0].Error)
}

// Another store on the same file (another process) takes the expired lease
// over: the copy no longer matches, Finish reports what the row says, and
// the other store's write stands.
func TestFinishOnCopyYieldsToAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, path := begunOnFile(t)
	other := openAt(t, path)
	later := t0.Add(2 * leaseFor)
	got, err := other.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "w2", Now: later, LeaseUntil: later.Add(time.Minute), Limit: 10})
	require.NoError(t, err)
	require.Len(t, got, 1)

	_, err = s.Finish(ctx, succeed("op-1", "w", later, 1))
	require.ErrorIs(t, err, ledger.ErrLeaseLost)
	require.Zero(t, ledgersqlite.FastFinishes(s))
	op, attempts, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.Equal(t, ledger.StatusUnknown, op.Status)
	require.Equal(t, "w2", op.LeaseOwner)
	require.True(t, attempts[0].FinishedAt.IsZero())
}

// A copy the rules refuse (another owner asks, or the wrong status) turns
// into no error of its own: the long way decides, on the row. The copy is
// used up either way.
func TestCopyRefusedByTheRulesTakesTheLongWay(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	ledgertest.BeginWithAttempt(t0)(t, s, "op-1")
	_, err := s.Finish(ctx, succeed("op-1", "intruder", t1, 1))
	require.ErrorIs(t, err, ledger.ErrLeaseLost)
	require.Zero(t, ledgersqlite.FastFinishes(s))
	op, err := s.Finish(ctx, succeed("op-1", "w", t1, 1))
	require.NoError(t, err, "the owner's Finish, the long way")
	require.Equal(t, ledger.StatusSucceeded, op.Status)
	require.Zero(t, ledgersqlite.FastFinishes(s))

	// A Finish that kept the lease left a copy at unknown; a Finish that
	// expects pending is refused by the rules on the copy, then on the row.
	ledgertest.BeginWithAttempt(t0)(t, s, "op-2")
	ledgertest.FinishWith(ledger.FinishParams{
		Now: t1, From: ledger.StatusInFlight, To: ledger.StatusUnknown, NextCheckAt: t1, KeepLease: true,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
	})(t, s, "op-2")
	require.EqualValues(t, 1, ledgersqlite.FastFinishes(s))
	_, err = s.Finish(ctx, ledger.FinishParams{ID: "op-2", Owner: "w", Now: t2, From: ledger.StatusPending, To: ledger.StatusFailed})
	require.ErrorIs(t, err, ledger.ErrStateConflict)
	require.EqualValues(t, 1, ledgersqlite.FastFinishes(s))
	op, err = s.Finish(ctx, ledger.FinishParams{ID: "op-2", Owner: "w", Now: t2, From: ledger.StatusUnknown, To: ledger.StatusSucceeded})
	require.NoError(t, err, "the copy was used up: the long way")
	require.Equal(t, ledger.StatusSucceeded, op.Status)
	require.EqualValues(t, 1, ledgersqlite.FastFinishes(s))
}

// begunOnFile is a store on a file of its own (path) in which "w" began
// op-1 with its first attempt: the store holds a copy of it.
func begunOnFile(t *testing.T) (*ledgersqlite.Store, string) {
	t.Helper()
	path := dbPath(t)
	s := openAt(t, path)
	ledgertest.BeginWithAttempt(t0)(t, s, "op-1")
	return s, path
}

// revisionOf reads the revision column of operation id through db.
func revisionOf(t *testing.T, db *sql.DB, id string) int64 {
	t.Helper()
	var rev int64
	require.NoError(t, db.QueryRowContext(t.Context(), `SELECT revision FROM payonce_operations WHERE id = ?`, id).Scan(&rev))
	return rev
}

// dbFile is the path of the database file s has open.
func dbFile(t *testing.T, s *ledgersqlite.Store) string {
	t.Helper()
	var seq int
	var name, file string
	require.NoError(t, ledgersqlite.DB(s).QueryRowContext(t.Context(), `PRAGMA database_list`).Scan(&seq, &name, &file))
	return file
}
