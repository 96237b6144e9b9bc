package ledgertest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

func testList(t *testing.T, h *Harness) {
	s := h.Store
	type row struct {
		id, provider, kind string
		status             ledger.Status
	}
	var rows []row
	// Recorded in reverse ID order, so that insertion order is not ID order.
	for i := 11; i >= 0; i-- {
		r := row{id: fmt.Sprintf("op-%02d", i), provider: []string{"stripe", "adyen"}[i%2], kind: []string{"charge", "refund", "capture"}[i%3], status: ledger.StatusPending}
		op := newOpFor(r.id, r.provider, r.kind)
		if i%4 == 0 {
			r.status = ledger.StatusSucceeded
			mustStart(t, s, op, ownerA, base)
			mustFinish(t, s, ledger.FinishParams{ID: r.id, Owner: ownerA, Now: at(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded, Attempt: attemptOutcome(1, ledger.StatusSucceeded)})
		} else {
			mustCreate(t, s, op, base)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.id, b.id) })

	expect := func(f ledger.ListFilter) []string {
		var out []string
		for _, r := range rows {
			if (f.Status == "" || r.status == f.Status) && (f.Provider == "" || r.provider == f.Provider) &&
				(f.Kind == "" || r.kind == f.Kind) && r.id > f.AfterID && len(out) < ledgerdriver.ListLimit(f) {
				out = append(out, r.id)
			}
		}
		return out
	}
	for _, f := range []ledger.ListFilter{
		{},
		{Status: ledger.StatusPending},
		{Status: ledger.StatusSucceeded},
		{Status: ledger.StatusManualReview},
		{Provider: "adyen"},
		{Kind: "refund"},
		{Provider: "stripe", Kind: "charge"},
		{Status: ledger.StatusSucceeded, Provider: "stripe"},
		{Limit: 5},
		{AfterID: "op-05"},
		{AfterID: "op-05", Limit: 3, Provider: "stripe"},
		{AfterID: "op-11"},
		{Provider: "nobody"},
	} {
		ops, err := s.List(t.Context(), f)
		require.NoError(t, err, "List %+v", f)
		require.Equal(t, expect(f), ids(ops), "List %+v", f)
		for _, op := range ops {
			requireStored(t, s, op)
		}
	}

	// Keyset paging walks everything once, in order.
	var paged []string
	after := ""
	for {
		ops, err := s.List(t.Context(), ledger.ListFilter{AfterID: after, Limit: 5})
		require.NoError(t, err)
		require.LessOrEqual(t, len(ops), 5)
		if len(ops) == 0 {
			break
		}
		paged = append(paged, ids(ops)...)
		after = ops[len(ops)-1].ID
	}
	require.Equal(t, expect(ledger.ListFilter{}), paged)
}

// testListCreatedRange checks ListFilter.CreatedFrom and CreatedBefore:
// the range is [CreatedFrom, CreatedBefore), either bound alone, combined
// with the other filters and with keyset paging, a tombstone not listed.
func testListCreatedRange(t *testing.T, h *Harness) {
	s := h.Store
	type row struct {
		id, provider string
		created      time.Time
	}
	var rows []row
	// Creation order is not ID order: op-i is created at minute (7*i)%12,
	// so that a range of times is scattered over the IDs. A microsecond
	// after a minute tests the bounds' precision.
	for i := range 12 {
		r := row{id: fmt.Sprintf("cr-%02d", i), provider: []string{"stripe", "adyen"}[i%2],
			created: at(time.Duration((7*i)%12)*time.Minute + time.Duration(i%3)*time.Microsecond)}
		mustCreate(t, s, newOpFor(r.id, r.provider, "charge"), r.created)
		rows = append(rows, r)
	}
	// Created inside every range below, then cleaned up: its tombstone is
	// not listed.
	gone := shortTTL("cr-gone")
	finished(t, s, gone, ledger.StatusSucceeded, at(5*time.Minute))
	_, err := s.Cleanup(t.Context(), ledger.CleanupParams{Now: at(30 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: keyTTL})
	require.NoError(t, err)
	got, _ := mustGet(t, s, gone.ID)
	require.True(t, got.Tombstone)

	expect := func(f ledger.ListFilter) []string {
		var out []string
		for _, r := range rows {
			if (f.CreatedFrom.IsZero() || !r.created.Before(f.CreatedFrom)) &&
				(f.CreatedBefore.IsZero() || r.created.Before(f.CreatedBefore)) &&
				(f.Provider == "" || r.provider == f.Provider) && r.id > f.AfterID && len(out) < ledgerdriver.ListLimit(f) {
				out = append(out, r.id)
			}
		}
		return out
	}
	// The bounds: from is included, before excluded, to the microsecond
	// (cr-09 is created at from, cr-08 at before).
	from, before := at(3*time.Minute), at(8*time.Minute+2*time.Microsecond)
	cases := []ledger.ListFilter{
		{CreatedFrom: from},
		{CreatedBefore: before},
		{CreatedFrom: from, CreatedBefore: before},
		{CreatedFrom: from.Add(time.Microsecond), CreatedBefore: before.Add(time.Microsecond)},
		{CreatedFrom: from, CreatedBefore: from.Add(time.Microsecond)},
		{CreatedFrom: from, CreatedBefore: before, Provider: "adyen"},
		{CreatedFrom: from, CreatedBefore: before, Limit: 2},
		{CreatedFrom: from, CreatedBefore: before, AfterID: "cr-05"},
		{CreatedFrom: at(time.Hour)},
		{CreatedBefore: base},
	}
	for _, f := range cases {
		ops, err := s.List(t.Context(), f)
		require.NoError(t, err, "List %+v", f)
		require.Equal(t, expect(f), ids(ops), "List %+v", f)
	}
	// The expectations are not all alike (a test that cannot fail).
	require.Equal(t, []string{"cr-01", "cr-04", "cr-06", "cr-09", "cr-11"}, expect(cases[2]))
	require.Equal(t, []string{"cr-01", "cr-04", "cr-06", "cr-08", "cr-11"}, expect(cases[3]))
	require.Equal(t, []string{"cr-09"}, expect(cases[4]), "only the operation created at from")

	// Keyset paging through a range walks it once, in ID order.
	var paged []string
	after := ""
	for {
		ops, err := s.List(t.Context(), ledger.ListFilter{CreatedFrom: from, CreatedBefore: before, AfterID: after, Limit: 4})
		require.NoError(t, err)
		if len(ops) == 0 {
			break
		}
		paged = append(paged, ids(ops)...)
		after = ops[len(ops)-1].ID
	}
	require.Equal(t, expect(ledger.ListFilter{CreatedFrom: from, CreatedBefore: before}), paged)
}

func testListDefaultLimit(t *testing.T, h *Harness) {
	s := h.Store
	const total = ledger.DefaultListLimit + 5
	var all []string
	for i := range total {
		id := fmt.Sprintf("op-%03d", i)
		all = append(all, id)
		mustCreate(t, s, NewOp(id), base)
	}

	ops, err := s.List(t.Context(), ledger.ListFilter{})
	require.NoError(t, err)
	require.Equal(t, all[:ledger.DefaultListLimit], ids(ops), "Limit defaults to %d", ledger.DefaultListLimit)

	ops, err = s.List(t.Context(), ledger.ListFilter{Limit: total})
	require.NoError(t, err)
	require.Equal(t, all, ids(ops))

	ops, err = s.List(t.Context(), ledger.ListFilter{AfterID: all[ledger.DefaultListLimit-1]})
	require.NoError(t, err)
	require.Equal(t, all[ledger.DefaultListLimit:], ids(ops))
}

func testListReview(t *testing.T, h *Harness) {
	s := h.Store
	toReview := func(id, provider, kind, reason string, when time.Time) {
		op := newOpFor(id, provider, kind)
		mustBegin(t, s, beginParams(op, ownerA, when.Add(-time.Second), false))
		mustFinish(t, s, ledger.FinishParams{ID: id, Owner: ownerA, Now: when, From: ledger.StatusPending, To: ledger.StatusManualReview,
			ReviewCode: reviewCodeOf(reason), ReviewReason: reason})
	}
	// rv-3 enters before rv-2 at the same instant: ties are broken by ID.
	toReview("rv-3", "stripe", "refund", "window passed", at(time.Minute))
	toReview("rv-2", "adyen", "refund", "duplicate", at(time.Minute))
	toReview("rv-4", "stripe", "charge", "duplicate", at(2*time.Minute))
	toReview("rv-1", "stripe", "charge", "window passed", at(3*time.Minute))
	// Resolved: no longer in review.
	toReview("rv-5", "stripe", "charge", "window passed", at(30*time.Second))
	_, err := s.Resolve(t.Context(), ledger.ResolveParams{ID: "rv-5", Actor: "alice", Note: "refunded by hand", Outcome: ledger.ResolveFailed, Now: at(4 * time.Minute)})
	require.NoError(t, err)
	// Not in review at all.
	mustCreate(t, s, NewOp("rv-6"), base)
	reach(t, s, newOpFor("rv-7", "psp-rv-7", "charge"), ownerA, ledger.StatusSucceeded)

	for _, c := range []struct {
		f    ledger.ReviewFilter
		want []string
	}{
		{ledger.ReviewFilter{}, []string{"rv-2", "rv-3", "rv-4", "rv-1"}},
		{ledger.ReviewFilter{Provider: "stripe"}, []string{"rv-3", "rv-4", "rv-1"}},
		{ledger.ReviewFilter{Kind: "refund"}, []string{"rv-2", "rv-3"}},
		{ledger.ReviewFilter{Reason: "duplicate"}, []string{"rv-2", "rv-4"}},
		{ledger.ReviewFilter{Code: ledger.ReviewCodeDuplicated}, []string{"rv-2", "rv-4"}},
		{ledger.ReviewFilter{Provider: "stripe", Code: ledger.ReviewCodeWindowPassed}, []string{"rv-3", "rv-1"}},
		{ledger.ReviewFilter{Code: ledger.ReviewCodeProcessing}, nil},
		{ledger.ReviewFilter{EnteredBefore: at(2 * time.Minute)}, []string{"rv-2", "rv-3"}},
		{ledger.ReviewFilter{EnteredBefore: at(2*time.Minute + time.Second)}, []string{"rv-2", "rv-3", "rv-4"}},
		{ledger.ReviewFilter{Provider: "stripe", Reason: "window passed"}, []string{"rv-3", "rv-1"}},
		{ledger.ReviewFilter{Provider: "stripe", Kind: "charge", Reason: "duplicate", EnteredBefore: at(time.Hour)}, []string{"rv-4"}},
		{ledger.ReviewFilter{Limit: 2}, []string{"rv-2", "rv-3"}},
		{ledger.ReviewFilter{Provider: "nobody"}, nil},
	} {
		ops, err := s.ListReview(t.Context(), c.f)
		require.NoError(t, err, "ListReview %+v", c.f)
		if c.want == nil {
			require.Empty(t, ops, "ListReview %+v", c.f)
			continue
		}
		require.Equal(t, c.want, ids(ops), "ListReview %+v", c.f)
		for _, op := range ops {
			require.Equal(t, ledger.StatusManualReview, op.Status)
			requireStored(t, s, op)
		}
	}
	_, err = s.ListReview(t.Context(), ledger.ReviewFilter{Code: "window-passed"})
	require.ErrorIs(t, err, ledger.ErrInvalid, "an unknown review code is refused")
}
