package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// demoSeam lets a test act on a run of the demo that the command line
// cannot reach; the zero value is the command's own run.
type demoSeam struct {
	// beforeAudit is called with the fake's handler once the run settled,
	// before the audit: a test changes the fake's records out of band
	// there (an orphan PaymentIntent) and sees the audit find it.
	beforeAudit func(fakeHandler) error
}

// demoAuditReport is the audit of the fake after the run (Client.Audit):
// what the ledger and the fake's own records say about the run's period.
type demoAuditReport struct {
	// Ran: the audit ran; Skipped says why not otherwise (an adapter that
	// needs a downloaded report, a run that did not finish).
	Ran     bool   `json:"ran"`
	Skipped string `json:"skipped,omitempty"`
	// From and To are the audited period (RFC 3339).
	From       string `json:"from,omitempty"`
	To         string `json:"to,omitempty"`
	Directions string `json:"directions,omitempty"`
	// ByLookup: the provider lists nothing, so each operation of the
	// period was looked up (Checkout.com) and Objects stays 0.
	ByLookup   bool `json:"by_lookup"`
	Objects    int  `json:"objects"`
	Operations int  `json:"operations"`
	// Unattributed counts the fake's objects without payonce metadata.
	Unattributed int `json:"unattributed"`
	// Differences counts the differences per class, every class named.
	Differences map[string]int `json:"differences"`
	// Listed describes the first differences; Truncated says there were
	// more.
	Listed    []string `json:"listed"`
	Truncated bool     `json:"truncated,omitempty"`
	// Findings: the differences were recorded as findings in the demo's
	// ledger ("payonce audit findings" lists them there).
	Findings bool `json:"findings_recorded"`
}

// newDemoAuditReport is an audit that has not run (yet), for the reason
// skipped: every class counted zero.
func newDemoAuditReport(skipped string) demoAuditReport {
	out := demoAuditReport{Skipped: skipped, Differences: map[string]int{}, Listed: []string{}}
	for _, c := range ledger.FindingClasses {
		out.Differences[string(c)] = 0
	}
	return out
}

// demoAuditListed bounds the differences the report lists.
const demoAuditListed = 20

// differs counts the differences found.
func (a demoAuditReport) differs() int {
	n := 0
	for _, c := range a.Differences {
		n += c
	}
	return n
}

// demoAuditable says whether the demo can audit psp without a report the
// merchant downloads, and why not otherwise.
func demoAuditable(psp payonce.Provider) (bool, string) {
	aud, ok := psp.(payonce.Auditor)
	if !ok {
		return false, "the adapter cannot audit"
	}
	info := aud.AuditInfo()
	_, lists := psp.(payonce.AuditLister)
	switch {
	case info.ByLookup:
		return true, ""
	case !lists:
		return false, "the adapter neither lists nor looks up"
	case info.NeedsReport:
		return false, "audited from a report downloaded from the provider (payonce audit --report)"
	}
	return true, ""
}

// audit compares the ledger with the fake's records over the run's
// period, from the second the run started in (from) to a minute from now,
// and records what differs as findings in the demo's ledger. The demo ran
// against a fake that only its client talked to, so exactly-once means no
// difference at all: operations left in review whose object failed or
// never existed are none (the audit judges only what took effect), and
// what a lookup could settle was settled before.
func (d *demo) audit(ctx context.Context, from time.Time, seam demoSeam) (demoAuditReport, error) {
	out := newDemoAuditReport("")
	if why := d.s.Provider.auditSkip; why != "" {
		out.Skipped = why
		return out, nil
	}
	if ok, why := demoAuditable(d.psp); !ok {
		out.Skipped = why
		return out, nil
	}
	if seam.beforeAudit != nil {
		sf, ok := d.fake.(*servedFake)
		if !ok {
			return out, fmt.Errorf("the demo's fake is a %T, not a served handler", d.fake)
		}
		if err := seam.beforeAudit(sf.fakeHandler); err != nil {
			return out, err
		}
	}
	d.prog.start("auditing", 0)
	to := time.Now().Add(time.Minute)
	rep, err := d.client.Audit(ctx, payonce.AuditParams{From: from, To: to, MaxListed: demoAuditListed, TempDir: d.tempDir})
	n := 0
	for _, c := range rep.Counts {
		n += c
	}
	d.prog.done(fmt.Sprintf("audited: %d objects, %d operations, %d differences", rep.Objects, rep.Operations, n))
	if err != nil {
		return out, fmt.Errorf("auditing the fake: %w", err)
	}
	out.Ran, out.Findings = true, true
	out.From, out.To = from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339)
	out.Directions, out.Objects, out.Operations, out.Unattributed = rep.Directions, rep.Objects, rep.Operations, rep.Unattributed
	for c, n := range rep.Counts {
		out.Differences[string(c)] = n
	}
	for _, df := range rep.Differences {
		out.Listed = append(out.Listed, describeDifference(df))
	}
	out.Truncated = rep.Truncated
	if aud, ok := d.psp.(payonce.Auditor); ok {
		out.ByLookup = aud.AuditInfo().ByLookup
	}
	return out, nil
}

// describeDifference renders one difference for the report.
func describeDifference(df payonce.AuditDifference) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s operation %s", df.Class, df.Kind, df.OperationID)
	if df.ProviderRef != "" {
		fmt.Fprintf(&b, " (%s)", df.ProviderRef)
	}
	ls, ps := string(df.LedgerStatus), string(df.ProviderState)
	if ls == "" {
		ls = "no record"
	}
	if ps == "" {
		ps = "nothing"
	}
	fmt.Fprintf(&b, ": ledger %s, provider %s", ls, ps)
	if df.Detail != "" {
		b.WriteString(": " + df.Detail)
	}
	return b.String()
}

// print writes the audit's line, and each difference listed.
func (a demoAuditReport) print(w io.Writer, title string) {
	if !a.Ran {
		fmt.Fprintf(w, "audit of the fake: not run (%s)\n", a.Skipped)
		return
	}
	var classes []string
	for _, c := range ledger.FindingClasses {
		classes = append(classes, fmt.Sprintf("%s %d", c, a.Differences[string(c)]))
	}
	read := fmt.Sprintf("%d objects read, %d operations", a.Objects, a.Operations)
	if a.ByLookup {
		read = fmt.Sprintf("%d operations looked up", a.Operations)
	}
	fmt.Fprintf(w, "audit of the fake %s: %s, %d differences (%s), %d unattributed\n",
		title, read, a.differs(), strings.Join(classes, ", "), a.Unattributed)
	for _, l := range a.Listed {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if a.Truncated {
		fmt.Fprintf(w, "  ... (the first %d listed)\n", len(a.Listed))
	}
	if a.differs() > 0 {
		fmt.Fprintln(w, `  (recorded as findings in the demo's ledger: "payonce audit findings" with the same --ledger lists them)`)
	}
}

// errAuditDiffers: the audit found the fake and the ledger disagreeing.
var errAuditDiffers = errors.New("the audit of the fake found differences")
