package sqlstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// The review rows of one provider and kind make one manual_review entry:
// their counts summed, the oldest by time (a known time before none, then
// the smaller ID).
func TestAssembleMergesReviewReasons(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	review := func(reason string, n int64, since time.Time, id string) StatsRow {
		return StatsRow{Part: partReview, Status: "manual_review", Provider: "adyen", Kind: "refund", Reason: reason, Count: n, Since: since, ID: id}
	}
	st, err := AssembleStats([]StatsRow{
		review("c", 1, time.Time{}, ""),
		review("b", 2, t0, "op-9"),
		review("a", 3, t0, "op-2"),
		{Part: partOpen, Status: "unknown", Provider: "adyen", Kind: "refund", Count: 4, Since: t0.Add(time.Hour), ID: "op-7"},
	}, false)
	require.NoError(t, err)
	require.Equal(t, []ledger.StatusCount{
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusUnknown, Count: 4},
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusManualReview, Count: 6},
	}, st.Open)
	require.Equal(t, []ledger.OldestOpen{
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusUnknown, Since: t0.Add(time.Hour), OperationID: "op-7"},
		{Provider: "adyen", Kind: "refund", Status: ledger.StatusManualReview, Since: t0, OperationID: "op-2"},
	}, st.Oldest)
	require.Equal(t, []string{"a", "b", "c"}, []string{st.Reviews[0].Reason, st.Reviews[1].Reason, st.Reviews[2].Reason})
	require.Nil(t, st.Settled)
}

// A row the statement cannot produce is reported, not counted.
func TestAssembleRefusesUnexpectedRows(t *testing.T) {
	for name, r := range map[string]StatsRow{
		"unknown status":          {Part: partOpen, Status: "exploded"},
		"settled status as open":  {Part: partOpen, Status: "succeeded"},
		"review as open":          {Part: partOpen, Status: "manual_review"},
		"open status as settled":  {Part: partSettled, Status: "pending"},
		"settled when not asked":  {Part: partSettled, Status: "failed"},
		"open status as a review": {Part: partReview, Status: "pending"},
		"unknown part":            {Part: "other", Status: "pending"},
	} {
		_, err := AssembleStats([]StatsRow{r}, name == "open status as settled")
		require.ErrorIs(t, err, ledger.ErrCorrupt, name)
	}
}
