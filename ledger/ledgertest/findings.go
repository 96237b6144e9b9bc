package ledgertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// Audit findings: the differences an audit found between the ledger and a
// provider's records, kept as history (never changed by Cleanup, never
// changing an operation).

// The audited period of the suite's findings.
var (
	findingFrom = base.Add(-24 * time.Hour)
	findingTo   = base
)

// newFinding is a valid finding of provider and class about operation op
// and the provider's object ref (either may be empty, not both).
func newFinding(provider string, class ledger.FindingClass, op, ref string) ledger.NewFinding {
	return ledger.NewFinding{Provider: provider, Class: class, OperationID: op, ProviderRef: ref,
		Detail: fmt.Sprintf("%s: %s/%s differs", class, op, ref), PeriodFrom: findingFrom, PeriodTo: findingTo}
}

func mustRecordFindings(t *testing.T, s ledger.Store, now time.Time, fs ...ledger.NewFinding) {
	t.Helper()
	require.NoError(t, s.RecordFindings(t.Context(), fs, now), "RecordFindings")
}

func mustListFindings(t *testing.T, s ledger.Store, f ledger.FindingFilter) []ledger.Finding {
	t.Helper()
	got, err := s.ListFindings(t.Context(), f)
	require.NoError(t, err, "ListFindings %+v", f)
	require.NotNil(t, got, "ListFindings %+v: empty, not nil", f)
	return got
}

// allFindings reads every finding, ordered by ID.
func allFindings(t *testing.T, s ledger.Store) []ledger.Finding {
	t.Helper()
	return mustListFindings(t, s, ledger.FindingFilter{Limit: ledger.MaxLimit})
}

// requireFinding checks that got is the recorded form of nf, found times
// times, first at first and last at last, open.
func requireFinding(t *testing.T, nf ledger.NewFinding, times int, first, last time.Time, got ledger.Finding) {
	t.Helper()
	require.Positive(t, got.ID)
	want := ledger.Finding{ID: got.ID, Provider: nf.Provider, Class: nf.Class, OperationID: nf.OperationID, ProviderRef: nf.ProviderRef,
		Detail: nf.Detail, PeriodFrom: nf.PeriodFrom.UTC(), PeriodTo: nf.PeriodTo.UTC(), FirstFoundAt: first.UTC(), LastFoundAt: last.UTC(), Times: times}
	require.Equal(t, want, got)
}

func testFindingsRecordAndRefind(t *testing.T, h *Harness) {
	s := h.Store
	// A finding about an operation the ledger holds: recording it changes
	// nothing of the operation.
	mustCreate(t, s, NewOp("op-audited"), base)
	before, beforeAtts := mustGet(t, s, "op-audited")

	a := newFinding("stripe", ledger.FindingStatusDiffers, "op-audited", "pi_1")
	b := newFinding("stripe", ledger.FindingUnknownToLedger, "op-unknown", "")
	c := newFinding("adyen", ledger.FindingMissingAtProvider, "", "psp_2")
	// Times off UTC and below the microsecond are stored as every time is.
	t1 := at(time.Hour).In(time.FixedZone("X", 3600)).Add(500 * time.Nanosecond)
	mustRecordFindings(t, s, t1, a, b, c)
	got := allFindings(t, s)
	require.Len(t, got, 3)
	t1s := at(time.Hour)
	for i, nf := range []ledger.NewFinding{a, b, c} {
		requireFinding(t, nf, 1, t1s, t1s, got[i])
	}
	require.Less(t, got[0].ID, got[1].ID)
	require.Less(t, got[1].ID, got[2].ID)
	requireUnchanged(t, s, before, beforeAtts)

	// A later audit finds a again (with another detail and period) and a
	// new one: a is the same finding, found twice, first found still at t1.
	t2 := at(2 * time.Hour)
	a2 := a
	a2.Detail, a2.PeriodFrom, a2.PeriodTo = "status still differs", findingTo, findingTo.Add(time.Hour)
	d := newFinding("stripe", ledger.FindingDuplicated, "op-audited", "pi_2")
	mustRecordFindings(t, s, t2, d, a2)
	again := allFindings(t, s)
	require.Len(t, again, 4)
	requireFinding(t, a2, 2, t1s, t2, again[0])
	require.Equal(t, got[0].ID, again[0].ID, "the same difference is the same finding")
	require.Equal(t, got[1:], again[1:3], "findings not found again are unchanged")
	requireFinding(t, d, 1, t2, t2, again[3])

	// An empty batch is a no-op.
	require.NoError(t, s.RecordFindings(t.Context(), nil, at(3*time.Hour)))
	require.NoError(t, s.RecordFindings(t.Context(), []ledger.NewFinding{}, at(3*time.Hour)))
	require.Equal(t, again, allFindings(t, s))
	requireUnchanged(t, s, before, beforeAtts)
}

func testFindingsAck(t *testing.T, h *Harness) {
	s := h.Store
	a := newFinding("stripe", ledger.FindingContradicted, "op-1", "pi_1")
	b := newFinding("stripe", ledger.FindingContradicted, "op-2", "pi_2")
	mustRecordFindings(t, s, at(time.Hour), a, b)
	fs := allFindings(t, s)

	acked, err := s.AckFinding(t.Context(), ledger.AckFindingParams{ID: fs[0].ID, Actor: "alice", Note: "refunded the difference", Now: at(2 * time.Hour)})
	require.NoError(t, err)
	want := fs[0]
	want.AckedAt, want.AckedBy, want.AckNote = at(2*time.Hour), "alice", "refunded the difference"
	require.Equal(t, want, acked)
	require.Equal(t, []ledger.Finding{want, fs[1]}, allFindings(t, s), "the acknowledgement is stored; the other finding is untouched")
	require.Equal(t, []ledger.Finding{fs[1]}, mustListFindings(t, s, ledger.FindingFilter{Open: true}), "an acknowledged finding is not open")

	// A second acknowledgement returns the first, unchanged.
	again, err := s.AckFinding(t.Context(), ledger.AckFindingParams{ID: fs[0].ID, Actor: "bob", Note: "looked again", Now: at(3 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, want, again)

	// Found again after the acknowledgement: counted, still acknowledged.
	mustRecordFindings(t, s, at(4*time.Hour), a)
	refound := allFindings(t, s)[0]
	want.Times, want.LastFoundAt = 2, at(4*time.Hour)
	require.Equal(t, want, refound, "finding it again does not reopen it")
	require.Equal(t, []ledger.Finding{fs[1]}, mustListFindings(t, s, ledger.FindingFilter{Open: true}))

	// An unknown ID.
	_, err = s.AckFinding(t.Context(), ledger.AckFindingParams{ID: fs[1].ID + 1000, Actor: "alice", Note: "n", Now: at(5 * time.Hour)})
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.NotErrorIs(t, err, ledger.ErrInvalid)
}

func testFindingsFiltersAndPaging(t *testing.T, h *Harness) {
	s := h.Store
	var all []ledger.NewFinding
	for i := range 12 {
		all = append(all, newFinding([]string{"stripe", "adyen"}[i%2], ledger.FindingClasses[i%len(ledger.FindingClasses)],
			fmt.Sprintf("op-%d", i%4), fmt.Sprintf("ref-%02d", i)))
	}
	// Recorded in two audits, so that IDs are not one batch's order only.
	mustRecordFindings(t, s, at(time.Hour), all[:7]...)
	mustRecordFindings(t, s, at(2*time.Hour), all[7:]...)
	recorded := allFindings(t, s)
	require.Len(t, recorded, len(all))
	for _, i := range []int{1, 4, 6, 11} {
		_, err := s.AckFinding(t.Context(), ledger.AckFindingParams{ID: recorded[i].ID, Actor: "alice", Note: "known", Now: at(3 * time.Hour)})
		require.NoError(t, err)
	}
	recorded = allFindings(t, s)

	expect := func(f ledger.FindingFilter) []ledger.Finding {
		out := []ledger.Finding{}
		limit := f.Limit
		if limit == 0 {
			limit = ledger.DefaultListLimit
		}
		for _, r := range recorded {
			if (f.Provider == "" || r.Provider == f.Provider) && (f.Class == "" || r.Class == f.Class) &&
				(f.OperationID == "" || r.OperationID == f.OperationID) && (!f.Open || r.AckedAt.IsZero()) &&
				r.ID > f.AfterID && len(out) < limit {
				out = append(out, r)
			}
		}
		return out
	}
	filters := []ledger.FindingFilter{
		{},
		{Provider: "adyen"},
		{Class: ledger.FindingStatusDiffers},
		{OperationID: "op-2"},
		{Open: true},
		{Provider: "stripe", Open: true},
		{Provider: "stripe", Class: ledger.FindingUnknownToLedger, OperationID: "op-0"},
		{AfterID: recorded[5].ID},
		{AfterID: recorded[5].ID, Limit: 2, Open: true},
		{Limit: 3},
		{Provider: "nobody"},
		{AfterID: recorded[len(recorded)-1].ID},
	}
	for _, f := range filters {
		require.Equal(t, expect(f), mustListFindings(t, s, f), "ListFindings %+v", f)
	}
	// The expectations differ from one another (a test that cannot fail).
	require.Len(t, expect(filters[4]), 8)
	require.Len(t, expect(filters[1]), 6)
	require.Len(t, expect(filters[6]), 1)

	// Keyset paging walks the open findings once, in ID order.
	var paged []ledger.Finding
	var after int64
	for {
		page := mustListFindings(t, s, ledger.FindingFilter{Open: true, AfterID: after, Limit: 3})
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = page[len(page)-1].ID
	}
	require.Equal(t, expect(ledger.FindingFilter{Open: true}), paged)
}

func testFindingsDefaultLimit(t *testing.T, h *Harness) {
	s := h.Store
	var fs []ledger.NewFinding
	for i := range ledger.DefaultListLimit + 5 {
		fs = append(fs, newFinding("stripe", ledger.FindingMissingAtProvider, fmt.Sprintf("op-%03d", i), ""))
	}
	mustRecordFindings(t, s, at(time.Hour), fs...)
	require.Len(t, mustListFindings(t, s, ledger.FindingFilter{}), ledger.DefaultListLimit)
	require.Len(t, allFindings(t, s), ledger.DefaultListLimit+5)
}

func testFindingsStats(t *testing.T, h *Harness) {
	s := h.Store
	require.Equal(t, []ledger.FindingCount{}, mustStats(t, s, false).Findings, "none: empty, not nil")
	mustRecordFindings(t, s, at(time.Hour),
		newFinding("stripe", ledger.FindingStatusDiffers, "op-1", ""),
		newFinding("stripe", ledger.FindingStatusDiffers, "op-2", ""),
		newFinding("stripe", ledger.FindingStatusDiffers, "op-3", ""),
		newFinding("stripe", ledger.FindingUnknownToLedger, "op-4", ""),
		newFinding("adyen", ledger.FindingDuplicated, "op-5", "psp_5"),
		newFinding("adyen", ledger.FindingMissingAtProvider, "op-6", ""),
		newFinding("checkout", ledger.FindingContradicted, "op-7", ""),
	)
	byOp := map[string]int64{}
	for _, f := range allFindings(t, s) {
		byOp[f.OperationID] = f.ID
	}
	// Acknowledged: one of stripe's status_differs, and checkout's only one.
	for _, op := range []string{"op-2", "op-7"} {
		_, err := s.AckFinding(t.Context(), ledger.AckFindingParams{ID: byOp[op], Actor: "alice", Note: "known", Now: at(2 * time.Hour)})
		require.NoError(t, err)
	}
	// Found again: still one finding each.
	mustRecordFindings(t, s, at(3*time.Hour), newFinding("stripe", ledger.FindingStatusDiffers, "op-1", ""))
	// By provider, then class in the order of ledger.FindingClasses.
	want := []ledger.FindingCount{
		{Provider: "adyen", Class: ledger.FindingDuplicated, Open: 1},
		{Provider: "adyen", Class: ledger.FindingMissingAtProvider, Open: 1},
		{Provider: "stripe", Class: ledger.FindingUnknownToLedger, Open: 1},
		{Provider: "stripe", Class: ledger.FindingStatusDiffers, Open: 2},
	}
	require.Equal(t, want, mustStats(t, s, false).Findings)
	require.Equal(t, want, mustStats(t, s, true).Findings)
	// Findings are not operations: no open work is counted for them.
	require.Empty(t, mustStats(t, s, false).Open)
}

func testFindingsKeptByCleanup(t *testing.T, h *Harness) {
	s := h.Store
	finished(t, s, shortTTL("op-old"), ledger.StatusSucceeded, at(time.Minute))
	mustRecordFindings(t, s, at(time.Hour), newFinding("stripe", ledger.FindingStatusDiffers, "op-old", "pi_old"))
	fs := allFindings(t, s)
	_, err := s.AckFinding(t.Context(), ledger.AckFindingParams{ID: fs[0].ID, Actor: "alice", Note: "known", Now: at(2 * time.Hour)})
	require.NoError(t, err)
	fs = allFindings(t, s)
	// Everything Cleanup may purge is purged: the operation, its
	// tombstone, the feed and the inbox.
	rep, err := s.Cleanup(t.Context(), ledger.CleanupParams{Now: at(400 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: keyTTL,
		TombstoneRetention: 48 * time.Hour, FeedRetention: time.Hour, InboxRetention: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted)
	require.Equal(t, 1, rep.TombstonesPurged)
	require.Equal(t, fs, allFindings(t, s), "Cleanup keeps every finding, acknowledged or not")
}

func testInvalidFindings(t *testing.T, h *Harness) {
	s := h.Store
	ops := seedInvalid(t, s)
	// A finding already recorded, which every refused batch below would
	// find again: it must stay found once.
	kept := newFinding("stripe", ledger.FindingStatusDiffers, invDone, "pi_done")
	mustRecordFindings(t, s, at(time.Hour), kept)
	before := allFindings(t, s)
	now := at(2 * time.Hour)

	requireRefused := func(name, field string, err error) {
		t.Helper()
		require.ErrorIs(t, err, ledger.ErrInvalid, name)
		var ve *ledger.ValidationError
		require.ErrorAs(t, err, &ve, name)
		require.Equal(t, field, ve.Field, "%s: the error names the field", name)
		require.Equal(t, before, allFindings(t, s), "%s wrote findings", name)
		require.Equal(t, ops, snapshot(t, s), "%s changed the ledger", name)
	}
	edits := []struct {
		name, field string
		edit        func(f *ledger.NewFinding)
	}{
		{"empty Provider", "Provider", func(f *ledger.NewFinding) { f.Provider = "" }},
		{"oversized Provider", "Provider", func(f *ledger.NewFinding) { f.Provider = strings.Repeat("p", 257) }},
		{"empty Class", "Class", func(f *ledger.NewFinding) { f.Class = "" }},
		{"unknown Class", "Class", func(f *ledger.NewFinding) { f.Class = "unattributed" }},
		{"neither OperationID nor ProviderRef", "OperationID", func(f *ledger.NewFinding) { f.OperationID, f.ProviderRef = "", "" }},
		{"empty Detail", "Detail", func(f *ledger.NewFinding) { f.Detail = "" }},
		{"oversized Detail", "Detail", func(f *ledger.NewFinding) { f.Detail = strings.Repeat("d", ledger.MaxTextBytes+1) }},
		{"Detail not UTF-8", "Detail", func(f *ledger.NewFinding) { f.Detail = "amount \xff" }},
		{"OperationID with a NUL byte", "OperationID", func(f *ledger.NewFinding) { f.OperationID = "op\x00" }},
		{"zero PeriodFrom", "PeriodFrom", func(f *ledger.NewFinding) { f.PeriodFrom = time.Time{} }},
		{"zero PeriodTo", "PeriodTo", func(f *ledger.NewFinding) { f.PeriodTo = time.Time{} }},
		{"PeriodTo equal to PeriodFrom", "PeriodTo", func(f *ledger.NewFinding) { f.PeriodTo = f.PeriodFrom }},
		{"PeriodTo before PeriodFrom", "PeriodTo", func(f *ledger.NewFinding) { f.PeriodFrom, f.PeriodTo = f.PeriodTo, f.PeriodFrom }},
		{"PeriodTo within the microsecond of PeriodFrom", "PeriodTo", func(f *ledger.NewFinding) { f.PeriodTo = f.PeriodFrom.Add(time.Nanosecond) }},
	}
	for _, e := range edits {
		bad := newFinding("adyen", ledger.FindingDuplicated, "op-new", "psp_new")
		e.edit(&bad)
		// The invalid finding is the third of the batch: the valid ones
		// before it (one a finding found again) are not written either.
		batch := []ledger.NewFinding{kept, newFinding("adyen", ledger.FindingContradicted, "op-other", ""), bad}
		requireRefused(e.name, "fs[2]."+e.field, s.RecordFindings(t.Context(), batch, now))
	}
	requireRefused("zero now", "now", s.RecordFindings(t.Context(), []ledger.NewFinding{kept}, time.Time{}))
	requireRefused("a difference twice", "fs[1]", s.RecordFindings(t.Context(), []ledger.NewFinding{kept, kept}, now))
	var many []ledger.NewFinding
	for i := range ledger.MaxFindingsPerCall + 1 {
		many = append(many, newFinding("stripe", ledger.FindingMissingAtProvider, fmt.Sprintf("op-%d", i), ""))
	}
	requireRefused("too many findings", "fs", s.RecordFindings(t.Context(), many, now))
	// The limit itself is accepted.
	mustRecordFindings(t, s, now, many[:ledger.MaxFindingsPerCall]...)

	for _, c := range []struct {
		name, field string
		f           ledger.FindingFilter
	}{
		{"unknown Class", "Class", ledger.FindingFilter{Class: "bogus"}},
		{"negative AfterID", "AfterID", ledger.FindingFilter{AfterID: -1}},
		{"negative Limit", "Limit", ledger.FindingFilter{Limit: -1}},
		{"Limit above MaxLimit", "Limit", ledger.FindingFilter{Limit: ledger.MaxLimit + 1}},
	} {
		_, err := s.ListFindings(t.Context(), c.f)
		require.ErrorIs(t, err, ledger.ErrInvalid, c.name)
		var ve *ledger.ValidationError
		require.ErrorAs(t, err, &ve, c.name)
		require.Equal(t, c.field, ve.Field, c.name)
	}
	require.Len(t, mustListFindings(t, s, ledger.FindingFilter{Limit: ledger.MaxLimit}), ledger.MaxFindingsPerCall+1)

	id := before[0].ID
	valid := ledger.AckFindingParams{ID: id, Actor: "alice", Note: "known", Now: now}
	before = allFindings(t, s)
	for _, c := range []struct {
		name, field string
		edit        func(p *ledger.AckFindingParams)
	}{
		{"zero ID", "ID", func(p *ledger.AckFindingParams) { p.ID = 0 }},
		{"negative ID", "ID", func(p *ledger.AckFindingParams) { p.ID = -id }},
		{"empty Actor", "Actor", func(p *ledger.AckFindingParams) { p.Actor = "" }},
		{"oversized Actor", "Actor", func(p *ledger.AckFindingParams) { p.Actor = strings.Repeat("a", 257) }},
		{"empty Note", "Note", func(p *ledger.AckFindingParams) { p.Note = "" }},
		{"oversized Note", "Note", func(p *ledger.AckFindingParams) { p.Note = strings.Repeat("n", ledger.MaxTextBytes+1) }},
		{"Note not UTF-8", "Note", func(p *ledger.AckFindingParams) { p.Note = "\xff" }},
		{"zero Now", "Now", func(p *ledger.AckFindingParams) { p.Now = time.Time{} }},
	} {
		p := valid
		c.edit(&p)
		_, err := s.AckFinding(t.Context(), p)
		requireRefused(c.name, c.field, err)
	}
	got, err := s.AckFinding(t.Context(), valid)
	require.NoError(t, err, "the valid acknowledgement")
	require.Equal(t, "alice", got.AckedBy)
}
