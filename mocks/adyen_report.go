package mocks

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/currency"
)

// Adyen's Settlement details report, as the fake writes it: one CSV header
// line, then one line per booking, in the column layout of
// https://docs.adyen.com/developers/reporting/settlement-detail-report/settlement-detail-report-structure
// (with Modification Merchant Reference, the modification's reference).
// Creation Date is "YYYY-MM-DD HH:MM:SS" in the company account's time
// zone, named in TimeZone; the fake's is Central European Time (CET, CEST
// in summer), as in Adyen's examples. Amounts are decimal, in the gross
// currency's units, with Adyen's decimals for it
// (https://docs.adyen.com/development-resources/currency-codes).

// AdyenSettlementColumns are the columns of the fake's Settlement details
// report, in order.
var AdyenSettlementColumns = []string{"Company Account", "Merchant Account", "Psp Reference", "Merchant Reference",
	"Payment Method", "Creation Date", "TimeZone", "Type", "Modification Reference", "Gross Currency",
	"Gross Debit (GC)", "Gross Credit (GC)", "Exchange Rate", "Net Currency", "Net Debit (NC)", "Net Credit (NC)",
	"Commission (NC)", "Markup (NC)", "Scheme Fees (NC)", "Interchange (NC)", "Payment Method Variant",
	"Modification Merchant Reference", "Batch Number"}

// adyCompany is the fake's company account.
const adyCompany = "PayonceTestCompany"

// adyBooking is a row injected out of band: a chargeback or a refund
// reversed, which payonce never asked for.
type adyBooking struct {
	typ, payment, modPSP, modRef, currency string
	amount                                 int64
	created                                time.Time
}

// adyRow is one line of the report before it is rendered.
type adyRow struct {
	merchant, psp, ref, typ, modPSP, modRef, currency string
	debit, credit                                     int64
	created                                           time.Time
	seq                                               int
}

// SettlementDetailsReport writes the Settlement details report of the
// bookings created in [from, to) in Adyen's format: a Settled row for
// every payment captured at once (its creation) and for every capture
// that succeeded, a Refunded row for every refund that succeeded (a
// refund failed later by FailRefund is not there), the rows Chargeback and
// ReverseRefund injected, and a Fee and a MerchantPayout row closing the
// batch. Refused, pending-only and cancelled payments, and authorised
// payments not captured, are not in it: nothing of theirs settled.
func (h *AdyenHandler) SettlementDetailsReport(w io.Writer, from, to time.Time) error {
	h.mu.Lock()
	var rows []adyRow
	add := func(r adyRow) {
		if !r.created.Before(from) && r.created.Before(to) {
			r.seq = len(rows)
			rows = append(rows, r)
		}
	}
	for _, p := range h.paymentList {
		if p.authorised && !p.manual {
			add(adyRow{merchant: p.merchant, psp: p.psp, ref: p.reference, typ: "Settled", modPSP: p.psp,
				currency: p.currency, credit: p.amount, created: p.createdAt})
		}
	}
	for _, m := range h.modList {
		p := h.payments[m.payment]
		if m.status != "succeeded" || p == nil {
			continue
		}
		r := adyRow{merchant: p.merchant, psp: p.psp, ref: p.reference, modPSP: m.psp, modRef: m.reference,
			currency: m.currency, created: m.createdAt}
		switch m.kind {
		case "capture":
			r.typ, r.credit = "Settled", m.amount
		case "refund":
			r.typ, r.debit = "Refunded", m.amount
		default:
			continue
		}
		add(r)
	}
	for _, b := range h.bookings {
		p := h.payments[b.payment]
		r := adyRow{merchant: p.merchant, psp: p.psp, ref: p.reference, typ: b.typ, modPSP: b.modPSP, modRef: b.modRef,
			currency: b.currency, created: b.created}
		if b.typ == "Chargeback" {
			r.debit = b.amount
		} else {
			r.credit = b.amount
		}
		add(r)
	}
	merchant := h.merchant
	h.mu.Unlock()

	sort.SliceStable(rows, func(i, j int) bool {
		if !rows[i].created.Equal(rows[j].created) {
			return rows[i].created.Before(rows[j].created)
		}
		return rows[i].seq < rows[j].seq
	})
	cw := csv.NewWriter(w)
	if err := cw.Write(AdyenSettlementColumns); err != nil {
		return err
	}
	net := map[string]int64{}
	for _, r := range rows {
		debit, err := adyDecimal(r.debit, r.currency)
		if err != nil {
			return err
		}
		credit, err := adyDecimal(r.credit, r.currency)
		if err != nil {
			return err
		}
		net[r.currency] += r.credit - r.debit
		date, zone := adyReportTime(r.created)
		if err := cw.Write([]string{adyCompany, r.merchant, r.psp, r.ref, "visa", date, zone, r.typ, r.modPSP, r.currency,
			debit, credit, "1", r.currency, debit, credit, "", "", "", "", "visacredit", r.modRef, "1"}); err != nil {
			return err
		}
	}
	// The batch closes with its fees and its payout: balance-level rows,
	// without a payment (Psp Reference and Merchant Reference empty).
	closing := to.Add(-time.Second)
	date, zone := adyReportTime(closing)
	curs := make([]string, 0, len(net))
	for c := range net {
		curs = append(curs, c)
	}
	sort.Strings(curs)
	for _, c := range curs {
		fee, err := adyDecimal(1, c)
		if err != nil {
			return err
		}
		payout, err := adyDecimal(max(net[c]-1, 0), c)
		if err != nil {
			return err
		}
		for _, rec := range [][]string{
			{adyCompany, merchant, "", "", "", date, zone, "Fee", "Transaction Fees", c, "", "", "", c, fee, "", "", "", "", "", "", "", "1"},
			{adyCompany, merchant, "", "", "", date, zone, "MerchantPayout", "TX" + strconv.Itoa(len(rows)) + "XT", c, "", "", "", c, payout, "", "", "", "", "", "", "", "1"},
		} {
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// adyDecimals are the currencies whose decimals at Adyen differ from ISO
// 4217 ("For CLP, CVE, IDR, and ISK the standard has a different number of
// decimals than shown in our currency codes table",
// https://docs.adyen.com/development-resources/currency-codes).
var adyDecimals = map[string]int{"CLP": 2, "CVE": 0, "IDR": 0, "ISK": 2}

// adyDecimal renders minor units of cur as the report's decimal amount;
// "" for zero (the column of the other side of the booking).
func adyDecimal(minor int64, cur string) (string, error) {
	if minor == 0 {
		return "", nil
	}
	scale, ok := adyDecimals[cur]
	if !ok {
		u, err := currency.ParseISO(cur)
		if err != nil {
			return "", fmt.Errorf("mocks: settlement report: currency %q: %v", cur, err)
		}
		scale, _ = currency.Standard.Rounding(u)
	}
	s := strconv.FormatInt(minor, 10)
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	return s, nil
}

// adyReportTime renders t as Creation Date and TimeZone in Central
// European Time: CEST (UTC+2) from 01:00 UTC on the last Sunday of March
// to 01:00 UTC on the last Sunday of October (the EU's summer time,
// Directive 2000/84/EC), CET (UTC+1) otherwise.
func adyReportTime(t time.Time) (date, zone string) {
	t = t.UTC()
	lastSunday := func(month time.Month) time.Time {
		d := time.Date(t.Year(), month+1, 1, 1, 0, 0, 0, time.UTC).AddDate(0, 0, -1)
		return d.AddDate(0, 0, -int(d.Weekday()))
	}
	zone, offset := "CET", time.Hour
	if !t.Before(lastSunday(time.March)) && t.Before(lastSunday(time.October)) {
		zone, offset = "CEST", 2*time.Hour
	}
	return t.Add(offset).Format("2006-01-02 15:04:05"), zone
}

// InjectPayment makes a payment that settled without payonce asking for it
// (made in the Customer Area, or by another system of the merchant's)
// with reference as its merchant reference: an operation id the ledger
// does not know, or a reference of the merchant's own. It is authorised
// and captured at once, appears in Truth and in the settlement report, and
// sends no notification (as if its webhook had gone elsewhere). It returns
// the payment's pspReference.
func (h *AdyenHandler) InjectPayment(reference string, amount int64, cur string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	p := &adyPayment{stored: stored{seq: h.seq, createdAt: h.core.now()}, psp: adyPSP(h.core.ids), merchant: h.merchant,
		reference: reference, currency: cur, method: AdyenMethodAuthorised, result: "Authorised", amount: amount,
		captured: amount, authorised: true}
	h.payments[p.psp] = p
	h.paymentList = append(h.paymentList, p)
	return p.psp
}

// Chargeback books a chargeback of everything captured of payment psp:
// the shopper's bank took the money back. It is in the settlement report
// (a Chargeback row, at the clock's time) and sends no notification (as if
// the CHARGEBACK webhook were lost), so that only an audit sees it. It
// fails for a payment that is not known or has nothing captured.
func (h *AdyenHandler) Chargeback(psp string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.payments[psp]
	if !ok || p.captured == 0 {
		return fmt.Errorf("mocks: Chargeback: %q is not a captured payment; pass the pspReference of one", psp)
	}
	h.bookings = append(h.bookings, &adyBooking{typ: "Chargeback", payment: psp, modPSP: adyPSP(h.core.ids),
		currency: p.currency, amount: p.captured, created: h.core.now()})
	return nil
}

// ReverseRefund books the refund modification psp as returned (the
// shopper's account could not take it, and the money is the merchant's
// again): a RefundedReversed row in the settlement report, at the clock's
// time, and no notification (as if the REFUNDED_REVERSED webhook were
// lost). It fails for a modification that is not a refund that succeeded.
func (h *AdyenHandler) ReverseRefund(psp string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.mods[psp]
	if !ok || m.kind != "refund" || m.status != "succeeded" {
		return fmt.Errorf("mocks: ReverseRefund: %q is not a refund that succeeded; pass the pspReference a refund answered", psp)
	}
	h.payments[m.payment].refunded -= m.amount
	h.bookings = append(h.bookings, &adyBooking{typ: "RefundedReversed", payment: m.payment, modPSP: m.psp, modRef: m.reference,
		currency: m.currency, amount: m.amount, created: h.core.now()})
	return nil
}
