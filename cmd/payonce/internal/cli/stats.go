package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payonce/payonce/ledger"
)

// statusColumns are the statuses of the stats table, in its column order:
// the open ones first (what needs work), then the settled ones.
var statusColumns = []ledger.Status{
	ledger.StatusPending, ledger.StatusInFlight, ledger.StatusUnknown, ledger.StatusManualReview,
	ledger.StatusSucceeded, ledger.StatusFailed,
}

func runStats(ctx context.Context, a *App, args []string) error {
	f := newFlags("stats", "payonce stats [--json] [--ledger DSN] [--schema NAME]",
		`Counts the ledger's operations by provider, kind and status, names the oldest
pending, in-flight, unknown and in-review operation of each provider and kind
(with its age), and counts why operations are in manual review. The open
counts, ages and review reasons are the numbers of the payonce.operations.*
metrics; the settled counts (succeeded, failed) read the whole history, which
a metrics scrape does not do. It also lists the settlement-feed consumers
(ledgerpg.NewConsumer, ledgersqlite.NewConsumer): the time of the last entry
each applied, when it last moved, and its lag (the age of the oldest entry it
has yet to apply), and the open audit findings by provider and class
("payonce audit findings"). It only reads: no lock, no write.`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print the statistics as one JSON object")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	st, err := l.store.Stats(ctx, ledger.StatsParams{IncludeSettled: true})
	if err != nil {
		return fmt.Errorf("reading the statistics of the ledger %s: %w", l.desc, err)
	}
	now := a.now()
	if asJSON {
		return writeJSON(a.Stdout, statsToJSON(l.desc, st, now))
	}
	printStats(a.Stdout, st, now)
	return nil
}

// statsJSON is the --json form of stats.
type statsJSON struct {
	Ledger     string             `json:"ledger"`
	At         time.Time          `json:"at"`
	Operations []statusCountJSON  `json:"operations"`
	Totals     map[string]int64   `json:"totals"`
	Oldest     []oldestOpenJSON   `json:"oldest"`
	Reviews    []reviewReasonJSON `json:"reviews"`
	Consumers  []consumerJSON     `json:"consumers"`
	// Findings are the open audit findings by provider and class
	// ("payonce audit findings").
	Findings []findingCountJSON `json:"findings"`
}

// findingCountJSON is the number of open audit findings of one provider
// and class (ledger.FindingCount).
type findingCountJSON struct {
	Provider string `json:"provider"`
	Class    string `json:"class"`
	Open     int64  `json:"open"`
}

// consumerJSON is one feed consumer (ledger.ConsumerLag).
type consumerJSON struct {
	Name   string `json:"name"`
	Cursor string `json:"cursor"`
	// CursorAt is the time of the last entry applied; null before the first.
	CursorAt  *time.Time `json:"cursor_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	// Behind is the time of the oldest entry not yet applied; null when
	// caught up.
	Behind     *time.Time `json:"behind"`
	LagSeconds float64    `json:"lag_seconds"`
}

type statusCountJSON struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	Status   string `json:"status"`
	Count    int64  `json:"count"`
}

type oldestOpenJSON struct {
	Provider    string    `json:"provider"`
	Kind        string    `json:"kind"`
	Status      string    `json:"status"`
	Since       time.Time `json:"since"`
	AgeSeconds  float64   `json:"age_seconds"`
	OperationID string    `json:"operation_id"`
}

type reviewReasonJSON struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	// ReasonCode is the stored review code (ledger.ReviewCode), the payonce.reason
	// attribute on the metrics.
	ReasonCode string `json:"reason_code"`
	Reason     string `json:"reason"`
	Count      int64  `json:"count"`
}

func statsToJSON(desc string, st ledger.Stats, now time.Time) statsJSON {
	out := statsJSON{Ledger: desc, At: now.UTC(), Operations: []statusCountJSON{}, Totals: map[string]int64{},
		Oldest: []oldestOpenJSON{}, Reviews: []reviewReasonJSON{}, Consumers: []consumerJSON{},
		Findings: []findingCountJSON{}}
	for _, c := range st.Findings {
		out.Findings = append(out.Findings, findingCountJSON{Provider: c.Provider, Class: string(c.Class), Open: c.Open})
	}
	for _, s := range statusColumns {
		out.Totals[string(s)] = 0
	}
	for _, c := range append(append([]ledger.StatusCount{}, st.Open...), st.Settled...) {
		out.Operations = append(out.Operations, statusCountJSON{Provider: c.Provider, Kind: c.Kind, Status: string(c.Status), Count: c.Count})
		out.Totals[string(c.Status)] += c.Count
	}
	for _, o := range st.Oldest {
		out.Oldest = append(out.Oldest, oldestOpenJSON{Provider: o.Provider, Kind: o.Kind, Status: string(o.Status),
			Since: o.Since.UTC(), AgeSeconds: age(o.Since, now).Seconds(), OperationID: o.OperationID})
	}
	for _, r := range st.Reviews {
		out.Reviews = append(out.Reviews, reviewReasonJSON{Provider: r.Provider, Kind: r.Kind,
			ReasonCode: string(r.Code), Reason: r.Reason, Count: r.Count})
	}
	for _, c := range st.Consumers {
		j := consumerJSON{Name: c.Name, Cursor: string(c.Cursor), UpdatedAt: c.UpdatedAt.UTC(), LagSeconds: c.Lag(now).Seconds()}
		if !c.CursorAt.IsZero() {
			t := c.CursorAt.UTC()
			j.CursorAt = &t
		}
		if !c.Behind.IsZero() {
			t := c.Behind.UTC()
			j.Behind = &t
		}
		out.Consumers = append(out.Consumers, j)
	}
	return out
}

// age is how long ago since was, never negative (clocks of the database
// and this machine may disagree by a little).
func age(since, now time.Time) time.Duration {
	return max(now.Sub(since), 0)
}

// printStats prints the tables of stats: counts, oldest open operations,
// review reasons, open audit findings, feed consumers.
func printStats(w io.Writer, st ledger.Stats, now time.Time) {
	printCounts(w, st, now)
	printFindings(w, st.Findings)
	printConsumers(w, st.Consumers, now)
}

// printFindings prints the open audit findings by provider and class, when
// there are any.
func printFindings(w io.Writer, fs []ledger.FindingCount) {
	var n int64
	for _, c := range fs {
		n += c.Open
	}
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nopen audit findings (see \"payonce audit findings\"):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROVIDER\tCLASS\tOPEN")
	for _, c := range fs {
		if c.Open > 0 {
			fmt.Fprintf(tw, "  %s\t%s\t%d\n", c.Provider, c.Class, c.Open)
		}
	}
	_ = tw.Flush()
}

// printConsumers prints the feed consumers' cursors and lags, when there
// are any.
func printConsumers(w io.Writer, cs []ledger.ConsumerLag, now time.Time) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nfeed consumers (lag: age of the oldest entry not yet applied):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tLAG\tCURSOR_AT\tUPDATED\tCURSOR")
	for _, c := range cs {
		lag := "caught up"
		if !c.Behind.IsZero() {
			lag = fmtDuration(c.Lag(now).Round(time.Second))
		}
		cursorAt := "-"
		if !c.CursorAt.IsZero() {
			cursorAt = timeText(c.CursorAt)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Name, lag, cursorAt, timeText(c.UpdatedAt), dash(string(c.Cursor)))
	}
	_ = tw.Flush()
}

// printCounts prints the three tables of the operations.
func printCounts(w io.Writer, st ledger.Stats, now time.Time) {
	type row struct{ provider, kind string }
	var rows []row
	counts := map[row]map[ledger.Status]int64{}
	totals := map[ledger.Status]int64{}
	for _, c := range append(append([]ledger.StatusCount{}, st.Open...), st.Settled...) {
		r := row{c.Provider, c.Kind}
		if counts[r] == nil {
			counts[r] = map[ledger.Status]int64{}
			rows = append(rows, r)
		}
		counts[r][c.Status] += c.Count
		totals[c.Status] += c.Count
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "the ledger has no operations")
		return
	}
	// Open and settled are each ordered; merged, the rows are sorted again.
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(a.provider, b.provider), cmp.Compare(a.kind, b.kind)) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "PROVIDER\tKIND")
	for _, s := range statusColumns {
		fmt.Fprintf(tw, "\t%s", statusHeader(s))
	}
	fmt.Fprintln(tw, "\tTOTAL")
	line := func(provider, kind string, c map[ledger.Status]int64) {
		fmt.Fprintf(tw, "%s\t%s", provider, dash(kind))
		var sum int64
		for _, s := range statusColumns {
			fmt.Fprintf(tw, "\t%d", c[s])
			sum += c[s]
		}
		fmt.Fprintf(tw, "\t%d\n", sum)
	}
	for _, r := range rows {
		line(r.provider, r.kind, counts[r])
	}
	if len(rows) > 1 {
		line("all", "", totals)
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	if len(st.Oldest) == 0 {
		fmt.Fprintln(w, "no open operation: nothing pending, in flight, unknown or in review")
	} else {
		fmt.Fprintln(w, "oldest open operations:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  PROVIDER\tKIND\tSTATUS\tAGE\tSINCE\tOPERATION")
		for _, o := range st.Oldest {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", o.Provider, o.Kind, o.Status,
				fmtDuration(age(o.Since, now).Round(time.Second)), timeText(o.Since), o.OperationID)
		}
		_ = tw.Flush()
	}
	if len(st.Reviews) == 0 {
		return
	}
	fmt.Fprintln(w, "\nmanual review reasons (see \"payonce review list\"):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROVIDER\tKIND\tCOUNT\tCODE\tREASON")
	for _, r := range st.Reviews {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\n", r.Provider, r.Kind, r.Count, r.Code, r.Reason)
	}
	_ = tw.Flush()
}

func statusHeader(s ledger.Status) string {
	if s == ledger.StatusManualReview {
		return "IN_REVIEW"
	}
	return strings.ToUpper(string(s))
}
