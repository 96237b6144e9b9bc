package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

const auditUsage = "payonce audit --provider NAME --from T [--to T] [--report FILE] [--unattributed] [--dry-run] [--max N] [--json] | " +
	"payonce audit findings [flags] | payonce audit ack --id N --actor NAME --note TEXT"

// runAudit runs an audit, or one of its subcommands (findings, ack).
func runAudit(ctx context.Context, a *App, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "findings":
			return runAuditFindings(ctx, a, args[1:])
		case "ack":
			return runAuditAck(ctx, a, args[1:])
		}
	}
	return runAuditRun(ctx, a, args)
}

func runAuditRun(ctx context.Context, a *App, args []string) error {
	f := newFlags("audit", auditUsage,
		`Compares the ledger with the provider's own records for a period, read-only on
both sides: it never sends a request that moves money and never changes an
operation's status. Each difference (unknown_to_ledger, status_differs,
duplicated, contradicted, missing_at_provider) is printed and recorded in the
ledger as a finding ("payonce audit findings" lists them, "payonce audit ack"
acknowledges one); --dry-run records nothing. The provider's objects that carry
no payonce metadata are counted as unattributed (listed with --unattributed).

--from and --to are RFC 3339 times (2026-12-01T00:00:00Z) or a duration before
now (-24h, -7d); --to defaults to now. The audit reads the provider's objects
created in [--from, --to), widened by the adapter's margin, and the ledger's
operations created in it. Adyen is audited from its settlement details report
(CSV, downloaded from the Customer Area): give it with --report.

--json prints one object: provider, from, to, directions, objects, operations,
unattributed, counts (every class, 0 included), differences (class,
operation_id, provider_ref, kind, ledger_status, provider_state, detail; class
"" is an unattributed object), truncated, differs, dry_run.

Exit codes: 0 nothing differs; 11 the audit found differences; 2 a bad flag, a
provider whose adapter cannot audit, a missing --report; 8 the ledger is
unavailable; 1 any other error (a failed listing).`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print the report as one JSON object")
	pf := addProviderFlags(f)
	var from, to, report string
	var unattributed, dryRun bool
	var maxListed int
	f.StringVar(&from, "from", "", "start `T` of the period: RFC 3339, or a duration before now such as -24h (required)")
	f.StringVar(&to, "to", "", "end `T` of the period (excluded): RFC 3339, or a duration before now; default now")
	f.StringVar(&report, "report", "", "the provider's report `FILE` to audit from (required for adyen: its settlement\ndetails report, CSV)")
	f.BoolVar(&unattributed, "unattributed", false, "list the provider's objects that carry no payonce metadata too")
	f.BoolVar(&dryRun, "dry-run", false, "compare without recording findings in the ledger")
	f.IntVar(&maxListed, "max", 1000, "list at most `N` differences (all are counted and recorded)")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	now := a.now()
	if from == "" {
		return usageErrorf("--from is required: the start of the period, an RFC 3339 time (2026-12-01T00:00:00Z) or a duration before now (-24h)")
	}
	start, err := parseAuditTime("from", from, now)
	if err != nil {
		return err
	}
	end := now
	if to != "" {
		if end, err = parseAuditTime("to", to, now); err != nil {
			return err
		}
	}
	if !start.Before(now) {
		// A period that has not begun holds nothing on either side: its
		// audit would report agreement (exit 0) for what is most likely a
		// mistyped date.
		return usageErrorf("--from %s is not in the past (now is %s): nothing was created in the period yet", start.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if !start.Before(end) {
		return usageErrorf("--from %s is not before --to %s: the period is [--from, --to)", start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	if maxListed < 1 {
		return usageErrorf("--max must be 1 or more, got %d", maxListed)
	}
	p := payonce.AuditParams{From: start, To: end, DryRun: dryRun, ListUnattributed: unattributed, MaxListed: maxListed}
	if report != "" {
		fh, err := os.Open(report)
		if err != nil {
			return usageErrorf("--report: %v", err)
		}
		defer fh.Close()
		p.Report = fh
	}
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	client, err := a.newClient(pf, l.store, quiet)
	if err != nil {
		return err
	}
	name := pf.name(a)
	rep, err := client.Audit(ctx, p)
	var ve *payonce.ValidationError
	switch {
	case errors.As(err, &ve) && ve.Field == "AuditParams.Report" && report != "":
		return usageErrorf("--provider %s is audited from its API, not from a report: leave out --report", name)
	case errors.As(err, &ve) && ve.Field == "AuditParams.Report":
		// A provider audited from a report it cannot be asked for (Adyen's
		// settlement details report): the person downloads it.
		return usageErrorf("--provider %s is audited from a report downloaded from the provider: give it with --report FILE (%s)", name, ve.Problem)
	case errors.Is(err, payonce.ErrNotAuditable):
		return usageErrorf("--provider %s: the adapter cannot audit (it does not implement payonce.Auditor); nothing was read or recorded", name)
	case errors.Is(err, payonce.ErrInvalid):
		return withCode(ExitUsage, fmt.Errorf("auditing %s: %w", name, err))
	case err != nil:
		return fmt.Errorf("auditing %s from %s to %s: %w", name, start.Format(time.RFC3339), end.Format(time.RFC3339), err)
	}
	if asJSON {
		err = writeJSON(a.Stdout, auditToJSON(rep, dryRun))
	} else {
		printAudit(a.Stdout, rep, dryRun)
	}
	if err != nil {
		return err
	}
	if rep.Differs() {
		return silentExit(ExitDiffers)
	}
	return nil
}

// parseAuditTime reads --from or --to: an RFC 3339 time, or a duration
// before now ("-24h", "-7d"; a leading minus is optional, a time to come is
// never meant).
func parseAuditTime(name, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := parseDuration(strings.TrimPrefix(s, "-")); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, usageErrorf("--%s %q is neither an RFC 3339 time (2026-12-01T00:00:00Z) nor a duration before now (-24h, -7d)", name, s)
}

// auditJSON is the --json form of an audit; its field names are stable.
type auditJSON struct {
	Provider     string           `json:"provider"`
	From         time.Time        `json:"from"`
	To           time.Time        `json:"to"`
	Directions   string           `json:"directions"`
	Objects      int              `json:"objects"`
	Operations   int              `json:"operations"`
	Unattributed int              `json:"unattributed"`
	Counts       map[string]int   `json:"counts"`
	Differences  []differenceJSON `json:"differences"`
	Truncated    bool             `json:"truncated"`
	Differs      bool             `json:"differs"`
	DryRun       bool             `json:"dry_run"`
}

type differenceJSON struct {
	// Class is "" for an unattributed object (--unattributed).
	Class         string `json:"class"`
	OperationID   string `json:"operation_id"`
	ProviderRef   string `json:"provider_ref"`
	Kind          string `json:"kind"`
	LedgerStatus  string `json:"ledger_status"`
	ProviderState string `json:"provider_state"`
	Detail        string `json:"detail"`
}

func auditToJSON(r payonce.AuditReport, dryRun bool) auditJSON {
	out := auditJSON{Provider: r.Provider, From: r.From.UTC(), To: r.To.UTC(), Directions: r.Directions, Objects: r.Objects,
		Operations: r.Operations, Unattributed: r.Unattributed, Counts: map[string]int{}, Differences: []differenceJSON{},
		Truncated: r.Truncated, Differs: r.Differs(), DryRun: dryRun}
	for _, c := range ledger.FindingClasses {
		out.Counts[string(c)] = r.Counts[c]
	}
	for _, d := range r.Differences {
		out.Differences = append(out.Differences, differenceJSON{Class: string(d.Class), OperationID: d.OperationID,
			ProviderRef: d.ProviderRef, Kind: string(d.Kind), LedgerStatus: string(d.LedgerStatus),
			ProviderState: string(d.ProviderState), Detail: d.Detail})
	}
	return out
}

// printAudit prints the differences, one a line, then the counts.
func printAudit(w io.Writer, r payonce.AuditReport, dryRun bool) {
	fmt.Fprintf(w, "audit of %s from %s to %s\n", r.Provider, r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	if len(r.Differences) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CLASS\tKIND\tOPERATION\tPROVIDER REF\tLEDGER\tPROVIDER\tDETAIL")
		for _, d := range r.Differences {
			class := string(d.Class)
			if class == "" {
				class = "unattributed"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", class, dash(string(d.Kind)), dash(d.OperationID), dash(d.ProviderRef),
				dash(string(d.LedgerStatus)), dash(string(d.ProviderState)), oneLine(d.Detail))
		}
		_ = tw.Flush()
		if r.Truncated {
			fmt.Fprintf(w, "(only the first %d differences are listed; every one is counted below)\n", len(r.Differences))
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range ledger.FindingClasses {
		fmt.Fprintf(tw, "%s\t%d\n", c, r.Counts[c])
	}
	fmt.Fprintf(tw, "provider objects read\t%d\n", r.Objects)
	fmt.Fprintf(tw, "ledger operations read\t%d\n", r.Operations)
	fmt.Fprintf(tw, "unattributed objects\t%d\n", r.Unattributed)
	fmt.Fprintf(tw, "directions\t%s\n", dash(r.Directions))
	_ = tw.Flush()
	switch {
	case !r.Differs():
		fmt.Fprintln(w, "\nthe ledger and the provider agree")
	case dryRun:
		fmt.Fprintln(w, "\nthe audit found differences (--dry-run: nothing recorded)")
	default:
		fmt.Fprintln(w, "\nthe audit found differences, recorded as findings: \"payonce audit findings\" lists them")
	}
}

func runAuditFindings(ctx context.Context, a *App, args []string) error {
	f := newFlags("audit findings", "payonce audit findings [--provider P] [--class C] [--all] [--limit N] [--after ID] [--json]",
		`Lists the differences audits recorded ("payonce audit"), by id: the open ones
(nobody acknowledged them), or with --all every one. A finding found again by a
later audit is the same finding, found one more time.`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print one JSON object per finding")
	var provider, class string
	var all bool
	var limit int
	var after int64
	f.StringVar(&provider, "provider", "", "only findings of provider `P`")
	f.StringVar(&class, "class", "", "only findings of class `C`: "+classList())
	f.BoolVar(&all, "all", false, "acknowledged findings too")
	f.IntVar(&limit, "limit", 100, "at most `N` findings")
	f.Int64Var(&after, "after", 0, "only findings whose id is greater than `ID` (the next page)")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	fc, err := parseOptional("class", class, parseFindingClass, classList())
	if err != nil {
		return err
	}
	l, err := a.openListing(ctx, lf, limit)
	if err != nil {
		return err
	}
	defer l.Close()
	fs, err := l.store.ListFindings(ctx, ledger.FindingFilter{Provider: provider, Class: fc, Open: !all, AfterID: after, Limit: limit})
	if errors.Is(err, ledger.ErrInvalid) {
		// A flag the store refused (a negative --after): a bad flag.
		return withCode(ExitUsage, fmt.Errorf("listing audit findings: %w", err))
	}
	if err != nil {
		return fmt.Errorf("listing audit findings: %w", err)
	}
	if asJSON {
		for _, fd := range fs {
			if err := writeJSON(a.Stdout, findingToJSON(fd)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(fs) == 0 {
		if all {
			fmt.Fprintln(a.Stdout, "no audit findings")
		} else {
			fmt.Fprintln(a.Stdout, "no open audit findings")
		}
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROVIDER\tCLASS\tOPERATION\tPROVIDER REF\tFIRST FOUND\tLAST FOUND\tTIMES\tACKNOWLEDGED\tDETAIL")
	for _, fd := range fs {
		ack := "-"
		if !fd.AckedAt.IsZero() {
			ack = fmt.Sprintf("%s by %s", timeText(fd.AckedAt), fd.AckedBy)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", fd.ID, fd.Provider, fd.Class, dash(fd.OperationID), dash(fd.ProviderRef),
			timeText(fd.FirstFoundAt), timeText(fd.LastFoundAt), fd.Times, ack, oneLine(fd.Detail))
	}
	return tw.Flush()
}

// findingJSON is one finding in --json (stable field names).
type findingJSON struct {
	ID           int64      `json:"id"`
	Provider     string     `json:"provider"`
	Class        string     `json:"class"`
	OperationID  string     `json:"operation_id"`
	ProviderRef  string     `json:"provider_ref"`
	Detail       string     `json:"detail"`
	PeriodFrom   time.Time  `json:"period_from"`
	PeriodTo     time.Time  `json:"period_to"`
	FirstFoundAt time.Time  `json:"first_found_at"`
	LastFoundAt  time.Time  `json:"last_found_at"`
	Times        int        `json:"times"`
	AckedAt      *time.Time `json:"acked_at"`
	AckedBy      string     `json:"acked_by"`
	AckNote      string     `json:"ack_note"`
}

func findingToJSON(f ledger.Finding) findingJSON {
	return findingJSON{ID: f.ID, Provider: f.Provider, Class: string(f.Class), OperationID: f.OperationID, ProviderRef: f.ProviderRef,
		Detail: f.Detail, PeriodFrom: f.PeriodFrom.UTC(), PeriodTo: f.PeriodTo.UTC(), FirstFoundAt: f.FirstFoundAt.UTC(),
		LastFoundAt: f.LastFoundAt.UTC(), Times: f.Times, AckedAt: timeJSON(f.AckedAt), AckedBy: f.AckedBy, AckNote: f.AckNote}
}

func parseFindingClass(s string) (ledger.FindingClass, error) {
	if c := ledger.FindingClass(s); slices.Contains(ledger.FindingClasses, c) {
		return c, nil
	}
	return "", fmt.Errorf("unknown finding class %q", s)
}

func classList() string {
	names := make([]string, len(ledger.FindingClasses))
	for i, c := range ledger.FindingClasses {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

func runAuditAck(ctx context.Context, a *App, args []string) error {
	f := newFlags("audit ack", "payonce audit ack --id N --actor NAME --note TEXT [--json]",
		`Records an operator's acknowledgement of an audit finding: it stays in the
ledger as history ("payonce audit findings --all") but is no longer open, and
an audit finding it again does not reopen it. It changes no operation: settle
the money itself with the provider, or "payonce review resolve". A finding
already acknowledged keeps its first acknowledgement.`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print the finding as one JSON object")
	var id, actor, note string
	f.StringVar(&id, "id", "", "`N`: the finding's id, from \"payonce audit findings\" (required)")
	f.StringVar(&actor, "actor", "", "`NAME` of who acknowledges it, e.g. yours (required)")
	f.StringVar(&note, "note", "", "`TEXT`: what was done about it (required)")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	n, err := strconv.ParseInt(id, 10, 64)
	switch {
	case id == "":
		return usageErrorf("--id is required: the finding's id, from \"payonce audit findings\"")
	case err != nil || n < 1:
		return usageErrorf("--id %q is not a finding id: a number from \"payonce audit findings\"", id)
	case strings.TrimSpace(actor) == "":
		return usageErrorf("--actor is required: who acknowledges the finding")
	case strings.TrimSpace(note) == "":
		return usageErrorf("--note is required: what was done about the finding")
	}
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	now := a.now()
	fd, err := l.store.AckFinding(ctx, ledger.AckFindingParams{ID: n, Actor: actor, Note: note, Now: now})
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return usageErrorf("no audit finding with id %d in %s (\"payonce audit findings --all\" shows the ids)", n, l.desc)
	case errors.Is(err, ledger.ErrInvalid):
		return withCode(ExitUsage, err)
	case err != nil:
		return fmt.Errorf("acknowledging audit finding %d: %w", n, err)
	}
	if asJSON {
		return writeJSON(a.Stdout, findingToJSON(fd))
	}
	// A finding acknowledged before keeps its first acknowledgement: say
	// whose it is rather than claim this one.
	if fd.AckedBy != actor || fd.AckNote != note {
		fmt.Fprintf(a.Stdout, "finding %d was already acknowledged by %s at %s: %s\n", fd.ID, fd.AckedBy, timeText(fd.AckedAt), fd.AckNote)
		return nil
	}
	fmt.Fprintf(a.Stdout, "finding %d (%s, %s) is acknowledged by %s\n", fd.ID, fd.Provider, fd.Class, fd.AckedBy)
	return nil
}
