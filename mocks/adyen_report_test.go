package mocks_test

import (
	"bytes"
	"encoding/csv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

// TestAdyenSettlementReportFormat: the fake's report is Adyen's layout:
// the header line of AdyenSettlementColumns, Creation Date in CET or CEST
// by the EU's summer time rule, gross amounts with Adyen's decimals per
// currency (ISK two, unlike ISO 4217), and the batch's Fee and
// MerchantPayout rows, which name no payment.
func TestAdyenSettlementReportFormat(t *testing.T) {
	t.Parallel()
	clock := mocks.NewManualClock(time.Date(2026, 3, 29, 0, 59, 59, 0, time.UTC))
	a := mocks.NewAdyenHandler(mocks.AdyenOptions{Options: mocks.Options{Clock: clock.Now, Seed: 3}})
	t.Cleanup(a.Release)
	start := clock.Now()
	winter := a.InjectPayment("ref-winter", 5, "EUR")
	clock.Advance(time.Second) // 01:00 UTC on the last Sunday of March: summer time
	summer := a.InjectPayment("ref-summer", 1500, "JPY")
	isk := a.InjectPayment("ref-isk", 123400, "ISK")
	require.NoError(t, a.Chargeback(winter))

	var b bytes.Buffer
	require.NoError(t, a.SettlementDetailsReport(&b, start, start.Add(time.Hour)))
	recs, err := csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	require.Equal(t, mocks.AdyenSettlementColumns, recs[0])
	col := func(rec []string, name string) string {
		for i, n := range recs[0] {
			if n == name {
				return rec[i]
			}
		}
		t.Fatalf("no column %q", name)
		return ""
	}
	type row struct{ psp, ref, typ, date, zone, cur, debit, credit string }
	var got []row
	for _, rec := range recs[1:] {
		require.Len(t, rec, len(mocks.AdyenSettlementColumns))
		got = append(got, row{col(rec, "Psp Reference"), col(rec, "Merchant Reference"), col(rec, "Type"), col(rec, "Creation Date"),
			col(rec, "TimeZone"), col(rec, "Gross Currency"), col(rec, "Gross Debit (GC)"), col(rec, "Gross Credit (GC)")})
	}
	require.Equal(t, []row{
		{winter, "ref-winter", "Settled", "2026-03-29 01:59:59", "CET", "EUR", "", "0.05"},
		{summer, "ref-summer", "Settled", "2026-03-29 03:00:00", "CEST", "JPY", "", "1500"},
		{isk, "ref-isk", "Settled", "2026-03-29 03:00:00", "CEST", "ISK", "", "1234.00"},
		{winter, "ref-winter", "Chargeback", "2026-03-29 03:00:00", "CEST", "EUR", "0.05", ""},
	}, got[:4])
	// The batch closes with a Fee and a MerchantPayout per currency,
	// without a payment.
	require.Len(t, got, 4+2*3)
	for _, r := range got[4:] {
		require.Empty(t, r.psp)
		require.Contains(t, []string{"Fee", "MerchantPayout"}, r.typ)
	}

	// The period is [from, to) by creation.
	b.Reset()
	require.NoError(t, a.SettlementDetailsReport(&b, start.Add(time.Second), start.Add(time.Hour)))
	recs, err = csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	require.Equal(t, summer, col(recs[1], "Psp Reference"))
	b.Reset()
	require.NoError(t, a.SettlementDetailsReport(&b, start, start.Add(time.Second)))
	recs, err = csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	require.Equal(t, winter, col(recs[1], "Psp Reference"))
	require.Equal(t, "Settled", col(recs[1], "Type"))
	require.Len(t, recs, 1+1+2, "one payment, the EUR Fee and payout")

	// October: back to CET at 01:00 UTC on the last Sunday.
	autumn := time.Date(2026, 10, 25, 0, 59, 59, 0, time.UTC)
	clock.Set(autumn)
	a.InjectPayment("ref-last-summer", 100, "EUR")
	clock.Advance(time.Second)
	a.InjectPayment("ref-first-winter", 100, "EUR")
	b.Reset()
	require.NoError(t, a.SettlementDetailsReport(&b, autumn, autumn.Add(time.Hour)))
	recs, err = csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"2026-10-25 02:59:59", "CEST"}, []string{col(recs[1], "Creation Date"), col(recs[1], "TimeZone")})
	require.Equal(t, []string{"2026-10-25 02:00:00", "CET"}, []string{col(recs[2], "Creation Date"), col(recs[2], "TimeZone")})
}
