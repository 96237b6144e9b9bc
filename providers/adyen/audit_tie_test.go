package adyen_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
)

// TestAuditReportJournalSameSecond: Adyen's Creation Date is to the
// second, so a chargeback and its reversal (or a refund and its return)
// can share one. The reversal follows what it reverses whatever the rows'
// order in the file: a charge charged back and won in the same second
// stands, a refund returned in the same second is reversed.
func TestAuditReportJournalSameSecond(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	from := e.clock.Now()
	ch, err := e.client.Charge(e.ctx, eur("order-tie", 1999, false))
	require.NoError(t, err)
	e.clock.Advance(time.Minute)
	to := e.clock.Now()
	at := from.Add(5 * time.Second).UTC().Format("2006-01-02 15:04:05")
	settled := reportLine(merchant, ch.ProviderRef, ch.OperationID, at, "Settled", "8815000000000401", "EUR", "", "19.99", "")
	chargeback := reportLine(merchant, ch.ProviderRef, ch.OperationID, at, "Chargeback", "8815000000000402", "EUR", "19.99", "", "")
	reversed := reportLine(merchant, ch.ProviderRef, ch.OperationID, at, "ChargebackReversed", "8815000000000403", "EUR", "", "19.99", "")
	for name, rows := range map[string][]string{
		"in order":     {settled, chargeback, reversed},
		"out of order": {reversed, chargeback, settled},
		"mixed":        {chargeback, reversed, settled},
	} {
		t.Run(name, func(t *testing.T) {
			report := reportHeader(t) + "\n" + strings.Join(rows, "\n") + "\n"
			rep, err := e.client.Audit(e.ctx, payonce.AuditParams{From: from, To: to, Report: strings.NewReader(report), DryRun: true})
			require.NoError(t, err)
			require.False(t, rep.Differs(), "the dispute was won: the charge stands: %+v", rep.Differences)
		})
	}
	// Without the reversal, the charge is charged back whatever the order.
	for name, rows := range map[string][]string{"in order": {settled, chargeback}, "out of order": {chargeback, settled}} {
		t.Run("charged back "+name, func(t *testing.T) {
			report := reportHeader(t) + "\n" + strings.Join(rows, "\n") + "\n"
			rep, err := e.client.Audit(e.ctx, payonce.AuditParams{From: from, To: to, Report: strings.NewReader(report), DryRun: true})
			require.NoError(t, err)
			require.Len(t, rep.Differences, 1, "%+v", rep.Differences)
			require.Equal(t, payonce.AuditReversed, rep.Differences[0].ProviderState)
		})
	}
}

// TestAuditReportJournalRanks: the rank each row's Created carries within
// its second: a second chargeback is a chargeback (reversed), after the
// reversal of the first.
func TestAuditReportJournalRanks(t *testing.T) {
	at := "2026-03-02 09:00:00"
	row := func(typ, debit, credit string) string {
		return reportLine(merchant, "8815000000000002", op("02"), at, typ, "8815000000000501", "EUR", debit, credit, "")
	}
	report := reportHeader(t) + "\n" + row("SecondChargeback", "10.00", "") + "\n" + row("ChargebackReversed", "", "10.00") + "\n" +
		row("Chargeback", "10.00", "") + "\n" + row("Settled", "", "10.00") + "\n"
	got, err := list(t, []byte(report), allTime)
	require.NoError(t, err)
	require.Len(t, got, 4)
	base, err := time.Parse(time.DateTime, at)
	require.NoError(t, err)
	for i, want := range []struct {
		state payonce.AuditState
		ns    time.Duration
	}{{payonce.AuditReversed, 3}, {payonce.AuditSucceeded, 2}, {payonce.AuditReversed, 1}, {payonce.AuditSucceeded, 0}} {
		require.Equal(t, want.state, got[i].State, got[i].Status)
		require.Equal(t, base.Add(want.ns), got[i].Created.UTC(), got[i].Status)
	}
}
