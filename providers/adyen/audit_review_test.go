package adyen_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
)

// reportHeader is the header of the fixture (Adyen's default columns).
func reportHeader(t testing.TB) string {
	t.Helper()
	h, _, _ := strings.Cut(string(fixture(t)), "\n")
	return h
}

// reportLine is one payment-level row in the fixture's column order.
func reportLine(account, psp, ref, created, typ, modPSP, cur, debit, credit, modRef string) string {
	return fmt.Sprintf("PayonceCompany,%s,%s,%s,visa,%s,UTC,%s,%s,%s,%s,%s,1,%s,%s,%s,,,,,visacredit,%s,42,,",
		account, psp, ref, created, typ, modPSP, cur, debit, credit, cur, debit, credit, modRef)
}

// TestAuditReportRefundUnderThePaymentsReference: a refund made by hand in
// the Customer Area may carry the payment's reference as its modification
// reference, or none. Neither is a payonce refund (the adapter sends each
// refund's own operation id): both are unattributed, not an object of the
// charge's operation.
func TestAuditReportRefundUnderThePaymentsReference(t *testing.T) {
	report := reportHeader(t) + "\n" +
		reportLine(merchant, "8815000000000001", op("01"), "2026-03-01 13:00:00", "Settled", "8815000000000101", "EUR", "", "19.99", "") + "\n" +
		reportLine(merchant, "8815000000000001", op("01"), "2026-03-01 14:00:00", "Refunded", "8815000000000102", "EUR", "5.00", "", op("01")) + "\n" +
		reportLine(merchant, "8815000000000001", op("01"), "2026-03-01 15:00:00", "Refunded", "8815000000000103", "EUR", "2.00", "", "") + "\n" +
		reportLine(merchant, "8815000000000001", op("01"), "2026-03-02 15:00:00", "RefundedReversed", "8815000000000102", "EUR", "", "5.00", op("01")) + "\n"
	got, err := list(t, []byte(report), allTime)
	require.NoError(t, err)
	require.Len(t, got, 4)
	require.Equal(t, op("01"), got[0].OperationID, "the payment")
	for _, o := range got[1:] {
		require.Equal(t, payonce.KindRefund, o.Kind)
		require.Empty(t, o.OperationID, "refund %s under the payment's reference or none: no payonce operation", o.Ref)
	}
}

// TestAuditReportRefundByHandEndToEnd: the same through Client.Audit on
// the ledger: a charge payonce made, settled, and a partial refund made by
// hand under its reference. Before, the refund joined the charge's
// operation: duplicated (two objects that took effect) and contradicted
// (the refund's amount is not the charge's).
func TestAuditReportRefundByHandEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	from := e.clock.Now()
	ch, err := e.client.Charge(e.ctx, eur("order-hand", 1999, false))
	require.NoError(t, err)
	e.clock.Advance(time.Minute)
	to := e.clock.Now()
	at := func(d time.Duration) string { return from.Add(d).UTC().Format("2006-01-02 15:04:05") }
	report := reportHeader(t) + "\n" +
		reportLine(merchant, ch.ProviderRef, ch.OperationID, at(time.Second), "Settled", "8815000000000201", "EUR", "", "19.99", "") + "\n" +
		reportLine(merchant, ch.ProviderRef, ch.OperationID, at(10*time.Second), "Refunded", "8815000000000202", "EUR", "5.00", "", ch.OperationID) + "\n"
	rep, err := e.client.Audit(e.ctx, payonce.AuditParams{From: from, To: to, Report: strings.NewReader(report), DryRun: true})
	require.NoError(t, err)
	require.False(t, rep.Differs(), "%+v", rep.Differences)
	require.Equal(t, 2, rep.Objects)
	require.Equal(t, 1, rep.Unattributed, "the refund made by hand")
}

// TestAuditReportTwoPartialCaptures: a payment captured in two partial
// captures has two Settled rows under one Psp Reference: two captures,
// each its own operation, not one payment listed twice.
func TestAuditReportTwoPartialCaptures(t *testing.T) {
	report := reportHeader(t) + "\n" +
		reportLine(merchant, "8815000000000002", op("02"), "2026-03-01 13:00:00", "Settled", "8815000000000301", "EUR", "", "6.00", op("31")) + "\n" +
		reportLine(merchant, "8815000000000002", op("02"), "2026-03-01 13:00:00", "Settled", "8815000000000302", "EUR", "", "4.00", op("32")) + "\n"
	got, err := list(t, []byte(report), allTime)
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i, want := range []struct {
		ref, op string
		amount  int64
	}{{"8815000000000301", op("31"), 600}, {"8815000000000302", op("32"), 400}} {
		require.Equal(t, payonce.KindCapture, got[i].Kind)
		require.Equal(t, want.ref, got[i].Ref)
		require.Equal(t, want.op, got[i].OperationID)
		require.Equal(t, want.amount, got[i].Amount)
		require.Equal(t, "8815000000000002", got[i].PaymentRef)
	}
}

// TestAuditReportMerchantAccounts: a report may hold several merchant
// accounts (settlement-details-report: "If you select multiple merchant
// accounts, the generated report will contain settlement data for all
// merchant accounts that you selected"). Rows of others are skipped; the
// account's name is matched without regard to case; and a report of other
// accounts only is the wrong file, refused rather than read as "nothing
// settled".
func TestAuditReportMerchantAccounts(t *testing.T) {
	mine := reportLine(strings.ToUpper(merchant), "8815000000000001", op("01"), "2026-03-01 13:00:00", "Settled", "8815000000000101", "EUR", "", "19.99", "")
	theirs := reportLine("SomeOtherMerchant", "8815000000000009", op("09"), "2026-03-01 13:00:00", "Settled", "8815000000000109", "EUR", "", "30.00", "")
	got, err := list(t, []byte(reportHeader(t)+"\n"+theirs+"\n"+mine+"\n"), allTime)
	require.NoError(t, err)
	require.Len(t, got, 1, "the row of %s, in upper case", merchant)
	require.Equal(t, op("01"), got[0].OperationID)

	_, err = list(t, []byte(reportHeader(t)+"\n"+theirs+"\n"+theirs+"\n"), allTime)
	require.ErrorContains(t, err, `2 rows of other merchant accounts (e.g. "SomeOtherMerchant") and none of "`+merchant+`"`)

	// A report with no row at all (an empty batch) is no error.
	got, err = list(t, []byte(reportHeader(t)+"\n"), allTime)
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestAuditReportCutShort: a file cut in the middle of a payment's row
// (a download that broke) is refused: its last field may be cut too, and
// "19.9" read as 19.90 would be a false contradiction, a cut reference a
// lost difference.
func TestAuditReportCutShort(t *testing.T) {
	f := string(fixture(t))
	i := strings.Index(f, ",19.99,")
	require.Positive(t, i)
	_, err := list(t, []byte(f[:i+len(",19.9")]), allTime)
	require.ErrorContains(t, err, "line 2: the row has 12 fields, the header 25: the report is cut short")
	// Cut after the amount, in the modification reference.
	j := strings.Index(f, "0b9e4a52-1c7f-5d3e-9a1b-000000000003,42")
	require.Positive(t, j)
	_, err = list(t, []byte(f[:j+20]), allTime)
	require.ErrorContains(t, err, "line 3: the row has 22 fields, the header 25")
}

// TestAuditReportLineEndings: CRLF line ends (a report saved on Windows)
// and quoted fields holding commas read as Adyen's own.
func TestAuditReportLineEndings(t *testing.T) {
	crlf := bytes.ReplaceAll(fixture(t), []byte("\n"), []byte("\r\n"))
	got, err := list(t, crlf, allTime)
	require.NoError(t, err)
	sameObjects(t, fixtureObjects(), got)

	quoted := rewrite(t, func(recs [][]string) [][]string {
		recs[1][4] = `visa, "classic"` // Payment Method with a comma and quotes
		recs[1][11] = "19.99"
		return recs
	})
	require.Contains(t, string(quoted), `"visa, ""classic"""`)
	got, err = list(t, quoted, allTime)
	require.NoError(t, err)
	sameObjects(t, fixtureObjects(), got)
}

// TestAuditReportTwoBatches: a period spanning two payout batches is
// audited from their reports concatenated: the second file's header line
// (its own column order, a byte order mark) starts its rows, and a
// payment settled in the first batch and charged back in the second is
// one object, charged back.
func TestAuditReportTwoBatches(t *testing.T) {
	first := reportHeader(t) + "\n" +
		reportLine(merchant, "8815000000000002", op("02"), "2026-03-01 13:00:00", "Settled", "8815000000000601", "EUR", "", "10.00", "") + "\n"
	second := rewrite(t, func(recs [][]string) [][]string {
		rec, err := csv.NewReader(strings.NewReader(reportLine(merchant, "8815000000000002", op("02"), "2026-03-09 10:00:00", "Chargeback", "8815000000000602", "EUR", "10.00", "", ""))).Read()
		require.NoError(t, err)
		recs = [][]string{recs[0], rec}
		for i := range recs {
			slices.Reverse(recs[i])
		}
		return recs
	})
	got, err := list(t, append([]byte(first+"\uFEFF"), second...), allTime)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, []payonce.AuditState{payonce.AuditSucceeded, payonce.AuditReversed}, []payonce.AuditState{got[0].State, got[1].State})
	require.Equal(t, got[0].Ref, got[1].Ref, "one payment")

	// A second header without a needed column is refused, naming its line.
	_, err = list(t, []byte(first+"Type,Psp Reference,Creation Date\n"), allTime)
	require.ErrorContains(t, err, `no "Merchant Account" column; pass the Settlement details report with its header line (add the column in the report's column settings in the Customer Area if it is missing) (the header on line 3)`)
}

// TestAuditReportPaymentAccountingReport: the Payment accounting report
// (Record Type, Booking Date, ...) is another report: refused, naming the
// one to pass.
func TestAuditReportPaymentAccountingReport(t *testing.T) {
	header := "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Booking Date,TimeZone,Main Currency,Main Amount,Record Type,Payment Currency,Received (PC),Authorised (PC),Captured (PC),Settlement Currency,Payable (SC),Commission (SC),Markup (SC),Scheme Fees (SC),Interchange (SC),Processing Fee Currency,Processing Fee (FC),User Name,Payment Method Variant,Modification Merchant Reference\n"
	_, err := list(t, []byte(header), allTime)
	require.ErrorContains(t, err, `this is not a Settlement details report: it has a "Record Type" column and no "Type", as the Payment accounting report has`)
}
