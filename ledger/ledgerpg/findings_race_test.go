package ledgerpg_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// Two audits (the periodic job and an operator's `payonce audit`) record
// the same differences at the same time, each in its own order: neither
// fails (no deadlock between their upserts) and each difference is one
// finding counted twice.
func TestRecordFindingsConcurrentAudits(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	const n = 200
	fs := make([]ledger.NewFinding, n)
	for i := range fs {
		fs[i] = ledger.NewFinding{Provider: "stripe", Class: ledger.FindingUnknownToLedger,
			OperationID: fmt.Sprintf("op-%03d", i), ProviderRef: fmt.Sprintf("pi_%03d", i), Detail: "d",
			PeriodFrom: now.Add(-time.Hour), PeriodTo: now}
	}
	rev := slices.Clone(fs)
	slices.Reverse(rev)
	for round := 1; round <= 3; round++ {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for g, batch := range [][]ledger.NewFinding{fs, rev} {
			wg.Go(func() { errs[g] = s.RecordFindings(ctx, batch, now.Add(time.Duration(round)*time.Minute)) })
		}
		wg.Wait()
		require.NoError(t, errs[0], "round %d", round)
		require.NoError(t, errs[1], "round %d", round)
	}
	got, err := s.ListFindings(ctx, ledger.FindingFilter{Limit: 2 * n})
	require.NoError(t, err)
	require.Len(t, got, n)
	for _, f := range got {
		require.Equal(t, 6, f.Times, "%s", f.OperationID)
	}
}
