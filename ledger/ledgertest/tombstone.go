package ledgertest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Cleanup leaves a tombstone of every operation it deletes, so that a late
// duplicate call (the same ID months later) gets the recorded outcome and
// nothing is created: a new operation would be sent again under a key the
// provider has forgotten, a second charge.

// cleanedAt is when the tombstone scenarios run Cleanup: long after base,
// past the retention and the key windows of shortTTL operations.
var cleanedAt = at(30 * 24 * time.Hour)

func cleanupAt(now time.Time) ledger.CleanupParams {
	return ledger.CleanupParams{Now: now, Retention: 48 * time.Hour, KeyTTL: keyTTL}
}

// settled records op and settles it at 1m: succeeded (one attempt, with a
// provider reference and a result) or failed (refused), and returns it as
// Get reads it.
func settled(t *testing.T, s ledger.Store, op ledger.NewOperation, to ledger.Status) ledger.Operation {
	t.Helper()
	mustStart(t, s, op, ownerA, base)
	p := ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: at(time.Minute), From: ledger.StatusInFlight, To: to, Attempt: attemptOutcome(1, to)}
	if to == ledger.StatusSucceeded {
		p.ProviderRef, p.Result = "pi_"+op.ID, []byte(`{"status":"succeeded","amount":1000}`)
	} else {
		p.Result = []byte(`{"status":"failed","decline_code":"card_declined"}`)
	}
	mustFinish(t, s, p)
	got, _ := mustGet(t, s, op.ID)
	return got
}

// tombstoneOf is the Operation a store returns for the tombstone of was,
// written at when.
func tombstoneOf(was ledger.Operation, when time.Time) ledger.Operation {
	return ledgerdriver.TombstoneOf(was, when).Operation()
}

// requireTombstone checks that got is the tombstone of was written at when.
func requireTombstone(t *testing.T, was ledger.Operation, when time.Time, got ledger.Operation) {
	t.Helper()
	require.True(t, got.Tombstone, "%s: Tombstone", was.ID)
	require.Equal(t, canon(tombstoneOf(was, when)), canon(got), "%s: the tombstone keeps the identity and the final outcome", was.ID)
	require.Nil(t, got.Request, "a tombstone keeps no request")
	require.Zero(t, got.Attempts)
	requireNoLease(t, got)
	requireTime(t, time.Time{}, got.NextCheckAt, "NextCheckAt of a tombstone")
}

// requireNothingLive checks that the store holds no operation at all, and
// that ClaimDue finds no work.
func requireNothingLive(t *testing.T, s ledger.Store, now time.Time) {
	t.Helper()
	ops, err := s.List(t.Context(), ledger.ListFilter{Limit: ledger.MaxLimit})
	require.NoError(t, err)
	require.Empty(t, ops, "no operation was recreated")
	review, err := s.ListReview(t.Context(), ledger.ReviewFilter{})
	require.NoError(t, err)
	require.Empty(t, review)
	due := mustClaimDue(t, s, ledger.ClaimDueParams{Owner: ownerB, Now: now, LeaseUntil: now.Add(leaseFor), Limit: 100, IncludeReview: true})
	require.Empty(t, due, "nothing is due")
}

func testTombstoneLateBegin(t *testing.T, h *Harness) {
	s := h.Store
	ok := settled(t, s, shortTTL("op-tomb-ok"), ledger.StatusSucceeded)
	ko := settled(t, s, shortTTL("op-tomb-ko"), ledger.StatusFailed)
	rep, err := s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)
	require.Equal(t, 2, rep.Deleted)

	late := cleanedAt.Add(90 * 24 * time.Hour)
	for _, was := range []ledger.Operation{ok, ko} {
		for _, start := range []bool{true, false} {
			for _, owner := range []string{ownerA, ownerB} {
				res, err := s.Begin(t.Context(), beginParams(shortTTL(was.ID), owner, late, start))
				require.NoError(t, err, "a tombstone answers like a terminal operation: no error")
				require.False(t, res.Created, "nothing is created")
				require.False(t, res.Claimed, "nothing may be sent")
				require.Nil(t, res.Attempt)
				requireTombstone(t, was, cleanedAt, res.Op)
			}
		}
	}
	requireNothingLive(t, s, late)
}

// An operation resent under a new key generation is found by its ID: the
// late caller describes it at generation 0 and gets the tombstone of the
// generation that settled it.
func testTombstoneLateBeginAfterResend(t *testing.T, h *Harness) {
	s := h.Store
	op := shortTTL("op-tomb-resent")
	toReview(t, s, op)
	newKey := op.ID + "-g1"
	mustResolve(t, s, ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend, NewKey: newKey, NewGeneration: 1, Now: at(time.Hour)})
	now := at(2 * time.Hour)
	mustClaim(t, s, op.ID, ownerA, now)
	mustStartAttempt(t, s, op.ID, ownerA, now)
	mustFinish(t, s, ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: now.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: attemptOutcome(2, ledger.StatusSucceeded), ProviderRef: "pi_g1"})
	was, _ := mustGet(t, s, op.ID)
	_, err := s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)

	res := mustBegin(t, s, beginParams(op, ownerB, cleanedAt.Add(time.Hour), true))
	require.False(t, res.Claimed)
	requireTombstone(t, was, cleanedAt, res.Op)
	require.Equal(t, newKey, res.Op.Key)
	require.Equal(t, 1, res.Op.Generation)
	require.Equal(t, "pi_g1", res.Op.ProviderRef)
	requireNothingLive(t, s, cleanedAt.Add(time.Hour))
}

func testTombstoneLateCreateOrGet(t *testing.T, h *Harness) {
	s := h.Store
	was := settled(t, s, shortTTL("op-tomb-create"), ledger.StatusSucceeded)
	_, err := s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)

	got, created, err := s.CreateOrGet(t.Context(), shortTTL(was.ID), cleanedAt.Add(time.Hour))
	require.NoError(t, err)
	require.False(t, created, "an ID Cleanup removed is not new")
	requireTombstone(t, was, cleanedAt, got)
	requireNothingLive(t, s, cleanedAt.Add(2*time.Hour))
}

// The fingerprint is checked against the tombstone: the same identity with
// another request is the caller bug it always was.
func testTombstoneFingerprint(t *testing.T, h *Harness) {
	s := h.Store
	was := settled(t, s, shortTTL("op-tomb-fp"), ledger.StatusSucceeded)
	_, err := s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)

	other := OtherRequest(shortTTL(was.ID))
	late := cleanedAt.Add(time.Hour)
	for _, start := range []bool{true, false} {
		_, err := s.Begin(t.Context(), beginParams(other, ownerB, late, start))
		require.ErrorIs(t, err, ledger.ErrFingerprintMismatch, "Begin")
	}
	_, _, err = s.CreateOrGet(t.Context(), other, late)
	require.ErrorIs(t, err, ledger.ErrFingerprintMismatch, "CreateOrGet")
	requireNothingLive(t, s, late)
	got, _ := mustGet(t, s, was.ID)
	requireTombstone(t, was, cleanedAt, got)
}

func testTombstoneGetAndEvents(t *testing.T, h *Harness) {
	s := h.Store
	op := shortTTL("op-tomb-get")
	mustBegin(t, s, beginParams(op, ownerA, base, false))
	_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: op.ID, Owner: ownerA, Now: base, LeaseUntil: at(leaseFor),
		Events: []ledger.NewEvent{{Kind: ledger.EventNote, Detail: "sent"}}})
	require.NoError(t, err)
	mustFinish(t, s, ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: at(time.Minute), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: attemptOutcome(1, ledger.StatusSucceeded), ProviderRef: "pi_get", Result: []byte(`{"status":"succeeded"}`)})
	was, _ := mustGet(t, s, op.ID)
	require.Len(t, mustEvents(t, s, op.ID), 1)
	_, err = s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)

	got, atts, err := s.Get(t.Context(), op.ID)
	require.NoError(t, err, "Get of a tombstone")
	requireTombstone(t, was, cleanedAt, got)
	require.Empty(t, atts, "a tombstone has no attempts")
	evs, err := s.Events(t.Context(), op.ID)
	require.NoError(t, err, "Events of a tombstone")
	require.NotNil(t, evs)
	require.Empty(t, evs, "its events went with the operation")

	// Writes find no operation to act on.
	now := cleanedAt.Add(time.Hour)
	_, err = s.Claim(t.Context(), ledger.ClaimParams{ID: op.ID, Owner: ownerB, Now: now, LeaseUntil: now.Add(leaseFor)})
	require.ErrorIs(t, err, ledger.ErrNotFound, "Claim")
	_, _, err = s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: op.ID, Owner: ownerB, Now: now, LeaseUntil: now.Add(leaseFor)})
	require.ErrorIs(t, err, ledger.ErrNotFound, "StartAttempt")
	_, err = s.Finish(t.Context(), ledger.FinishParams{ID: op.ID, Owner: ownerB, Now: now, From: ledger.StatusUnknown, To: ledger.StatusFailed})
	require.ErrorIs(t, err, ledger.ErrNotFound, "Finish")
	_, err = s.Resolve(t.Context(), ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "n", Outcome: ledger.ResolveFailed, Now: now})
	require.ErrorIs(t, err, ledger.ErrNotFound, "Resolve")

	// An ID never recorded is still not found.
	_, _, err = s.Get(t.Context(), "op-tomb-never")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	_, err = s.Events(t.Context(), "op-tomb-never")
	require.ErrorIs(t, err, ledger.ErrNotFound)
}

// List, ListReview and ClaimDue are about live operations: tombstones never
// appear in them.
func testTombstoneNotListed(t *testing.T, h *Harness) {
	s := h.Store
	for i := range 3 {
		settled(t, s, shortTTL(fmt.Sprintf("op-tomb-list-%d", i)), ledger.StatusSucceeded)
	}
	live := mustCreate(t, s, shortTTL("op-tomb-list-live"), base)
	_, err := s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)

	ops, err := s.List(t.Context(), ledger.ListFilter{Limit: ledger.MaxLimit})
	require.NoError(t, err)
	require.Equal(t, []string{live.ID}, ids(ops))
	for _, st := range []ledger.Status{ledger.StatusSucceeded, ledger.StatusFailed} {
		ops, err := s.List(t.Context(), ledger.ListFilter{Status: st})
		require.NoError(t, err)
		require.Empty(t, ops, "List of %s", st)
	}
	review, err := s.ListReview(t.Context(), ledger.ReviewFilter{})
	require.NoError(t, err)
	require.Empty(t, review)
	now := cleanedAt.Add(time.Hour)
	due := mustClaimDue(t, s, ledger.ClaimDueParams{Owner: ownerB, Now: now, LeaseUntil: now.Add(leaseFor), Limit: 100, IncludeReview: true})
	require.Equal(t, []string{live.ID}, ids(due))
}

func testTombstoneReport(t *testing.T, h *Harness) {
	s := h.Store
	for i := range 5 {
		settled(t, s, shortTTL(fmt.Sprintf("op-tomb-rep-%d", i)), ledger.StatusSucceeded)
	}
	p := cleanupAt(cleanedAt)
	p.BatchSize = 2
	rep, err := s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, ledger.CleanupReport{Deleted: 5, Batches: 3, Tombstoned: 5, Tombstones: 5}, canonReport(rep))

	// Nothing more to delete: the tombstones are still counted.
	rep, err = s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, ledger.CleanupReport{Tombstones: 5}, canonReport(rep))
}

// canonReport normalizes the time in a report for comparison.
func canonReport(r ledger.CleanupReport) ledger.CleanupReport {
	r.OldestFinishedAt = ledgerdriver.UTC(r.OldestFinishedAt)
	return r
}

// Tombstone retention is separate and explicit: zero keeps tombstones
// forever; a positive one deletes those whose operation finished longer ago,
// and only those.
func testTombstoneRetention(t *testing.T, h *Harness) {
	s := h.Store
	old := settled(t, s, shortTTL("op-tomb-old"), ledger.StatusSucceeded) // finished at 1m
	mustStart(t, s, shortTTL("op-tomb-newer"), ownerA, at(20*24*time.Hour))
	mustFinish(t, s, ledger.FinishParams{ID: "op-tomb-newer", Owner: ownerA, Now: at(20*24*time.Hour + time.Minute), From: ledger.StatusInFlight,
		To: ledger.StatusSucceeded, Attempt: attemptOutcome(1, ledger.StatusSucceeded), ProviderRef: "pi_newer"})
	newer, _ := mustGet(t, s, "op-tomb-newer")

	// Both deleted, both tombstoned; kept forever by default.
	rep, err := s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)
	require.Equal(t, 2, rep.Tombstoned)
	require.Equal(t, 2, rep.Tombstones)
	now := at(10 * 365 * 24 * time.Hour)
	rep, err = s.Cleanup(t.Context(), cleanupAt(now))
	require.NoError(t, err)
	require.Zero(t, rep.TombstonesPurged, "TombstoneRetention 0 keeps tombstones forever")
	require.Equal(t, 2, rep.Tombstones)

	// 25 days after the old one finished, 5 after the newer one: only the old
	// one's tombstone goes.
	p := cleanupAt(at(25 * 24 * time.Hour))
	p.TombstoneRetention = 10 * 24 * time.Hour
	rep, err = s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, 1, rep.TombstonesPurged)
	require.Equal(t, 1, rep.Tombstones)
	_, _, err = s.Get(t.Context(), old.ID)
	require.ErrorIs(t, err, ledger.ErrNotFound, "the old tombstone is gone")
	got, _ := mustGet(t, s, newer.ID)
	requireTombstone(t, newer, cleanedAt, got)

	// Without its tombstone, an ID is new again: that is what the retention
	// trades away.
	late := at(40 * 24 * time.Hour)
	res := mustBegin(t, s, beginParams(shortTTL(old.ID), ownerB, late, false))
	require.True(t, res.Created)
	res = mustBegin(t, s, beginParams(shortTTL(newer.ID), ownerB, late, false))
	require.False(t, res.Created)
	require.True(t, res.Op.Tombstone)

	// Too short a tombstone retention is refused before anything is done.
	for _, bad := range []time.Duration{-time.Hour, p.Retention - time.Microsecond} {
		q := p
		q.TombstoneRetention = bad
		_, err := s.Cleanup(t.Context(), q)
		require.ErrorIs(t, err, ledger.ErrInvalid, "TombstoneRetention %v", bad)
		var ve *ledger.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "TombstoneRetention", ve.Field)
	}
	q := p
	q.TombstoneRetention = p.Retention - time.Hour
	_, err = s.Cleanup(t.Context(), q)
	require.ErrorContains(t, err, "must not be shorter than Retention")
	got, _ = mustGet(t, s, newer.ID)
	require.True(t, got.Tombstone, "a refused Cleanup purges nothing")
}

// Late duplicates racing with the Cleanup that removes their operations:
// whatever the interleaving, every call gets the recorded outcome (the live
// operation or its tombstone), nothing is sent, and no operation comes back.
func testTombstoneRace(t *testing.T, h *Harness) {
	stores := []ledger.Store{h.Store}
	if h.OpenAnother != nil {
		stores = append(stores, h.OpenAnother(t))
	}
	s := h.Store
	const ops, rounds = 8, 5
	for round := range rounds {
		var was []ledger.Operation
		for i := range ops {
			was = append(was, settled(t, s, shortTTL(fmt.Sprintf("op-tomb-race-%d-%d", round, i)), ledger.StatusSucceeded))
		}
		now := cleanedAt.Add(time.Duration(round) * time.Hour)
		var (
			wg         sync.WaitGroup
			cleanupErr error
		)
		wg.Go(func() {
			p := cleanupAt(now)
			p.BatchSize = 3
			_, cleanupErr = stores[len(stores)-1].Cleanup(t.Context(), p)
		})
		results, errs := together(3*ops, func(i int) (ledger.BeginResult, error) {
			op := was[i%ops]
			if i%3 == 2 {
				got, created, err := stores[i%len(stores)].CreateOrGet(t.Context(), shortTTL(op.ID), now)
				return ledger.BeginResult{Op: got, Created: created}, err
			}
			return stores[i%len(stores)].Begin(t.Context(), beginParams(shortTTL(op.ID), racerOwner(i), now, true))
		})
		wg.Wait()
		require.NoError(t, cleanupErr)
		for i, res := range results {
			require.NoError(t, errs[i], "call %d", i)
			require.False(t, res.Created, "call %d recreated %s", i, res.Op.ID)
			require.False(t, res.Claimed, "call %d", i)
			require.Nil(t, res.Attempt, "call %d", i)
			require.Equal(t, ledger.StatusSucceeded, res.Op.Status, "call %d", i)
			require.Equal(t, "pi_"+res.Op.ID, res.Op.ProviderRef, "call %d: the recorded outcome", i)
		}
		// What a Begin held locked may have been skipped: clean up again.
		_, err := s.Cleanup(t.Context(), cleanupAt(now))
		require.NoError(t, err)
		requireNothingLive(t, s, now)
		for _, w := range was {
			got, atts := mustGet(t, s, w.ID)
			requireTombstone(t, w, now, got)
			require.Empty(t, atts)
		}
	}
}
