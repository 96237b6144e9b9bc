package ledgertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// testReviewCodes: every review code is stored as such beside its reason,
// and read back from every place that shows a review: Get, ListReview (and
// its Code filter), the feed entry into review and Stats. A later move
// within review replaces both; resolving keeps them as history. An unknown
// code writes nothing.
func testReviewCodes(t *testing.T, h *Harness) {
	s := h.Store
	ctx := t.Context()
	ids := make([]string, len(ledger.ReviewCodes))
	for i, code := range ledger.ReviewCodes {
		op := NewOp(fmt.Sprintf("rc-%d", i))
		ids[i] = op.ID
		mustBegin(t, s, beginParams(op, ownerA, at(0), false))
		reason := "because " + string(code)
		p := ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: at(time.Duration(i+1) * time.Second),
			From: ledger.StatusPending, To: ledger.StatusManualReview, ReviewCode: code, ReviewReason: reason}
		if i == 0 {
			p.NextCheckAt = at(30 * time.Second) // still wants lookups
		}
		got := mustFinish(t, s, p)
		require.Equal(t, code, got.ReviewCode, "Finish returns the code it wrote")
		stored, _ := mustGet(t, s, op.ID)
		require.Equal(t, code, stored.ReviewCode, "Get reads the code back")
		require.Equal(t, reason, stored.ReviewReason, "and the reason beside it")

		listed, err := s.ListReview(ctx, ledger.ReviewFilter{Code: code})
		require.NoError(t, err)
		require.Len(t, listed, 1, "ListReview by code %s", code)
		require.Equal(t, op.ID, listed[0].ID)
		require.Equal(t, code, listed[0].ReviewCode)
	}

	entries := feedWait(t, s, "", 100, 2*len(ledger.ReviewCodes))
	var codes []ledger.ReviewCode
	for _, e := range entries {
		if e.To == ledger.StatusManualReview {
			codes = append(codes, e.ReviewCode)
			require.Equal(t, "because "+string(e.ReviewCode), e.ReviewReason)
		} else {
			require.Empty(t, e.ReviewCode, "only an entry into review has a code")
		}
	}
	require.Equal(t, ledger.ReviewCodes, codes, "each feed entry into review carries its code")

	st := mustStats(t, s, false)
	require.Len(t, st.Reviews, len(ledger.ReviewCodes))
	for _, rc := range st.Reviews {
		require.Equal(t, "because "+string(rc.Code), rc.Reason, "Stats counts by code and reason")
		require.EqualValues(t, 1, rc.Count)
	}

	// A move within review (a lookup that found a second object) replaces
	// code and reason together.
	mustClaimDueReview(t, s, ids[0])
	moved := mustFinish(t, s, ledger.FinishParams{ID: ids[0], Owner: ownerB, Now: at(time.Minute), From: ledger.StatusManualReview,
		To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeDuplicated, ReviewReason: "two objects"})
	require.Equal(t, ledger.ReviewCodeDuplicated, moved.ReviewCode)
	stored, _ := mustGet(t, s, ids[0])
	require.Equal(t, ledger.ReviewCodeDuplicated, stored.ReviewCode)
	require.Equal(t, "two objects", stored.ReviewReason)

	// An unknown code is refused and writes nothing.
	before, _ := mustGet(t, s, ids[1])
	_, err := s.Finish(ctx, ledger.FinishParams{ID: ids[1], Owner: ownerA, Now: at(time.Hour), From: ledger.StatusManualReview,
		To: ledger.StatusManualReview, ReviewCode: "Duplicated", ReviewReason: "a code spelled wrong"})
	require.ErrorIs(t, err, ledger.ErrInvalid)
	require.ErrorContains(t, err, "ReviewCode")
	after, _ := mustGet(t, s, ids[1])
	require.Equal(t, canon(before), canon(after), "nothing written")

	// Resolving keeps code and reason as history of the review.
	resolved, err := s.Resolve(ctx, ledger.ResolveParams{ID: ids[2], Actor: "alice", Note: "checked the dashboard",
		Outcome: ledger.ResolveFailed, Now: at(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, ledger.ReviewCodes[2], resolved.ReviewCode)
	stored, _ = mustGet(t, s, ids[2])
	require.Equal(t, ledger.StatusFailed, stored.Status)
	require.Equal(t, ledger.ReviewCodes[2], stored.ReviewCode, "the code stays as history")
}

// mustClaimDueReview leases the operation id, in manual_review and due at
// one minute, to ownerB by ClaimDue with IncludeReview, the way background
// work does before a read-only lookup.
func mustClaimDueReview(t *testing.T, s ledger.Store, id string) {
	t.Helper()
	ops, err := s.ClaimDue(t.Context(), ledger.ClaimDueParams{Owner: ownerB, Now: at(time.Minute), LeaseUntil: at(2 * time.Minute),
		Limit: 100, IncludeReview: true})
	require.NoError(t, err)
	for _, op := range ops {
		if op.ID == id {
			return
		}
	}
	t.Fatalf("ClaimDue did not lease %s in review", id)
}
