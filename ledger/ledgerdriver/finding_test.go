package ledgerdriver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Stats.Findings are ordered by provider, then class in the order of
// ledger.FindingClasses (not byte order: status_differs before duplicated).
func TestSortFindingCounts(t *testing.T) {
	cs := []ledger.FindingCount{
		{Provider: "stripe", Class: ledger.FindingMissingAtProvider, Open: 1},
		{Provider: "stripe", Class: ledger.FindingDuplicated, Open: 2},
		{Provider: "adyen", Class: ledger.FindingContradicted, Open: 3},
		{Provider: "stripe", Class: ledger.FindingStatusDiffers, Open: 4},
		{Provider: "stripe", Class: ledger.FindingUnknownToLedger, Open: 5},
	}
	require.NoError(t, ledgerdriver.SortFindingCounts(cs))
	require.Equal(t, []ledger.FindingCount{
		{Provider: "adyen", Class: ledger.FindingContradicted, Open: 3},
		{Provider: "stripe", Class: ledger.FindingUnknownToLedger, Open: 5},
		{Provider: "stripe", Class: ledger.FindingStatusDiffers, Open: 4},
		{Provider: "stripe", Class: ledger.FindingDuplicated, Open: 2},
		{Provider: "stripe", Class: ledger.FindingMissingAtProvider, Open: 1},
	}, cs)

	// A class written by hand is reported, not sorted somewhere.
	err := ledgerdriver.SortFindingCounts([]ledger.FindingCount{{Provider: "stripe", Class: "bogus", Open: 1}})
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	require.ErrorContains(t, err, "bogus")
}
