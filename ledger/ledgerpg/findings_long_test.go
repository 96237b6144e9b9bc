package ledgerpg_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
)

// An operation id or provider ref longer than the findings' key index
// holds is refused by validation, naming the field, not by PostgreSQL's
// index ("index row size exceeds btree maximum"); at the bound both are
// recorded.
func TestRecordFindingsLongRefs(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	nf := func(op, ref string) ledger.NewFinding {
		return ledger.NewFinding{Provider: "stripe", Class: ledger.FindingUnknownToLedger, OperationID: op, ProviderRef: ref,
			Detail: "d", PeriodFrom: now.Add(-time.Hour), PeriodTo: now}
	}
	// Four-byte runes, the worst case for the index.
	long := strings.Repeat("\U0001F600", ledger.MaxFindingRefBytes/4)
	testkit.RequireInvalid(t, s.RecordFindings(ctx, []ledger.NewFinding{nf(long+"x", "pi_1")}, now), "fs[0].OperationID")
	testkit.RequireInvalid(t, s.RecordFindings(ctx, []ledger.NewFinding{nf("op", long+"x")}, now), "fs[0].ProviderRef")
	require.NoError(t, s.RecordFindings(ctx, []ledger.NewFinding{nf(long, long)}, now))
	got, err := s.ListFindings(ctx, ledger.FindingFilter{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, long, got[0].OperationID)
}
