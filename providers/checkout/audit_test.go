package checkout_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
)

// TestAuditInfoByLookup: Checkout.com lists nothing by date; the audit
// checks the ledger's operations one by one with Lookup, and the adapter
// must not claim to list anything (it is no AuditLister).
func TestAuditInfoByLookup(t *testing.T) {
	b := setup(t)
	var p payonce.Provider = b.P
	a, ok := p.(payonce.Auditor)
	require.True(t, ok, "the Checkout.com adapter is a payonce.Auditor")
	_, lister := p.(payonce.AuditLister)
	require.False(t, lister, "Checkout.com lists no payments by date: the adapter must not be an AuditLister")
	info := a.AuditInfo()
	require.True(t, info.ByLookup)
	require.Nil(t, info.ListedKinds)
	require.Zero(t, info.Margin)
	require.Contains(t, info.Directions, "ledger → provider: each operation of the period by its reference")
}
