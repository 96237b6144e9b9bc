package adapterkit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// TestNeedsSearchAudit: a charge whose object the ledger knows is read by
// id alone, unless it was resent or the lookup is an audit's, which must
// search by the operation id to see a duplicate made outside payonce.
func TestNeedsSearchAudit(t *testing.T) {
	known := payonce.LookupQuery{OperationID: "op", ProviderRef: "pay_1"}
	for _, c := range []struct {
		name string
		q    func(payonce.LookupQuery) payonce.LookupQuery
		want bool
	}{
		{"known", func(q payonce.LookupQuery) payonce.LookupQuery { return q }, false},
		{"unknown", func(q payonce.LookupQuery) payonce.LookupQuery { q.ProviderRef = ""; return q }, true},
		{"resent", func(q payonce.LookupQuery) payonce.LookupQuery { q.Generation = 1; return q }, true},
		{"audit", func(q payonce.LookupQuery) payonce.LookupQuery { q.Audit = true; return q }, true},
	} {
		got, err := adapterkit.NeedsSearch("p", c.q(known))
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, got, c.name)
	}
	_, err := adapterkit.NeedsSearch("p", payonce.LookupQuery{ProviderRef: "pay_1", Audit: true})
	require.ErrorContains(t, err, "OperationID is empty")
}
