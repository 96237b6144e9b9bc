package ledgertest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Audit entries (ledger.Event) are written by StartAttempt (its Events),
// Finish (its Events, then one EventResolution for its Resolution) and
// Resolve (one EventResolution), in the transaction of the change they
// document: numbered from 1 per operation, stamped with the call's Now, the
// actor defaulting to the lease owner. A call that fails writes none.

func mustEvents(t *testing.T, s ledger.Store, id string) []ledger.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), id)
	require.NoError(t, err, "Events %s", id)
	return evs
}

// wantEvent is an expected audit entry. When resolution is set, the entry
// was built by the store and its Detail must be a JSON object holding at
// least these fields (numbers as float64); otherwise Detail is compared as is.
type wantEvent struct {
	ledger.Event
	resolution map[string]any
}

func event(id string, seq int, at time.Time, kind ledger.EventKind, actor, detail string) wantEvent {
	return wantEvent{Event: ledger.Event{OperationID: id, Seq: seq, At: at, Kind: kind, Actor: actor, Detail: detail}}
}

func resolutionEvent(id string, seq int, at time.Time, actor string, fields map[string]any) wantEvent {
	return wantEvent{Event: ledger.Event{OperationID: id, Seq: seq, At: at, Kind: ledger.EventResolution, Actor: actor}, resolution: fields}
}

// requireEvents checks the audit entries of operation id, in order.
func requireEvents(t *testing.T, s ledger.Store, id string, want ...wantEvent) {
	t.Helper()
	got := mustEvents(t, s, id)
	require.Len(t, got, len(want), "events of %s: %+v", id, got)
	for i, w := range want {
		g := got[i]
		if w.resolution != nil {
			var fields map[string]any
			require.NoError(t, json.Unmarshal([]byte(g.Detail), &fields), "event %d of %s: the Detail of a resolution is a JSON object: %q", g.Seq, id, g.Detail)
			for k, v := range w.resolution {
				require.Equal(t, v, fields[k], "event %d of %s: Detail field %q in %s", g.Seq, id, k, g.Detail)
			}
			g.Detail = ""
		}
		g.At = ledgerdriver.UTC(g.At)
		w.At = ledgerdriver.UTC(w.At)
		require.Equal(t, w.Event, g, "event %d of %s", i+1, id)
	}
}

func testEventsNone(t *testing.T, h *Harness) {
	s := h.Store
	// Every call but StartAttempt, Finish and Resolve records nothing, and
	// those record nothing unless asked (or settling a review).
	mustCreate(t, s, NewOp("op-ev-none-created"), base)
	for _, st := range ledger.Statuses {
		reach(t, s, newOpFor("op-ev-none-"+string(st), "psp-ev-none-"+string(st), "charge"), ownerA, st)
	}
	mustClaim(t, s, "op-ev-none-created", ownerB, at(time.Second))
	mustClaimDue(t, s, claimDue(ownerB, at(time.Hour), 100))
	all := snapshot(t, s)
	require.Len(t, all, len(ledger.Statuses)+1)
	for _, r := range all {
		require.Empty(t, r.Events, "events of %s", r.Op.ID)
	}
}

func testEventsStartAttemptAndFinish(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-ev-flow")
	mustBegin(t, s, beginParams(op, ownerA, base, false))

	t1 := at(time.Second)
	got, att, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{
		ID: op.ID, Owner: ownerA, Now: t1, LeaseUntil: t1.Add(leaseFor),
		Events: []ledger.NewEvent{
			{Kind: ledger.EventLookup, Detail: `{"found":false}`},
			{Kind: ledger.EventNote, Actor: "scheduler", Detail: "résumé: resend inside the key window ✓"},
		},
	})
	require.NoError(t, err)
	require.Equal(t, 1, att.Number)
	require.Equal(t, ledger.StatusInFlight, got.Status)
	requireEvents(t, s, op.ID,
		event(op.ID, 1, t1, ledger.EventLookup, ownerA, `{"found":false}`),
		event(op.ID, 2, t1, ledger.EventNote, "scheduler", "résumé: resend inside the key window ✓"),
	)

	t2 := at(2 * time.Second)
	mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: t2, From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: attemptOutcome(1, ledger.StatusUnknown), KeepLease: true,
		Events: []ledger.NewEvent{{Kind: ledger.EventNote, Detail: "timeout after 30s"}},
	})
	t3 := at(3 * time.Second)
	got = mustFinish(t, s, ledger.FinishParams{
		ID: op.ID, Owner: ownerA, Now: t3, From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_1",
		Events: []ledger.NewEvent{{Kind: ledger.EventLookup, Actor: "reconciler-1", Detail: `{"status":"succeeded"}`}, {Kind: ledger.EventNote}},
	})
	require.Equal(t, "pi_1", got.ProviderRef)
	requireStored(t, s, got)
	requireEvents(t, s, op.ID,
		event(op.ID, 1, t1, ledger.EventLookup, ownerA, `{"found":false}`),
		event(op.ID, 2, t1, ledger.EventNote, "scheduler", "résumé: resend inside the key window ✓"),
		event(op.ID, 3, t2, ledger.EventNote, ownerA, "timeout after 30s"),
		event(op.ID, 4, t3, ledger.EventLookup, "reconciler-1", `{"status":"succeeded"}`),
		event(op.ID, 5, t3, ledger.EventNote, ownerA, ""),
	)
}

func testEventsFinishWithResolution(t *testing.T, h *Harness) {
	s := h.Store
	t.Run("succeeded_after_lookup", func(t *testing.T) {
		t.Parallel()
		op, hd := reachOwn(t, s, "ev-settled", ledger.StatusManualReview)
		note := `provider reports "succeeded" <after> the window & more`
		got := mustFinish(t, s, ledger.FinishParams{
			ID: op.ID, Owner: ownerA, Now: hd.now, From: ledger.StatusManualReview, To: ledger.StatusSucceeded,
			ProviderRef: "pi_found",
			Resolution:  &ledger.Resolution{Actor: "reconciler", Note: note, Outcome: ledger.ResolveSucceeded, At: hd.now},
			Events:      []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: `{"status":"succeeded","id":"pi_found"}`}},
		})
		requireStored(t, s, got)
		// The lookup that found the answer, then the settlement it led to.
		requireEvents(t, s, op.ID,
			event(op.ID, 1, hd.now, ledger.EventLookup, ownerA, `{"status":"succeeded","id":"pi_found"}`),
			resolutionEvent(op.ID, 2, hd.now, "reconciler", map[string]any{"outcome": "succeeded", "note": note, "provider_ref": "pi_found"}),
		)
	})
	t.Run("failed_without_events", func(t *testing.T) {
		t.Parallel()
		op, hd := reachOwn(t, s, "ev-settled-ko", ledger.StatusManualReview)
		mustFinish(t, s, ledger.FinishParams{
			ID: op.ID, Owner: ownerA, Now: hd.now, From: ledger.StatusManualReview, To: ledger.StatusFailed,
			Resolution: &ledger.Resolution{Actor: "reconciler", Note: "provider reports the charge failed", Outcome: ledger.ResolveFailed},
		})
		requireEvents(t, s, op.ID,
			resolutionEvent(op.ID, 1, hd.now, "reconciler", map[string]any{"outcome": "failed", "note": "provider reports the charge failed"}),
		)
	})
}

func testEventsResolve(t *testing.T, h *Harness) {
	s := h.Store
	now := at(time.Hour)
	t.Run("succeeded", func(t *testing.T) {
		t.Parallel()
		op := NewOp("op-ev-res-ok")
		toReview(t, s, op)
		mustResolve(t, s, ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "found in the dashboard", Outcome: ledger.ResolveSucceeded, ProviderRef: "pi_manual", Now: now})
		requireEvents(t, s, op.ID,
			resolutionEvent(op.ID, 1, now, "alice", map[string]any{"outcome": "succeeded", "note": "found in the dashboard", "provider_ref": "pi_manual"}),
		)
	})
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		op := NewOp("op-ev-res-ko")
		toReview(t, s, op)
		mustResolve(t, s, ledger.ResolveParams{ID: op.ID, Actor: "bob", Note: "no such charge", Outcome: ledger.ResolveFailed, Now: now})
		requireEvents(t, s, op.ID,
			resolutionEvent(op.ID, 1, now, "bob", map[string]any{"outcome": "failed", "note": "no such charge"}),
		)
	})
	t.Run("resend_then_review_again", func(t *testing.T) {
		t.Parallel()
		op := NewOp("op-ev-res-resend")
		toReview(t, s, op)
		newKey := op.ID + "-g1"
		mustResolve(t, s, ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "provider never saw it", Outcome: ledger.ResolveResend, NewKey: newKey, NewGeneration: 1, Now: now})
		first := resolutionEvent(op.ID, 1, now, "alice", map[string]any{"outcome": "resend", "note": "provider never saw it", "new_key": newKey, "new_generation": float64(1)})
		requireEvents(t, s, op.ID, first)

		// The numbering goes on through later calls.
		t2 := at(2 * time.Hour)
		mustClaim(t, s, op.ID, ownerB, t2)
		_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{
			ID: op.ID, Owner: ownerB, Now: t2, LeaseUntil: t2.Add(leaseFor),
			Events: []ledger.NewEvent{{Kind: ledger.EventNote, Detail: "resend approved by alice"}},
		})
		require.NoError(t, err)
		mustFinish(t, s, ledger.FinishParams{
			ID: op.ID, Owner: ownerB, Now: t2.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusManualReview,
			Attempt: attemptOutcome(2, ledger.StatusUnknown), ReviewCode: ledger.ReviewCodeWindowPassed, ReviewReason: "window passed again",
		})
		t3 := at(3 * time.Hour)
		mustResolve(t, s, ledger.ResolveParams{ID: op.ID, Actor: "carol", Note: "charge found", Outcome: ledger.ResolveSucceeded, ProviderRef: "pi_g1", Now: t3})
		requireEvents(t, s, op.ID,
			first,
			event(op.ID, 2, t2, ledger.EventNote, ownerB, "resend approved by alice"),
			resolutionEvent(op.ID, 3, t3, "carol", map[string]any{"outcome": "succeeded", "note": "charge found", "provider_ref": "pi_g1"}),
		)
	})
}

func testEventsNotWrittenOnFailure(t *testing.T, h *Harness) {
	s := h.Store
	evs := []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: "must not be written"}}
	resolution := &ledger.Resolution{Actor: "reconciler", Note: "must not be written", Outcome: ledger.ResolveSucceeded}

	// In flight under ownerA, with one event already.
	op := NewOp("op-ev-fail")
	mustBegin(t, s, beginParams(op, ownerA, base, false))
	_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: op.ID, Owner: ownerA, Now: at(time.Second), LeaseUntil: at(leaseFor),
		Events: []ledger.NewEvent{{Kind: ledger.EventNote, Detail: "first"}}})
	require.NoError(t, err)
	// In review, for the Resolve failures.
	review := NewOp("op-ev-fail-review")
	toReview(t, s, review)
	taken := NewOp("op-ev-fail-taken")
	mustCreate(t, s, taken, base)
	before := snapshot(t, s)

	now := at(2 * time.Second)
	start := func(id, owner string) func() error {
		return func() error {
			_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: id, Owner: owner, Now: now, LeaseUntil: now.Add(leaseFor), Events: evs})
			return err
		}
	}
	finish := func(p ledger.FinishParams) func() error {
		return func() error {
			p.Now, p.Events = now, evs
			_, err := s.Finish(t.Context(), p)
			return err
		}
	}
	resolve := func(p ledger.ResolveParams) func() error {
		return func() error {
			p.Actor, p.Note, p.Now = "alice", "must not be written", now
			_, err := s.Resolve(t.Context(), p)
			return err
		}
	}
	for _, c := range []struct {
		name string
		want error
		call func() error
	}{
		{"StartAttempt by another owner", ledger.ErrLeaseLost, start(op.ID, ownerB)},
		{"StartAttempt while in flight", ledger.ErrStateConflict, start(op.ID, ownerA)},
		{"StartAttempt on a missing operation", ledger.ErrNotFound, start("op-ev-missing", ownerA)},
		{"Finish by another owner", ledger.ErrLeaseLost, finish(ledger.FinishParams{ID: op.ID, Owner: ownerB, From: ledger.StatusInFlight, To: ledger.StatusSucceeded, Attempt: attemptOutcome(1, ledger.StatusSucceeded)})},
		{"Finish from the wrong status", ledger.ErrStateConflict, finish(ledger.FinishParams{ID: op.ID, Owner: ownerA, From: ledger.StatusUnknown, To: ledger.StatusSucceeded})},
		{"Finish with a Resolution from the wrong status", ledger.ErrStateConflict, finish(ledger.FinishParams{ID: op.ID, Owner: ownerA, From: ledger.StatusManualReview, To: ledger.StatusSucceeded, Resolution: resolution})},
		{"Finish of an attempt that is not the latest", ledger.ErrStateConflict, finish(ledger.FinishParams{ID: op.ID, Owner: ownerA, From: ledger.StatusInFlight, To: ledger.StatusSucceeded, Attempt: attemptOutcome(2, ledger.StatusSucceeded)})},
		{"Finish of an illegal transition", ledger.ErrStateConflict, finish(ledger.FinishParams{ID: op.ID, Owner: ownerA, From: ledger.StatusInFlight, To: ledger.StatusInFlight, Attempt: attemptOutcome(1, ledger.StatusUnknown)})},
		{"Finish on a missing operation", ledger.ErrNotFound, finish(ledger.FinishParams{ID: "op-ev-missing", Owner: ownerA, From: ledger.StatusPending, To: ledger.StatusFailed})},
		{"Resolve not in review", ledger.ErrNotInReview, resolve(ledger.ResolveParams{ID: op.ID, Outcome: ledger.ResolveFailed})},
		{"Resolve resend to a wrong generation", ledger.ErrStateConflict, resolve(ledger.ResolveParams{ID: review.ID, Outcome: ledger.ResolveResend, NewKey: review.ID + "-g2", NewGeneration: 2})},
		{"Resolve resend to a key in use", ledger.ErrKeyConflict, resolve(ledger.ResolveParams{ID: review.ID, Outcome: ledger.ResolveResend, NewKey: taken.Key, NewGeneration: 1})},
		{"Resolve on a missing operation", ledger.ErrNotFound, resolve(ledger.ResolveParams{ID: "op-ev-missing", Outcome: ledger.ResolveFailed})},
	} {
		require.ErrorIs(t, c.call(), c.want, c.name)
		require.Equal(t, before, snapshot(t, s), "%s wrote something", c.name)
	}
}

// eventEdits break the events of a call, each in one way.
func eventEdits[P any](events func(*P) *[]ledger.NewEvent) []edit[P] {
	valid := ledger.NewEvent{Kind: ledger.EventNote, Detail: "fine"}
	set := func(evs ...ledger.NewEvent) func(*P) {
		return func(p *P) { *events(p) = evs }
	}
	tooMany := make([]ledger.NewEvent, ledger.MaxEventsPerCall+1)
	for i := range tooMany {
		tooMany[i] = valid
	}
	return []edit[P]{
		{"event without Kind", set(ledger.NewEvent{Detail: "no kind"})},
		{"event of an unknown Kind", set(ledger.NewEvent{Kind: "audit", Detail: "unknown kind"})},
		{"valid event then an unknown Kind", set(valid, ledger.NewEvent{Kind: "bogus"})},
		{"oversized Detail", set(ledger.NewEvent{Kind: ledger.EventLookup, Detail: strings.Repeat("d", ledger.MaxTextBytes+1)})},
		{"oversized Actor", set(ledger.NewEvent{Kind: ledger.EventNote, Actor: strings.Repeat("a", 257)})},
		{"Detail not UTF-8", set(ledger.NewEvent{Kind: ledger.EventNote, Detail: "bad \xff byte"})},
		{"Actor with a NUL byte", set(ledger.NewEvent{Kind: ledger.EventNote, Actor: "a\x00b"})},
		{"too many events", set(tooMany...)},
	}
}

func testEventsInvalid(t *testing.T, h *Harness) {
	s := h.Store
	before := seedInvalid(t, s)
	_, err := s.Events(t.Context(), "")
	requireInvalid(t, s, before, "Events with an empty ID", err)

	now := at(invNow)
	evs := []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: "not found"}}
	mustClaim(t, s, invDue, ownerA, now)
	runInvalid(t, s, ledger.StartAttemptParams{ID: invDue, Owner: ownerA, Now: now, LeaseUntil: now.Add(leaseFor), Events: evs},
		eventEdits(func(p *ledger.StartAttemptParams) *[]ledger.NewEvent { return &p.Events }),
		func(p ledger.StartAttemptParams) error { _, _, err := s.StartAttempt(t.Context(), p); return err })
	requireEvents(t, s, invDue, event(invDue, 1, now, ledger.EventLookup, ownerA, "not found"))

	runInvalid(t, s, ledger.FinishParams{
		ID: invInFlight, Owner: ownerA, Now: now, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: attemptOutcome(1, ledger.StatusSucceeded), ProviderRef: "pi_1", Events: evs,
	}, eventEdits(func(p *ledger.FinishParams) *[]ledger.NewEvent { return &p.Events }),
		func(p ledger.FinishParams) error { _, err := s.Finish(t.Context(), p); return err })
	requireEvents(t, s, invInFlight, event(invInFlight, 1, now, ledger.EventLookup, ownerA, "not found"))
}

func testEventsLimits(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-ev-limits")
	mustBegin(t, s, beginParams(op, ownerA, base, false))
	kinds := []ledger.EventKind{ledger.EventLookup, ledger.EventResolution, ledger.EventNote}
	var evs []ledger.NewEvent
	var want []wantEvent
	now := at(time.Second)
	for i := range ledger.MaxEventsPerCall {
		// The largest values allowed, in multi-byte text.
		detail := fmt.Sprintf("%02d", i) + strings.Repeat("é", (ledger.MaxTextBytes-2)/2)
		actor := fmt.Sprintf("%02d", i) + strings.Repeat("ø", 127)
		require.Len(t, detail, ledger.MaxTextBytes)
		require.Len(t, actor, 256)
		e := ledger.NewEvent{Kind: kinds[i%len(kinds)], Actor: actor, Detail: detail}
		evs = append(evs, e)
		want = append(want, event(op.ID, i+1, now, e.Kind, actor, detail))
	}
	_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: op.ID, Owner: ownerA, Now: now, LeaseUntil: now.Add(leaseFor), Events: evs})
	require.NoError(t, err)
	requireEvents(t, s, op.ID, want...)
}

func testEventsMissing(t *testing.T, h *Harness) {
	s := h.Store
	mustCreate(t, s, NewOp("op-ev-present"), base)
	_, err := s.Events(t.Context(), "op-ev-missing")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.Empty(t, mustEvents(t, s, "op-ev-present"))
}

func testEventsCleanup(t *testing.T, h *Harness) {
	s := h.Store
	// withEvents records op, sends it at start with two events and finishes
	// it as succeeded a minute later with one more.
	withEvents := func(op ledger.NewOperation, start time.Time) {
		t.Helper()
		mustBegin(t, s, beginParams(op, ownerA, start, false))
		_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: op.ID, Owner: ownerA, Now: start, LeaseUntil: start.Add(leaseFor),
			Events: []ledger.NewEvent{{Kind: ledger.EventNote, Detail: "a"}, {Kind: ledger.EventNote, Detail: "b"}}})
		require.NoError(t, err)
		mustFinish(t, s, ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: start.Add(time.Minute), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
			Attempt: attemptOutcome(1, ledger.StatusSucceeded), Events: []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: "c"}}})
	}
	old := shortTTL("op-ev-clean-old")
	withEvents(old, base)
	recent := shortTTL("op-ev-clean-recent")
	withEvents(recent, at(70*time.Hour))
	live := newOpFor("op-ev-clean-review", "psp-ev-clean", "charge")
	toReview(t, s, live)
	mustResolve(t, s, ledger.ResolveParams{ID: live.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend, NewKey: live.ID + "-g1", NewGeneration: 1, Now: at(time.Hour)})
	var kept []record
	for _, r := range snapshot(t, s) {
		if r.Op.ID != old.ID {
			require.NotEmpty(t, r.Events, r.Op.ID)
			kept = append(kept, r)
		}
	}

	rep, err := s.Cleanup(t.Context(), ledger.CleanupParams{Now: at(72 * time.Hour), Retention: 48 * time.Hour, KeyTTL: keyTTL})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted)
	require.Empty(t, mustEvents(t, s, old.ID), "the events went with their operation; its tombstone has none")
	require.Equal(t, kept, snapshot(t, s), "the other operations keep their events")

	// Once the tombstone is gone too, the same ID recorded afresh numbers its
	// events from 1 again: nothing of the deleted operation's audit trail
	// is left.
	rep, err = s.Cleanup(t.Context(), ledger.CleanupParams{Now: at(72 * time.Hour), Retention: 48 * time.Hour, KeyTTL: keyTTL, TombstoneRetention: 48 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, rep.TombstonesPurged)
	_, err = s.Events(t.Context(), old.ID)
	require.ErrorIs(t, err, ledger.ErrNotFound)
	now := at(73 * time.Hour)
	mustBegin(t, s, beginParams(old, ownerB, now, false))
	_, _, err = s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: old.ID, Owner: ownerB, Now: now, LeaseUntil: now.Add(leaseFor),
		Events: []ledger.NewEvent{{Kind: ledger.EventNote, Detail: "new life"}}})
	require.NoError(t, err)
	requireEvents(t, s, old.ID, event(old.ID, 1, now, ledger.EventNote, ownerB, "new life"))
}

func testEventsConcurrent(t *testing.T, h *Harness) { eventsConcurrent(t, storesOf(t, h, false)) }
func testEventsConcurrentTwoStores(t *testing.T, h *Harness) {
	eventsConcurrent(t, storesOf(t, h, true))
}

// eventsConcurrent has racers (sharing the lease owner, so that every call
// is allowed) record one event each on one operation at once: each event is
// numbered once, with no gap.
func eventsConcurrent(t *testing.T, stores []ledger.Store) {
	const racers = 20
	op := NewOp("op-ev-race")
	hd := reach(t, stores[0], op, ownerA, ledger.StatusUnknown)
	_, errs := together(racers, func(i int) (ledger.Operation, error) {
		return stores[i%len(stores)].Finish(t.Context(), ledger.FinishParams{
			ID: op.ID, Owner: ownerA, Now: hd.now, From: ledger.StatusUnknown, To: ledger.StatusUnknown, KeepLease: true,
			Events: []ledger.NewEvent{{Kind: ledger.EventLookup, Actor: racerOwner(i), Detail: "still processing"}},
		})
	})
	for i, err := range errs {
		require.NoError(t, err, "racer %d", i)
	}
	evs := mustEvents(t, stores[0], op.ID)
	require.Len(t, evs, racers)
	actors := map[string]bool{}
	for i, e := range evs {
		require.Equal(t, i+1, e.Seq, "events are numbered 1..%d", racers)
		actors[e.Actor] = true
	}
	require.Len(t, actors, racers, "every racer's event is there once")
}

func testEventsCorrupt(t *testing.T, h *Harness) {
	if h.SetRawEventKind == nil {
		t.Skip("Harness.SetRawEventKind is nil")
	}
	s := h.Store
	bad := NewOp("op-ev-corrupt")
	fine := NewOp("op-ev-fine")
	for _, op := range []ledger.NewOperation{bad, fine} {
		mustBegin(t, s, beginParams(op, ownerA, base, false))
		_, _, err := s.StartAttempt(t.Context(), ledger.StartAttemptParams{ID: op.ID, Owner: ownerA, Now: base, LeaseUntil: at(leaseFor),
			Events: []ledger.NewEvent{{Kind: ledger.EventNote, Detail: "one"}, {Kind: ledger.EventNote, Detail: "two"}}})
		require.NoError(t, err)
	}
	h.SetRawEventKind(t, bad.ID, 2, "exploded")

	var err error
	require.NotPanics(t, func() { _, err = s.Events(t.Context(), bad.ID) })
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	require.ErrorContains(t, err, "exploded")
	// The operation itself, and the other operation's events, still read.
	mustGet(t, s, bad.ID)
	require.Len(t, mustEvents(t, s, fine.ID), 2)
}
