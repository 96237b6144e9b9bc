package ledgertest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// Every invalid call below is made against a ledger holding one operation in
// each situation a careless store could damage, and must leave it as it was.
const (
	invInFlight = "op-inv-inflight" // in_flight, leased to ownerA until 5m
	invDue      = "op-inv-due"      // pending, due, nobody holds it
	invDone     = "op-inv-done"     // succeeded at 1s, deletable by a valid Cleanup
	invReview   = "op-inv-review"   // manual_review
	invNow      = 2 * time.Second   // when the calls are made (at(invNow))
)

func seedInvalid(t *testing.T, s ledger.Store) []record {
	t.Helper()
	mustStart(t, s, NewOp(invInFlight), ownerA, base)
	mustCreate(t, s, NewOp(invDue), base)
	finished(t, s, shortTTL(invDone), ledger.StatusSucceeded, at(time.Second))
	toReview(t, s, NewOp(invReview))
	return snapshot(t, s)
}

// requireInvalid checks that err is a validation error and that the ledger
// still reads as before.
func requireInvalid(t *testing.T, s ledger.Store, before []record, name string, err error) {
	t.Helper()
	require.ErrorIs(t, err, ledger.ErrInvalid, name)
	var ve *ledger.ValidationError
	require.ErrorAs(t, err, &ve, "%s: the error names the field", name)
	require.Equal(t, before, snapshot(t, s), "%s changed the ledger", name)
}

type edit[P any] struct {
	name string
	edit func(p *P)
}

// opEdits break one field of a NewOperation each.
func opEdits() []edit[ledger.NewOperation] {
	withRequest := func(p *ledger.NewOperation, req []byte) {
		p.Request, p.Fingerprint = req, fingerprintOf(req)
	}
	return []edit[ledger.NewOperation]{
		{"empty ID", func(p *ledger.NewOperation) { p.ID = "" }},
		{"empty Key", func(p *ledger.NewOperation) { p.Key = "" }},
		{"Key differs from ID at generation 0", func(p *ledger.NewOperation) { p.Key = p.ID + "-other" }},
		{"empty Provider", func(p *ledger.NewOperation) { p.Provider = "" }},
		{"empty Kind", func(p *ledger.NewOperation) { p.Kind = "" }},
		{"no References", func(p *ledger.NewOperation) { p.References = nil }},
		{"empty reference part", func(p *ledger.NewOperation) { p.References = []string{"order", ""} }},
		{"negative Generation", func(p *ledger.NewOperation) { p.Generation = -1 }},
		{"empty Fingerprint", func(p *ledger.NewOperation) { p.Fingerprint = "" }},
		{"empty Request", func(p *ledger.NewOperation) { withRequest(p, nil) }},
		{"oversized Request", func(p *ledger.NewOperation) {
			withRequest(p, []byte(`{"pad":"`+strings.Repeat("x", ledger.MaxRequestBytes)+`"}`))
		}},
		{"Request not UTF-8", func(p *ledger.NewOperation) { withRequest(p, []byte("{\"a\":\"\xff\"}")) }},
		{"zero KeyTTL", func(p *ledger.NewOperation) { p.KeyTTL = 0 }},
		{"negative KeyTTL", func(p *ledger.NewOperation) { p.KeyTTL = -time.Hour }},
	}
}

func leaseEdits[P any](owner func(*P) *string, now func(*P) *time.Time, until func(*P) *time.Time) []edit[P] {
	return []edit[P]{
		{"empty Owner", func(p *P) { *owner(p) = "" }},
		{"zero Now", func(p *P) { *now(p) = time.Time{} }},
		{"LeaseUntil equal to Now", func(p *P) { *until(p) = *now(p) }},
		{"LeaseUntil before Now", func(p *P) { *until(p) = now(p).Add(-time.Second) }},
		{"zero LeaseUntil", func(p *P) { *until(p) = time.Time{} }},
	}
}

// limitEdits break the Limit of a call or filter: negative, or above
// MaxLimit.
func limitEdits[P any](limit func(*P) *int) []edit[P] {
	return []edit[P]{
		{"negative Limit", func(p *P) { *limit(p) = -1 }},
		{"Limit above MaxLimit", func(p *P) { *limit(p) = ledger.MaxLimit + 1 }},
	}
}

// errOf is call as runInvalid makes it: only its error counts.
func errOf[P, R any](ctx context.Context, call func(context.Context, P) (R, error)) func(P) error {
	return func(p P) error {
		_, err := call(ctx, p)
		return err
	}
}

// runInvalid makes one call per edit of valid and requires each to be
// refused as invalid with nothing written; then the valid call succeeds, so
// each refusal is down to its edit.
func runInvalid[P any](t *testing.T, s ledger.Store, valid P, edits []edit[P], call func(p P) error) {
	t.Helper()
	before := snapshot(t, s)
	for _, e := range edits {
		p := valid
		e.edit(&p)
		requireInvalid(t, s, before, e.name, call(p))
	}
	require.NoError(t, call(valid), "the valid call")
}

func testInvalidBegin(t *testing.T, h *Harness) {
	s := h.Store
	seedInvalid(t, s)
	now := at(invNow)
	begin := errOf(t.Context(), s.Begin)

	var edits []edit[ledger.BeginParams]
	for _, e := range opEdits() {
		edits = append(edits, edit[ledger.BeginParams]{"new operation: " + e.name, func(p *ledger.BeginParams) { e.edit(&p.Op) }})
	}
	edits = append(edits, leaseEdits(
		func(p *ledger.BeginParams) *string { return &p.Owner },
		func(p *ledger.BeginParams) *time.Time { return &p.Now },
		func(p *ledger.BeginParams) *time.Time { return &p.LeaseUntil },
	)...)
	runInvalid(t, s, beginParams(NewOp("op-inv-new"), ownerB, now, true), edits, begin)

	// An existing operation is not claimed by an invalid call either.
	runInvalid(t, s, beginParams(NewOp(invDue), ownerB, now, true), leaseEdits(
		func(p *ledger.BeginParams) *string { return &p.Owner },
		func(p *ledger.BeginParams) *time.Time { return &p.Now },
		func(p *ledger.BeginParams) *time.Time { return &p.LeaseUntil },
	), begin)
}

func testInvalidCreateOrGet(t *testing.T, h *Harness) {
	s := h.Store
	before := seedInvalid(t, s)
	_, _, err := s.CreateOrGet(t.Context(), NewOp("op-inv-new"), time.Time{})
	requireInvalid(t, s, before, "zero now", err)

	runInvalid(t, s, NewOp("op-inv-new"), opEdits(), func(op ledger.NewOperation) error {
		_, _, err := s.CreateOrGet(t.Context(), op, at(invNow))
		return err
	})
}

func testInvalidGet(t *testing.T, h *Harness) {
	s := h.Store
	before := seedInvalid(t, s)
	_, _, err := s.Get(t.Context(), "")
	requireInvalid(t, s, before, "empty ID", err)
}

func testInvalidClaim(t *testing.T, h *Harness) {
	s := h.Store
	seedInvalid(t, s)
	now := at(invNow)
	edits := append([]edit[ledger.ClaimParams]{
		{"empty ID", func(p *ledger.ClaimParams) { p.ID = "" }},
	}, leaseEdits(
		func(p *ledger.ClaimParams) *string { return &p.Owner },
		func(p *ledger.ClaimParams) *time.Time { return &p.Now },
		func(p *ledger.ClaimParams) *time.Time { return &p.LeaseUntil },
	)...)
	runInvalid(t, s, ledger.ClaimParams{ID: invDue, Owner: ownerB, Now: now, LeaseUntil: now.Add(leaseFor)}, edits, errOf(t.Context(), s.Claim))
}

func testInvalidStartAttempt(t *testing.T, h *Harness) {
	s := h.Store
	seedInvalid(t, s)
	now := at(invNow)
	mustClaim(t, s, invDue, ownerA, now)
	edits := append([]edit[ledger.StartAttemptParams]{
		{"empty ID", func(p *ledger.StartAttemptParams) { p.ID = "" }},
	}, leaseEdits(
		func(p *ledger.StartAttemptParams) *string { return &p.Owner },
		func(p *ledger.StartAttemptParams) *time.Time { return &p.Now },
		func(p *ledger.StartAttemptParams) *time.Time { return &p.LeaseUntil },
	)...)
	runInvalid(t, s, ledger.StartAttemptParams{ID: invDue, Owner: ownerA, Now: now, LeaseUntil: now.Add(leaseFor)}, edits, func(p ledger.StartAttemptParams) error {
		_, _, err := s.StartAttempt(t.Context(), p)
		return err
	})
}

func testInvalidFinish(t *testing.T, h *Harness) {
	s := h.Store
	seedInvalid(t, s)
	valid := ledger.FinishParams{
		ID: invInFlight, Owner: ownerA, Now: at(invNow), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: attemptOutcome(1, ledger.StatusSucceeded), ProviderRef: "pi_1",
	}
	resolution := func(actor, note string, outcome ledger.ResolutionOutcome) *ledger.Resolution {
		return &ledger.Resolution{Actor: actor, Note: note, Outcome: outcome, At: at(invNow)}
	}
	edits := []edit[ledger.FinishParams]{
		{"empty ID", func(p *ledger.FinishParams) { p.ID = "" }},
		{"empty Owner", func(p *ledger.FinishParams) { p.Owner = "" }},
		{"zero Now", func(p *ledger.FinishParams) { p.Now = time.Time{} }},
		{"empty From", func(p *ledger.FinishParams) { p.From = "" }},
		{"unknown From", func(p *ledger.FinishParams) { p.From = "sending" }},
		{"empty To", func(p *ledger.FinishParams) { p.To = "" }},
		{"unknown To", func(p *ledger.FinishParams) { p.To = "done" }},
		{"in_flight without Attempt", func(p *ledger.FinishParams) { p.Attempt = nil }},
		{"Attempt when not in_flight", func(p *ledger.FinishParams) { p.From, p.To = ledger.StatusUnknown, ledger.StatusSucceeded }},
		{"Attempt.Number 0", func(p *ledger.FinishParams) {
			p.Attempt = &ledger.AttemptOutcome{Number: 0, Class: ledger.OutcomeSuccess}
		}},
		{"negative Attempt.Number", func(p *ledger.FinishParams) {
			p.Attempt = &ledger.AttemptOutcome{Number: -1, Class: ledger.OutcomeSuccess}
		}},
		{"empty Attempt.Class", func(p *ledger.FinishParams) { p.Attempt = &ledger.AttemptOutcome{Number: 1} }},
		{"unknown Attempt.Class", func(p *ledger.FinishParams) { p.Attempt = &ledger.AttemptOutcome{Number: 1, Class: "timeout"} }},
		{"oversized Attempt.Error", func(p *ledger.FinishParams) {
			p.Attempt = &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeRefused, Error: strings.Repeat("e", ledger.MaxTextBytes+1)}
		}},
		{"manual_review without ReviewReason", func(p *ledger.FinishParams) {
			p.To, p.ReviewCode = ledger.StatusManualReview, ledger.ReviewCodeOther
		}},
		{"manual_review without ReviewCode", func(p *ledger.FinishParams) { p.To, p.ReviewReason = ledger.StatusManualReview, "why" }},
		{"unknown ReviewCode", func(p *ledger.FinishParams) {
			p.To, p.ReviewCode, p.ReviewReason = ledger.StatusManualReview, "window-passed", "why"
		}},
		{"oversized ReviewReason", func(p *ledger.FinishParams) {
			p.To, p.ReviewReason = ledger.StatusManualReview, strings.Repeat("r", ledger.MaxTextBytes+1)
		}},
		{"Resolution without Actor", func(p *ledger.FinishParams) { p.Resolution = resolution("", "note", ledger.ResolveSucceeded) }},
		{"Resolution without Note", func(p *ledger.FinishParams) { p.Resolution = resolution("reconciler", "", ledger.ResolveSucceeded) }},
		{"Resolution with unknown Outcome", func(p *ledger.FinishParams) { p.Resolution = resolution("reconciler", "note", "maybe") }},
	}
	runInvalid(t, s, valid, edits, errOf(t.Context(), s.Finish))
}

func testInvalidClaimDue(t *testing.T, h *Harness) {
	s := h.Store
	seedInvalid(t, s)
	edits := slices.Concat([]edit[ledger.ClaimDueParams]{
		{"Limit 0", func(p *ledger.ClaimDueParams) { p.Limit = 0 }},
	}, limitEdits(func(p *ledger.ClaimDueParams) *int { return &p.Limit }), leaseEdits(
		func(p *ledger.ClaimDueParams) *string { return &p.Owner },
		func(p *ledger.ClaimDueParams) *time.Time { return &p.Now },
		func(p *ledger.ClaimDueParams) *time.Time { return &p.LeaseUntil },
	))
	valid := claimDue(ownerB, at(invNow), 10)
	valid.IncludeReview = true
	runInvalid(t, s, valid, edits, errOf(t.Context(), s.ClaimDue))
}

func testInvalidList(t *testing.T, h *Harness) {
	s := h.Store
	seedInvalid(t, s)
	edits := append(limitEdits(func(f *ledger.ListFilter) *int { return &f.Limit }),
		edit[ledger.ListFilter]{"unknown Status", func(f *ledger.ListFilter) { f.Status = "bogus" }},
		edit[ledger.ListFilter]{"CreatedBefore equal to CreatedFrom", func(f *ledger.ListFilter) { f.CreatedFrom, f.CreatedBefore = base, base }},
		edit[ledger.ListFilter]{"CreatedBefore before CreatedFrom", func(f *ledger.ListFilter) {
			f.CreatedFrom, f.CreatedBefore = at(time.Hour), base
		}})
	runInvalid(t, s, ledger.ListFilter{}, edits, errOf(t.Context(), s.List))
}

func testInvalidListReview(t *testing.T, h *Harness) {
	s := h.Store
	seedInvalid(t, s)
	runInvalid(t, s, ledger.ReviewFilter{}, limitEdits(func(f *ledger.ReviewFilter) *int { return &f.Limit }), errOf(t.Context(), s.ListReview))
}

func testInvalidResolve(t *testing.T, h *Harness) {
	s := h.Store
	seedInvalid(t, s)
	runInvalid(t, s, ledger.ResolveParams{ID: invReview, Actor: "alice", Note: "checked", Outcome: ledger.ResolveFailed, Now: at(time.Hour)}, []edit[ledger.ResolveParams]{
		{"empty ID", func(p *ledger.ResolveParams) { p.ID = "" }},
		{"empty Actor", func(p *ledger.ResolveParams) { p.Actor = "" }},
		{"empty Note", func(p *ledger.ResolveParams) { p.Note = "" }},
		{"oversized Actor", func(p *ledger.ResolveParams) { p.Actor = strings.Repeat("a", 257) }},
		{"oversized Note", func(p *ledger.ResolveParams) { p.Note = strings.Repeat("n", ledger.MaxTextBytes+1) }},
		{"zero Now", func(p *ledger.ResolveParams) { p.Now = time.Time{} }},
		{"empty Outcome", func(p *ledger.ResolveParams) { p.Outcome = "" }},
		{"unknown Outcome", func(p *ledger.ResolveParams) { p.Outcome = "refund" }},
		{"succeeded without ProviderRef", func(p *ledger.ResolveParams) { p.Outcome = ledger.ResolveSucceeded }},
		{"resend without NewKey", func(p *ledger.ResolveParams) { p.Outcome, p.NewGeneration = ledger.ResolveResend, 1 }},
		{"resend to generation 0", func(p *ledger.ResolveParams) { p.Outcome, p.NewKey = ledger.ResolveResend, invReview+"-g1" }},
		{"resend to a negative generation", func(p *ledger.ResolveParams) {
			p.Outcome, p.NewKey, p.NewGeneration = ledger.ResolveResend, invReview+"-g1", -1
		}},
	}, errOf(t.Context(), s.Resolve))
}

func testInvalidCleanup(t *testing.T, h *Harness) {
	s := h.Store
	seedInvalid(t, s)
	valid := ledger.CleanupParams{Now: at(30 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: keyTTL}
	runInvalid(t, s, valid, []edit[ledger.CleanupParams]{
		{"zero Now", func(p *ledger.CleanupParams) { p.Now = time.Time{} }},
		{"zero KeyTTL", func(p *ledger.CleanupParams) { p.KeyTTL = 0 }},
		{"negative KeyTTL", func(p *ledger.CleanupParams) { p.KeyTTL = -time.Hour }},
		{"negative BatchSize", func(p *ledger.CleanupParams) { p.BatchSize = -1 }},
		{"BatchSize above the maximum", func(p *ledger.CleanupParams) { p.BatchSize = ledger.MaxCleanupBatch + 1 }},
		{"negative TombstoneRetention", func(p *ledger.CleanupParams) { p.TombstoneRetention = -time.Hour }},
		{"TombstoneRetention shorter than Retention", func(p *ledger.CleanupParams) { p.TombstoneRetention = p.Retention - time.Second }},
		{"negative WebhookRedelivery", func(p *ledger.CleanupParams) { p.WebhookRedelivery = -time.Hour }},
		{"InboxRetention shorter than WebhookRedelivery", func(p *ledger.CleanupParams) {
			p.InboxRetention, p.WebhookRedelivery = 29*24*time.Hour, 30*24*time.Hour
		}},
		{"default InboxRetention shorter than WebhookRedelivery", func(p *ledger.CleanupParams) {
			p.WebhookRedelivery = ledger.DefaultInboxRetention + time.Second
		}},
	}, errOf(t.Context(), s.Cleanup))
	got, atts := mustGet(t, s, invDone)
	require.True(t, got.Tombstone, "the valid cleanup deletes the finished operation, leaving its tombstone")
	require.Empty(t, atts)
}
