package adyen

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/text/currency"

	"github.com/payonce/payonce"
)

// The audit reads Adyen's Settlement details report: Adyen lists no
// payments over an API (see Lookup), but the report it generates for every
// payout batch holds, one row per booking, what settled: captures, refunds,
// chargebacks and their reversals, next to fees and payouts
// (https://docs.adyen.com/reporting/settlement-detail-report, "Report
// structure"; columns and record types:
// https://docs.adyen.com/developers/reporting/settlement-detail-report/settlement-detail-report-structure).
// The merchant downloads it (Customer Area > Reports > Settlement details,
// or the URL a REPORT_AVAILABLE webhook names:
// https://docs.adyen.com/reporting/automatically-get-reports) and passes
// it as AuditQuery.Report.

var _ payonce.AuditLister = (*Provider)(nil)

// AuditMargin widens the period an audit reads from the report on both
// sides. A row's Creation Date is "when the capture was received by Adyen",
// to the second; payonce records the operation when it sends it. The two
// differ by the request's flight and clock skew, well under this.
const AuditMargin = 10 * time.Minute

// Column names of the Settlement details report the audit reads. Columns
// are found by name: Adyen lets merchants add columns and change their
// order ("You can add more columns, or change the order of the default
// columns").
const (
	colMerchantAccount = "Merchant Account"
	colPspReference    = "Psp Reference"
	colMerchantRef     = "Merchant Reference"
	colCreationDate    = "Creation Date"
	colTimeZone        = "TimeZone"
	colType            = "Type"
	colModificationRef = "Modification Reference"
	colGrossCurrency   = "Gross Currency"
	colGrossDebit      = "Gross Debit (GC)"
	colGrossCredit     = "Gross Credit (GC)"
	// colModMerchantRef is the reference of the modification (a capture's
	// or a refund's): what the adapter sends as reference on a
	// modification, the modification's own operation id. Merchant
	// Reference is the payment's.
	colModMerchantRef = "Modification Merchant Reference"
)

// reportColumns are the columns the audit needs; a report without one of
// them is refused, naming it.
var reportColumns = []string{colMerchantAccount, colPspReference, colMerchantRef, colCreationDate, colTimeZone,
	colType, colModificationRef, colGrossCurrency, colGrossDebit, colGrossCredit, colModMerchantRef}

// maxReportLine bounds one line of the report: the reader holds one row at
// a time, and a line this long is not Adyen's (its longest field is 80
// characters).
const maxReportLine = 64 << 10

// AuditInfo says what an audit of Adyen sees: the provider → ledger
// direction only, from the settlement report (NeedsReport: the merchant
// downloads it, so scheduled audits skip Adyen). ListedKinds is empty: the
// report holds only what settled (no authorisations, nothing refused or
// cancelled, nothing of a batch not yet paid out), so a succeeded ledger
// operation missing from it proves nothing, and the ledger → provider
// direction cannot be checked. Adyen has no API that could check it either
// (see Lookup).
func (p *Provider) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{Margin: AuditMargin, NeedsReport: true,
		Directions: "provider → ledger: the settled captures, refunds, chargebacks and reversals of the Settlement details report, by creation date (ledger → provider not checked: the report holds only what settled)"}
}

// ListObjects reads the Settlement details report in q.Report (CSV, with
// its header line) one row at a time and yields the rows created in
// [q.From, q.To) that are about a payment or a modification of one:
//
//   - Settled: the payment (KindCharge, Ref the Psp Reference, OperationID
//     the Merchant Reference), or, when the row names a modification
//     reference other than the payment's (a manual capture), the capture
//     (KindCapture, Ref the Modification Reference, OperationID the
//     Modification Merchant Reference, PaymentRef the payment): succeeded.
//   - Refunded: the refund (KindRefund, Ref the Modification Reference,
//     OperationID the Modification Merchant Reference): succeeded.
//   - Chargeback, SecondChargeback: the payment, reversed (the shopper's
//     bank took the money back).
//   - ChargebackReversed: the payment, succeeded again (the merchant won
//     the dispute and the money came back).
//   - RefundedReversed: the refund, reversed (the refund was returned, the
//     money is the merchant's again).
//
// A payment's rows share its Ref (the Psp Reference): the report is a
// journal, and the latest row of an object by Created is its state. Rows
// of other merchant accounts than Config.MerchantAccount are skipped (a
// report may hold several), and so are rows of balance-level bookings
// (Fee, MiscCosts, MerchantPayout, DepositCorrection, InvoiceDeduction,
// Balancetransfer, ...): they are about no payment. A row of a Type the
// reader does not know is an error, not skipped: it could move a payment's
// money.
//
// Amounts are the Gross amounts in the Gross Currency, converted to
// minor units with Adyen's decimals for the currency, the units the adapter
// sends. The report carries no idempotency key: Key is empty. OperationID
// is the row's reference when it has the form of a payonce operation id:
// payonce sends the operation id as the reference of every payment and
// modification (NewRequest); a payment made elsewhere carries whatever
// reference its maker chose, and one of another form is unattributed
// (OperationID empty).
//
// A nil q.Report is an error saying what to pass. A malformed row is an
// error naming its line and column. ListObjects sends nothing: hc is not
// used.
func (p *Provider) ListObjects(ctx context.Context, _ payonce.HTTPDoer, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	if q.Report == nil {
		return errors.New("adyen: audit: no report: Adyen lists no payments over its API; pass the merchant account's Settlement details report (CSV, Customer Area > Reports > Settlement details), e.g. payonce audit --report FILE, covering the period")
	}
	return readSettlementReport(ctx, q.Report, p.merchant, q.From, q.To, yield)
}

// reportError is an error about one place of the report.
func reportError(line int, column, format string, args ...any) error {
	where := fmt.Sprintf("adyen: settlement report line %d", line)
	if column != "" {
		where += ", column " + strconv.Quote(column)
	}
	return fmt.Errorf(where+": "+format, args...)
}

// readSettlementReport streams the report: one record in memory at a time.
func readSettlementReport(ctx context.Context, r io.Reader, merchant string, from, to time.Time, yield func(payonce.AuditObject) error) error {
	br := bufio.NewReader(r)
	if bom, err := br.Peek(3); err == nil && string(bom) == "\uFEFF" {
		// A byte order mark, as spreadsheet programs write: before the
		// CSV reader, which would take it for a field's text.
		_, _ = br.Discard(3)
	}
	cr := csv.NewReader(&lineLimit{r: br, max: maxReportLine})
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1 // fee and payout rows may leave trailing columns off
	header, err := cr.Read()
	if err == io.EOF {
		return errors.New("adyen: settlement report is empty: it has no header line")
	}
	if err != nil {
		return fmt.Errorf("adyen: settlement report header: %w", err)
	}
	idx := map[string]int{}
	for i, name := range header {
		name = strings.ToLower(strings.TrimSpace(name))
		if _, dup := idx[name]; !dup {
			idx[name] = i
		}
	}
	col := map[string]int{}
	for _, name := range reportColumns {
		i, ok := idx[strings.ToLower(name)]
		if !ok {
			return fmt.Errorf("adyen: settlement report has no %q column; pass the Settlement details report with its header line (add the column in the report's column settings in the Customer Area if it is missing)", name)
		}
		col[name] = i
	}
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("adyen: settlement report: %w", err)
		}
		line, _ := cr.FieldPos(0)
		obj, ok, err := reportRow(rec, col, line, merchant)
		if err != nil {
			return err
		}
		if !ok || obj.Created.Before(from) || !obj.Created.Before(to) {
			continue
		}
		if err := yield(obj); err != nil {
			return err
		}
	}
}

// What a record Type does to the payment or modification it is about.
type rowKind int

const (
	rowSkip rowKind = iota
	rowSettled
	rowRefunded
	rowChargeback
	rowChargebackReversed
	rowRefundReversed
)

// reportTypes maps the record Types of the Settlement details report
// (settlement-detail-report-structure, "Type"). The balance-level ones,
// and the payment-level ones that move no money of the payment itself
// (PaymentCost, MatchedStatement, ...), are skipped.
var reportTypes = map[string]rowKind{
	"settled":            rowSettled,
	"refunded":           rowRefunded,
	"chargeback":         rowChargeback,
	"secondchargeback":   rowChargeback,
	"chargebackreversed": rowChargebackReversed,
	"refundedreversed":   rowRefundReversed,

	"fee": rowSkip, "misccosts": rowSkip, "merchantpayout": rowSkip, "depositcorrection": rowSkip,
	"invoicededuction": rowSkip, "matchedstatement": rowSkip, "manualcorrected": rowSkip,
	"bankinstructionreturned": rowSkip, "epapaid": rowSkip, "balancetransfer": rowSkip,
	"paymentcost": rowSkip, "paidout": rowSkip, "paidoutreversed": rowSkip,
}

// reportRow reads one record; ok is false for a row the audit skips.
func reportRow(rec []string, col map[string]int, line int, merchant string) (payonce.AuditObject, bool, error) {
	get := func(name string) string {
		if i := col[name]; i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	typ := get(colType)
	kind, known := reportTypes[strings.ToLower(typ)]
	switch {
	case known && kind == rowSkip:
		return payonce.AuditObject{}, false, nil
	case !known && get(colPspReference) == "":
		// A balance-level booking of a Type this reader does not know: it
		// names no payment.
		return payonce.AuditObject{}, false, nil
	case !known:
		return payonce.AuditObject{}, false, reportError(line, colType, "record type %q names payment %s, and payonce does not know what it does to it; audit a report without it or report this type to payonce", truncate(typ), quote(truncate(get(colPspReference))))
	}
	if m := get(colMerchantAccount); m != merchant {
		return payonce.AuditObject{}, false, nil
	}
	psp := get(colPspReference)
	if psp == "" {
		return payonce.AuditObject{}, false, reportError(line, colPspReference, "a %s row names no payment", typ)
	}
	created, err := reportTime(get(colCreationDate), get(colTimeZone))
	if err != nil {
		return payonce.AuditObject{}, false, reportError(line, colCreationDate, "%v", err)
	}
	cur := get(colGrossCurrency)
	amount, amountCol, err := grossAmount(get(colGrossCredit), get(colGrossDebit), cur)
	if err != nil {
		return payonce.AuditObject{}, false, reportError(line, amountCol, "%v", err)
	}
	modRef, modOp, payOp := get(colModificationRef), operationID(get(colModMerchantRef)), operationID(get(colMerchantRef))
	obj := payonce.AuditObject{Ref: psp, OperationID: payOp, Kind: payonce.KindCharge, State: payonce.AuditSucceeded,
		Status: typ, Amount: amount, Currency: strings.ToUpper(cur), Created: created}
	switch kind {
	case rowSettled:
		if modOp != "" && modOp != payOp && modRef != "" && modRef != psp {
			// A manual capture: the row is about the capture modification.
			obj.Kind, obj.Ref, obj.OperationID, obj.PaymentRef = payonce.KindCapture, modRef, modOp, psp
		}
	case rowChargeback:
		obj.State = payonce.AuditReversed
	case rowRefunded, rowRefundReversed:
		if modRef == "" {
			return payonce.AuditObject{}, false, reportError(line, colModificationRef, "a %s row names no refund", typ)
		}
		obj.Kind, obj.Ref, obj.OperationID, obj.PaymentRef = payonce.KindRefund, modRef, modOp, psp
		if kind == rowRefundReversed {
			obj.State = payonce.AuditReversed
		}
	}
	return obj, true, nil
}

// operationID is ref when it is a payonce operation id (a UUID of version
// 5 in its canonical form, Identity.OperationID), which the adapter sends
// as the reference; "" otherwise. The report carries no metadata: a
// reference of another form names no payonce operation (a payment made in
// the Customer Area, by another system), and the audit counts its object
// as unattributed rather than as an operation the ledger lacks.
func operationID(ref string) string {
	u, err := uuid.Parse(ref)
	if err != nil || u.Version() != 5 || u.String() != ref {
		return ""
	}
	return ref
}

// reportTime reads a Creation Date ("YYYY-MM-DD HH:MM:SS", e.g. 2012-07-26
// 19:58:55) in the row's TimeZone: "ISO code for the configured time zone
// for your company account ... (BST, CET, CEST, etc.)". The abbreviation is
// read with a fixed table (reportZones); an IANA name (Europe/Amsterdam)
// is read from the system's zone database, and a numeric offset (+01:00)
// as it is.
func reportTime(date, zone string) (time.Time, error) {
	loc, err := reportZone(zone)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05", date, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s is not a date and time as Adyen writes them (2006-01-02 15:04:05)", quote(truncate(date)))
	}
	return t, nil
}

// reportZones are the time zone abbreviations Adyen writes and their UTC
// offsets in hours. Only unambiguous ones: an abbreviation two zones
// share (CST, IST) is refused rather than guessed.
var reportZones = map[string]float64{
	"UTC": 0, "GMT": 0, "WET": 0, "WEST": 1, "BST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3, "MSK": 3,
	"EST": -5, "EDT": -4, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7, "AKST": -9, "AKDT": -8, "HST": -10,
	"BRT": -3, "ART": -3, "JST": 9, "KST": 9, "HKT": 8, "SGT": 8, "AWST": 8, "ACST": 9.5, "ACDT": 10.5,
	"AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
}

func reportZone(zone string) (*time.Location, error) {
	if h, ok := reportZones[strings.ToUpper(zone)]; ok {
		return time.FixedZone(strings.ToUpper(zone), int(h*3600)), nil
	}
	if t, err := time.Parse("-07:00", zone); err == nil {
		return t.Location(), nil
	}
	if strings.Contains(zone, "/") {
		if loc, err := time.LoadLocation(zone); err == nil {
			return loc, nil
		}
	}
	return nil, fmt.Errorf("time zone %s (column %q) is not one payonce can read; set the company account's time zone to one with an unambiguous abbreviation (UTC, CET, ...)", quote(truncate(zone)), colTimeZone)
}

// grossAmount is the row's gross amount in minor units: its Gross Credit
// (a settlement, a chargeback reversed) or its Gross Debit (a refund, a
// chargeback). column names the column an error is about.
func grossAmount(credit, debit, cur string) (int64, string, error) {
	if credit == "" && debit == "" {
		return 0, colGrossCredit, fmt.Errorf("neither %q nor %q holds an amount", colGrossCredit, colGrossDebit)
	}
	read := func(text, column string) (int64, string, error) {
		if text == "" {
			return 0, column, nil
		}
		n, err := decimalMinor(text, cur)
		if errors.Is(err, errCurrency) {
			column = colGrossCurrency
		}
		return n, column, err
	}
	c, ccol, err := read(credit, colGrossCredit)
	if err != nil {
		return 0, ccol, err
	}
	d, dcol, err := read(debit, colGrossDebit)
	if err != nil {
		return 0, dcol, err
	}
	if c != 0 && d != 0 {
		return 0, colGrossDebit, fmt.Errorf("both %q and %q hold an amount (%s, %s); a booking is one or the other", colGrossCredit, colGrossDebit, quote(truncate(credit)), quote(truncate(debit)))
	}
	return c + d, "", nil
}

var errCurrency = errors.New("currency")

// adyenDecimals are the currencies whose minor units at Adyen differ from
// ISO 4217: "For CLP, CVE, IDR, and ISK the standard has a different
// number of decimals than shown in our currency codes table ... the
// decimals in the table on this page are leading"
// (https://docs.adyen.com/development-resources/currency-codes: CLP 2,
// CVE 0, IDR 0, ISK 2). Every amount the adapter sends is in these minor
// units, so the report's decimal amounts are read with them.
var adyenDecimals = map[string]int{"CLP": 2, "CVE": 0, "IDR": 0, "ISK": 2}

// currencyDecimals is the number of decimals of an ISO 4217 code at
// Adyen: adyenDecimals, else the standard's (golang.org/x/text/currency,
// as the YooKassa adapter reads them, never a table kept here).
func currencyDecimals(code string) (int, error) {
	code = strings.ToUpper(code)
	if d, ok := adyenDecimals[code]; ok {
		return d, nil
	}
	u, err := currency.ParseISO(code)
	if err != nil || u.String() != code || code == "XXX" {
		return 0, fmt.Errorf("%w %s is not an ISO 4217 code", errCurrency, quote(truncate(code)))
	}
	scale, _ := currency.Standard.Rounding(u)
	return scale, nil
}

// decimalMinor reads a decimal amount ("1999.00", "10.5", "1,234.56") of
// cur in minor units. More decimals than the currency has are accepted
// only when they are zeros.
func decimalMinor(text, cur string) (int64, error) {
	scale, err := currencyDecimals(cur)
	if err != nil {
		return 0, err
	}
	v := strings.ReplaceAll(text, ",", "") // a thousands separator, as spreadsheet exports write
	intPart, frac, hasDot := strings.Cut(v, ".")
	if intPart == "" || strings.Trim(intPart, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" || (hasDot && frac == "") || len(intPart) > 15 {
		return 0, fmt.Errorf("amount %s is not a decimal number", quote(truncate(text)))
	}
	if len(frac) > scale {
		if strings.Trim(frac[scale:], "0") != "" {
			return 0, fmt.Errorf("amount %s has more than %d decimals for %s", quote(truncate(text)), scale, strings.ToUpper(cur))
		}
		frac = frac[:scale]
	}
	n, err := strconv.ParseInt(intPart+frac+strings.Repeat("0", scale-len(frac)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %s is out of range", quote(truncate(text)))
	}
	return n, nil
}

// lineLimit fails a read once a line runs past max bytes: the report is
// read one row at a time, and a row must not take unbounded memory.
type lineLimit struct {
	r   *bufio.Reader
	max int
	n   int // bytes since the last newline
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			l.n = 0
			continue
		}
		if l.n++; l.n > l.max {
			return 0, fmt.Errorf("a line is longer than %d bytes: this is not a Settlement details report", l.max)
		}
	}
	return n, err
}
