package adyen_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/adyen"
)

// fixture is testdata/settlement_detail_report.csv: a Settlement details
// report in Adyen's documented layout (settlement-detail-report-structure:
// Company Account, Merchant Account, Psp Reference, Merchant Reference,
// Payment Method, Creation Date, TimeZone, Type, Modification Reference,
// Gross Currency, Gross Debit (GC), Gross Credit (GC), Exchange Rate, Net
// Currency, ...), with every payment-level record type the audit reads,
// fee, payout, balance transfer and payment cost rows, a row of another
// merchant account, and a summer (CEST) row.
func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/settlement_detail_report.csv")
	require.NoError(t, err)
	return b
}

func op(n string) string { return "0b9e4a52-1c7f-5d3e-9a1b-0000000000" + n }

func cet(d, hms string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05 -07:00", d+" "+hms+" +01:00")
	if err != nil {
		panic(err)
	}
	return t
}

// fixtureObjects are what the fixture holds for PayonceTestMerchant.
func fixtureObjects() []payonce.AuditObject {
	eur := func(o payonce.AuditObject) payonce.AuditObject {
		if o.Currency == "" {
			o.Currency = "EUR"
		}
		return o
	}
	return []payonce.AuditObject{
		eur(payonce.AuditObject{Ref: "8815000000000001", OperationID: op("01"), Kind: payonce.KindCharge, State: payonce.AuditSucceeded,
			Status: "Settled", Amount: 1999, Created: cet("2026-03-01", "13:00:00")}),
		eur(payonce.AuditObject{Ref: "8815000000000003", OperationID: op("03"), Kind: payonce.KindCapture, State: payonce.AuditSucceeded,
			Status: "Settled", Amount: 1000, Created: cet("2026-03-01", "13:05:10"), PaymentRef: "8815000000000002"}),
		eur(payonce.AuditObject{Ref: "8815000000000004", OperationID: op("04"), Kind: payonce.KindRefund, State: payonce.AuditSucceeded,
			Status: "Refunded", Amount: 500, Created: cet("2026-03-01", "14:00:00"), PaymentRef: "8815000000000001"}),
		eur(payonce.AuditObject{Ref: "8815000000000002", OperationID: op("02"), Kind: payonce.KindCharge, State: payonce.AuditReversed,
			Status: "Chargeback", Amount: 1000, Created: cet("2026-03-02", "09:00:00")}),
		eur(payonce.AuditObject{Ref: "8815000000000002", OperationID: op("02"), Kind: payonce.KindCharge, State: payonce.AuditSucceeded,
			Status: "ChargebackReversed", Amount: 1000, Created: cet("2026-03-02", "10:00:00")}),
		eur(payonce.AuditObject{Ref: "8815000000000004", OperationID: op("04"), Kind: payonce.KindRefund, State: payonce.AuditReversed,
			Status: "RefundedReversed", Amount: 500, Created: cet("2026-03-02", "11:00:00"), PaymentRef: "8815000000000001"}),
		// A payment made elsewhere, under a reference of its own: no
		// payonce operation (unattributed).
		{Ref: "8815000000000007", OperationID: "", Kind: payonce.KindCharge, State: payonce.AuditSucceeded,
			Status: "Settled", Amount: 1500, Currency: "JPY", Created: cet("2026-03-01", "13:30:00")},
		// ISK has two decimals at Adyen (ISO 4217: none).
		{Ref: "8815000000000008", OperationID: op("08"), Kind: payonce.KindCharge, State: payonce.AuditSucceeded,
			Status: "Settled", Amount: 123400, Currency: "ISK", Created: cet("2026-03-01", "13:40:00")},
		eur(payonce.AuditObject{Ref: "8815000000000010", OperationID: op("10"), Kind: payonce.KindCharge, State: payonce.AuditSucceeded,
			Status: "Settled", Amount: 750, Created: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)}),
	}
}

var allTime = payonce.AuditQuery{From: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}

func provider(t *testing.T) *adyen.Provider {
	t.Helper()
	p, err := adyen.New(testConfig())
	require.NoError(t, err)
	return p
}

// list reads report with q's period and returns the objects in order.
func list(t *testing.T, report []byte, q payonce.AuditQuery) ([]payonce.AuditObject, error) {
	t.Helper()
	q.Report = bytes.NewReader(report)
	var out []payonce.AuditObject
	err := provider(t).ListObjects(context.Background(), nil, q, func(o payonce.AuditObject) error {
		out = append(out, o)
		return nil
	})
	return out, err
}

// sameObjects compares objects with their times as instants.
func sameObjects(t *testing.T, want, got []payonce.AuditObject) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.True(t, want[i].Created.Equal(got[i].Created), "object %d created %v, want %v", i, got[i].Created, want[i].Created)
		w, g := want[i], got[i]
		w.Created, g.Created = time.Time{}, time.Time{}
		require.Equal(t, w, g, "object %d", i)
	}
}

func TestAuditInfoSettlementReport(t *testing.T) {
	info := provider(t).AuditInfo()
	require.Empty(t, info.ListedKinds, "a settlement report holds only what settled: ledger → provider cannot be checked from it")
	require.False(t, info.ByLookup, "Adyen's Lookup reads nothing")
	require.True(t, info.NeedsReport, "the merchant downloads the report")
	require.Equal(t, adyen.AuditMargin, info.Margin)
	require.Contains(t, info.Directions, "provider → ledger")
	require.Contains(t, info.Directions, "ledger → provider not checked")
	var p payonce.Provider = provider(t)
	_, lister := p.(payonce.AuditLister)
	require.True(t, lister)
}

func TestAuditReportFixture(t *testing.T) {
	got, err := list(t, fixture(t), allTime)
	require.NoError(t, err)
	sameObjects(t, fixtureObjects(), got)
	for _, o := range got {
		require.Empty(t, o.Key, "the report carries no idempotency key")
	}
}

func TestAuditReportNeedsAReport(t *testing.T) {
	err := provider(t).ListObjects(context.Background(), nil, allTime, func(payonce.AuditObject) error { return nil })
	require.ErrorContains(t, err, "Settlement details report")
	require.ErrorContains(t, err, "--report FILE")
}

// rewrite parses the fixture, lets edit change its records (header
// first), and renders it again.
func rewrite(t *testing.T, edit func(recs [][]string) [][]string) []byte {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(fixture(t))).ReadAll()
	require.NoError(t, err)
	recs = edit(recs)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	require.NoError(t, w.WriteAll(recs))
	return b.Bytes()
}

func TestAuditReportColumnOrderAndExtraColumns(t *testing.T) {
	report := rewrite(t, func(recs [][]string) [][]string {
		for i, rec := range recs {
			r := slices.Clone(rec)
			slices.Reverse(r)
			extra := "Store X"
			if i == 0 {
				extra = "Store"
			}
			recs[i] = append([]string{extra}, r...)
		}
		return recs
	})
	got, err := list(t, report, allTime)
	require.NoError(t, err)
	sameObjects(t, fixtureObjects(), got)

	// Header names are matched without regard to case or surrounding
	// spaces, and a byte order mark before the first is ignored.
	report = rewrite(t, func(recs [][]string) [][]string {
		for i, name := range recs[0] {
			recs[0][i] = " " + strings.ToUpper(name) + " "
		}
		return recs
	})
	got, err = list(t, append([]byte("\uFEFF"), report...), allTime)
	require.NoError(t, err)
	sameObjects(t, fixtureObjects(), got)
}

func TestAuditReportMissingColumn(t *testing.T) {
	for _, name := range []string{"Merchant Account", "Psp Reference", "Merchant Reference", "Creation Date", "TimeZone", "Type",
		"Modification Reference", "Gross Currency", "Gross Debit (GC)", "Gross Credit (GC)", "Modification Merchant Reference"} {
		t.Run(name, func(t *testing.T) {
			report := rewrite(t, func(recs [][]string) [][]string {
				i := slices.Index(recs[0], name)
				require.GreaterOrEqual(t, i, 0)
				for j := range recs {
					recs[j] = slices.Delete(recs[j], i, i+1)
				}
				return recs
			})
			_, err := list(t, report, allTime)
			require.ErrorContains(t, err, `no "`+name+`" column`)
		})
	}
	_, err := list(t, nil, allTime)
	require.ErrorContains(t, err, "empty")
}

// setCell returns the fixture with the cell of column name on record row
// (1 is the first line after the header) set to value.
func setCell(t *testing.T, row int, name, value string) []byte {
	return rewrite(t, func(recs [][]string) [][]string {
		i := slices.Index(recs[0], name)
		require.GreaterOrEqual(t, i, 0, name)
		recs[row][i] = value
		return recs
	})
}

func TestAuditReportBadCells(t *testing.T) {
	for _, c := range []struct {
		row         int
		column      string
		value, want string
		errColumn   string
	}{
		{2, "Gross Credit (GC)", "10,00x", `amount "10,00x" is not a decimal number`, "Gross Credit (GC)"},
		{3, "Gross Debit (GC)", "-5.00", "is not a decimal number", "Gross Debit (GC)"},
		{1, "Gross Credit (GC)", "19.991", "more than 2 decimals for EUR", "Gross Credit (GC)"},
		{7, "Gross Credit (GC)", "1500.5", "more than 0 decimals for JPY", "Gross Credit (GC)"},
		{1, "Gross Credit (GC)", "", "neither", "Gross Credit (GC)"},
		{1, "Gross Debit (GC)", "1.00", "both", "Gross Debit (GC)"},
		{1, "Gross Currency", "EURO", `currency "EURO" is not an ISO 4217 code`, "Gross Currency"},
		{1, "Gross Credit (GC)", "99999999999999999", "not a decimal number", "Gross Credit (GC)"},
		{1, "Creation Date", "01/03/2026 13:00", "is not a date and time", "Creation Date"},
		{1, "Creation Date", "2026-02-30 13:00:00", "is not a date and time", "Creation Date"},
		{1, "TimeZone", "CST", `time zone "CST"`, "Creation Date"},
		{1, "Psp Reference", "", "names no payment", "Psp Reference"},
		{3, "Modification Reference", "", "names no refund", "Modification Reference"},
		{1, "Type", "SettledMysteriously", `record type "SettledMysteriously"`, "Type"},
	} {
		t.Run(c.column+"="+c.value, func(t *testing.T) {
			_, err := list(t, setCell(t, c.row, c.column, c.value), allTime)
			require.Error(t, err)
			require.ErrorContains(t, err, c.want)
			// Lines count from 1, the header's; record row is line row+1.
			require.ErrorContains(t, err, "line "+strconv.Itoa(c.row+1)+", column \""+c.errColumn+"\"")
		})
	}
}

func TestAuditReportSkipsBalanceRows(t *testing.T) {
	// A fee, payout or balance transfer row names no payment: whatever its
	// amounts say, it is not read. An unknown balance-level type is
	// skipped too; an unknown type that names a payment is an error (see
	// TestAuditReportBadCells).
	report := setCell(t, 12, "Gross Credit (GC)", "not an amount")
	report = bytes.Replace(report, []byte(",MerchantPayout,"), []byte(",SomeNewPayoutKind,"), 1)
	got, err := list(t, report, allTime)
	require.NoError(t, err)
	sameObjects(t, fixtureObjects(), got)
}

func TestAuditReportPeriod(t *testing.T) {
	want := fixtureObjects()
	edge := cet("2026-03-01", "13:30:00") // the JPY payment's creation
	// [From, To): an object created at From is in, one at To is out.
	got, err := list(t, fixture(t), payonce.AuditQuery{From: edge, To: cet("2026-03-01", "14:00:00")})
	require.NoError(t, err)
	sameObjects(t, []payonce.AuditObject{want[6], want[7]}, got)
	got, err = list(t, fixture(t), payonce.AuditQuery{From: cet("2026-03-01", "13:00:00"), To: edge})
	require.NoError(t, err)
	sameObjects(t, []payonce.AuditObject{want[0], want[1]}, got)
	// The period compares instants: 12:00 UTC is 14:00 CEST.
	got, err = list(t, fixture(t), payonce.AuditQuery{From: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC), To: time.Date(2026, 7, 1, 12, 0, 1, 0, time.UTC)})
	require.NoError(t, err)
	sameObjects(t, []payonce.AuditObject{want[8]}, got)
}

func TestAuditReportYieldErrorStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := provider(t).ListObjects(context.Background(), nil, payonce.AuditQuery{From: allTime.From, To: allTime.To, Report: bytes.NewReader(fixture(t))},
		func(payonce.AuditObject) error { n++; return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, n)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = provider(t).ListObjects(ctx, nil, payonce.AuditQuery{From: allTime.From, To: allTime.To, Report: bytes.NewReader(fixture(t))},
		func(payonce.AuditObject) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
}

// TestAuditReportBoundedLine: the reader holds one row at a time, and a
// line far longer than any of Adyen's is refused, not buffered.
func TestAuditReportBoundedLine(t *testing.T) {
	long := io.MultiReader(bytes.NewReader(fixture(t)), strings.NewReader(strings.Repeat("x", 1<<20)))
	err := provider(t).ListObjects(context.Background(), nil, payonce.AuditQuery{From: allTime.From, To: allTime.To, Report: long},
		func(payonce.AuditObject) error { return nil })
	require.ErrorContains(t, err, "longer than")
}

func FuzzSettlementReport(f *testing.F) {
	b, err := os.ReadFile("testdata/settlement_detail_report.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("Merchant Account,Psp Reference\n"))
	f.Add([]byte("\"unterminated\n"))
	p, err := adyen.New(testConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, report []byte) {
		q := allTime
		q.Report = bytes.NewReader(report)
		_ = p.ListObjects(context.Background(), nil, q, func(o payonce.AuditObject) error {
			if o.Amount < 0 || o.Ref == "" || o.Created.IsZero() {
				t.Fatalf("read an object the audit cannot compare: %+v", o)
			}
			return nil
		})
	})
}

// TestAuditReportOperationIDForm: the report carries no metadata, so a
// reference names a payonce operation only in the form payonce sends (a
// version 5 UUID, lower case); any other reference is unattributed.
func TestAuditReportOperationIDForm(t *testing.T) {
	for _, c := range []struct{ ref, want string }{
		{op("01"), op("01")},
		{strings.ToUpper(op("01")), ""},
		{"0b9e4a52-1c7f-4d3e-9a1b-000000000001", ""}, // version 4
		{"order-42", ""},
		{"", ""},
	} {
		got, err := list(t, setCell(t, 1, "Merchant Reference", c.ref), allTime)
		require.NoError(t, err)
		require.Equal(t, c.want, got[0].OperationID, c.ref)
	}
}
