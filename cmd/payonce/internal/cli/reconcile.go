package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// reconcileMode is how "payonce reconcile" runs.
type reconcileMode int

const (
	reconcileLoop    reconcileMode = iota // a pass every --interval until a signal
	reconcileOnce                         // one pass
	reconcileIdle                         // passes until one claims nothing
	reconcileSettled                      // passes and waits until nothing is open
)

// settleMinWait is the shortest wait of --until-settled between a pass that
// claimed nothing and the next: an operation due "now" that no pass can
// claim (another reconciler holds it) must not make the loop spin.
const settleMinWait = 200 * time.Millisecond

// reconcileCmd is one run of "payonce reconcile".
type reconcileCmd struct {
	a        *App
	mode     reconcileMode
	asJSON   bool
	l        *ledgerConn
	client   *payonce.Client
	r        *payonce.Reconciler
	prog     *progress
	passes   int
	total    payonce.ReconcileReport
	deadline time.Time // of --settle-timeout; zero without one
}

func runReconcile(ctx context.Context, a *App, args []string) error {
	f := newFlags("reconcile", "payonce reconcile [--once | --until-idle | --until-settled [--settle-timeout D] | --interval D [--metrics-addr HOST:PORT]] [flags]",
		`Settles the operations calls left unfinished: sends pending ones, looks up
unknown ones (and those whose process died) and follows the decision table,
and keeps looking up operations in review, read-only. Any number of
reconcilers may share one PostgreSQL ledger.

  --once           one pass, then print its report
  --until-idle     passes until one claims nothing (for cron jobs); an unknown
                   operation whose next check is a few seconds away is left
  --until-settled  passes, sleeping until the next check is due, until nothing
                   of the provider is pending, in flight or unknown; exit 9 if
                   --settle-timeout passes (or a signal stops it) first
  (default)        a pass every --interval until SIGINT or SIGTERM; with
                   --metrics-addr it serves Prometheus metrics meanwhile

--until-idle and --until-settled show their progress on stderr: a line
redrawn in place on a terminal (plain, without escape sequences, with
NO_COLOR set), one line per pass otherwise and with TERM=dumb.`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print the report as one JSON object (--once, --until-idle, --until-settled)")
	pf := addProviderFlags(f)
	var once, idle, settled bool
	var interval, settleTimeout time.Duration
	var batch, conc int
	var metricsAddr string
	f.BoolVar(&once, "once", false, "run one pass and print its report")
	f.BoolVar(&idle, "until-idle", false, "run passes until one claims nothing")
	f.BoolVar(&settled, "until-settled", false, "run passes until nothing is pending, in flight or unknown")
	f.duration(&settleTimeout, "settle-timeout", 0, "with --until-settled, give up after `D` (exit 9); default: no limit")
	f.duration(&interval, "interval", 10*time.Second, "wait `D` between passes when nothing is due")
	f.IntVar(&batch, "batch", 100, "`N` operations claimed per pass")
	f.IntVar(&conc, "concurrency", 4, "`N` operations settled at once")
	f.StringVar(&metricsAddr, "metrics-addr", "", metricsAddrUsage)
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	mode, err := reconcileModeOf(f, once, idle, settled)
	if err != nil {
		return err
	}
	if interval <= 0 {
		return usageErrorf("--interval must be greater than 0")
	}
	m, stopMetrics, err := a.startMetrics(metricsAddr)
	if err != nil {
		return err
	}
	defer stopMetrics()
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	level := quiet
	if mode == reconcileLoop {
		level = slog.LevelInfo
	}
	client, err := a.newClientMetered(pf, l.store, level, m.MeterProvider())
	if err != nil {
		return err
	}
	cfg := payonce.ReconcilerConfig{
		Store: l.store, Clients: []*payonce.Client{client}, BatchSize: batch, Concurrency: conc,
		Interval: interval, Logger: a.logger(level), MeterProvider: m.MeterProvider(),
	}
	if m == nil {
		// Without a metrics endpoint nobody reads the ledger gauges: do
		// not register them (they would read the ledger for nothing).
		cfg.StatsInterval = -1
	}
	r, err := payonce.NewReconciler(cfg)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	defer r.Close()
	if mode == reconcileLoop {
		return a.reconcileLoop(ctx, r, l, client, m, interval)
	}
	c := &reconcileCmd{a: a, mode: mode, asJSON: asJSON, l: l, client: client, r: r,
		prog: a.newProgress(a.Stderr), total: payonce.ReconcileReport{Transitions: map[string]int{}}}
	if settleTimeout > 0 {
		c.deadline = a.now().Add(settleTimeout)
	}
	return c.run(ctx)
}

// reconcileModeOf checks the mode flags and the flags that only one mode
// takes.
func reconcileModeOf(f *cmdFlags, once, idle, settled bool) (reconcileMode, error) {
	var set []string
	mode := reconcileLoop
	for _, m := range []struct {
		on   bool
		name string
		mode reconcileMode
	}{{once, "--once", reconcileOnce}, {idle, "--until-idle", reconcileIdle}, {settled, "--until-settled", reconcileSettled}} {
		if m.on {
			set = append(set, m.name)
			mode = m.mode
		}
	}
	switch {
	case len(set) > 1:
		return 0, usageErrorf("%s exclude each other: choose one", strings.Join(set, " and "))
	case mode != reconcileLoop && f.wasSet("interval"):
		return 0, usageErrorf("--interval applies only to the loop, not with %s", set[0])
	case mode != reconcileLoop && f.wasSet("metrics-addr"):
		// A run that ends by itself is over before a scraper comes by:
		// its metrics would be lost, and its report says it all.
		return 0, usageErrorf("--metrics-addr applies only to the loop (the default mode), not with %s", set[0])
	case mode != reconcileSettled && f.wasSet("settle-timeout"):
		return 0, usageErrorf("--settle-timeout applies only with --until-settled")
	}
	return mode, nil
}

// reconcileLoop is the default mode: Run until a signal (or until the
// metrics server fails).
func (a *App) reconcileLoop(ctx context.Context, r *payonce.Reconciler, l *ledgerConn, client *payonce.Client,
	m *metricsServer, interval time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msg := fmt.Sprintf("payonce: reconciling %s for %s every %s", l.desc, client.Provider().Name(), fmtDuration(interval))
	if m != nil {
		msg += "; metrics on " + m.URL()
	}
	fmt.Fprintln(a.Stderr, msg+"; SIGINT or SIGTERM stops")
	failed := make(chan struct{})
	go func() {
		select {
		case <-m.Done():
			close(failed)
			cancel()
		case <-ctx.Done():
		}
	}()
	err := r.Run(ctx)
	select {
	case <-failed:
		return m.Failure()
	default:
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	fmt.Fprintln(a.Stderr, "payonce: reconciler stopped")
	return nil
}

// run runs passes as the mode says and prints the report.
func (c *reconcileCmd) run(ctx context.Context) error {
	c.prog.start("reconcile", 0)
	var left *openWork
	var stopped string
	for {
		rep, err := c.r.RunOnce(ctx)
		c.passes++
		addReport(&c.total, rep)
		c.prog.report(c.progressNote(), time.Time{})
		if err != nil {
			c.prog.done("")
			return fmt.Errorf("reconcile pass %d: %w", c.passes, err)
		}
		if c.mode == reconcileOnce || ctx.Err() != nil {
			break
		}
		if rep.Claimed > 0 {
			continue // more may be due right away
		}
		if c.mode == reconcileIdle {
			break
		}
		if left, err = c.scan(ctx); err != nil {
			c.prog.done("")
			return err
		}
		if left.total == 0 {
			stopped = "settled"
			break
		}
		if stopped = c.wait(ctx, left); stopped != "" {
			break
		}
	}
	c.prog.done("")
	if ctx.Err() != nil && c.mode == reconcileSettled {
		stopped = "signal"
	}
	if c.mode == reconcileSettled && stopped != "settled" && (left == nil || ctx.Err() != nil) {
		// Stopped by a signal mid-pass: say what is left as of now.
		var err error
		if left, err = c.scan(context.WithoutCancel(ctx)); err != nil {
			return err
		}
	}
	if err := c.print(left, stopped); err != nil {
		return err
	}
	switch {
	case c.total.ErrorCount > 0:
		return silentExit(ExitError)
	case c.mode == reconcileSettled && left.total > 0:
		return silentExit(ExitNotSettled)
	case c.mode == reconcileSettled:
		return nil
	}
	return ctx.Err()
}

// progressNote is the running total shown after each pass.
func (c *reconcileCmd) progressNote() string {
	return fmt.Sprintf("after pass %d: claimed %d, settled %d, in review %d", c.passes, c.total.Claimed, c.total.Settled,
		toReview(c.total.Transitions))
}

// toReview counts the transitions into manual review.
func toReview(transitions map[string]int) int {
	n := 0
	for k, v := range transitions {
		if strings.HasSuffix(k, "->"+string(ledger.StatusManualReview)) {
			n += v
		}
	}
	return n
}

// wait sleeps until the earliest open operation is due (at least
// settleMinWait), and returns why it stopped early: "timeout" when the
// deadline comes first or the next check is due after it, "signal", or ""
// to run the next pass.
func (c *reconcileCmd) wait(ctx context.Context, left *openWork) string {
	now := c.a.now()
	due := left.nextDue
	if due.Before(now.Add(settleMinWait)) {
		due = now.Add(settleMinWait)
	}
	if !c.deadline.IsZero() {
		if !now.Before(c.deadline) {
			return "timeout"
		}
		if due.After(c.deadline) {
			// Nothing can be checked before the deadline: waiting for it
			// would change nothing.
			return "timeout"
		}
	}
	c.prog.report(fmt.Sprintf("waiting: %s open", left.countsText()), due)
	t := time.NewTimer(due.Sub(now))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return "signal"
	case <-t.C:
		return ""
	}
}

// openWork is what a reconciler of one provider has left: the operations
// pending, in flight or unknown, and when the earliest of them is due.
type openWork struct {
	counts  map[ledger.Status]int
	total   int
	nextDue time.Time
	// first are the operations due first (at most openWorkShown), for the
	// report.
	first []ledger.Operation
}

const openWorkShown = 10

// openStatuses are the statuses --until-settled waits out. Manual review
// is not among them: automation sends nothing more for such an operation,
// an operator decides.
var openStatuses = []ledger.Status{ledger.StatusPending, ledger.StatusInFlight, ledger.StatusUnknown}

// dueAt is when a reconciler can next claim op: its next check, or the end
// of a live lease held by another worker, whichever is later.
func dueAt(op ledger.Operation) time.Time {
	if op.LeaseExpiresAt.After(op.NextCheckAt) {
		return op.LeaseExpiresAt
	}
	return op.NextCheckAt
}

// scan reads the client's provider's open operations. The ledger has no
// query for the earliest due time, so it pages through them with List;
// memory stays bounded by one page.
func (c *reconcileCmd) scan(ctx context.Context) (*openWork, error) {
	w := &openWork{counts: map[ledger.Status]int{}}
	provider := c.client.Provider().Name()
	for _, st := range openStatuses {
		after := ""
		for {
			ops, err := c.l.store.List(ctx, ledger.ListFilter{Status: st, Provider: provider, AfterID: after, Limit: ledger.MaxLimit})
			if err != nil {
				return nil, fmt.Errorf("listing the %s operations left: %w", st, err)
			}
			for _, op := range ops {
				w.add(op)
			}
			if len(ops) < ledger.MaxLimit {
				break
			}
			after = ops[len(ops)-1].ID
		}
	}
	return w, nil
}

func (w *openWork) add(op ledger.Operation) {
	w.counts[op.Status]++
	w.total++
	due := dueAt(op)
	if w.nextDue.IsZero() || due.Before(w.nextDue) {
		w.nextDue = due
	}
	i, _ := slices.BinarySearchFunc(w.first, due, func(o ledger.Operation, t time.Time) int { return dueAt(o).Compare(t) })
	if i < openWorkShown {
		w.first = slices.Insert(w.first, i, op)
		if len(w.first) > openWorkShown {
			w.first = w.first[:openWorkShown]
		}
	}
}

// countsText is "2 unknown, 1 pending" (open statuses in order, zeros left
// out).
func (w *openWork) countsText() string {
	var parts []string
	for _, st := range openStatuses {
		if n := w.counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// why says why an operation is still open, for the report.
func why(op ledger.Operation, now time.Time) string {
	due := dueAt(op)
	when := "now"
	if due.After(now) {
		when = "in " + fmtDuration(due.Sub(now).Round(time.Second))
	}
	switch {
	case op.Status == ledger.StatusInFlight && op.LeaseExpiresAt.After(now):
		return "another process holds it; its lease ends " + when
	case op.Status == ledger.StatusPending:
		return "not sent yet (the provider was unavailable); next send " + when
	case op.Status == ledger.StatusUnknown:
		return "the provider's answer is not known yet; next lookup " + when
	}
	return "next check " + when
}

func addReport(total *payonce.ReconcileReport, rep payonce.ReconcileReport) {
	total.Claimed += rep.Claimed
	total.Settled += rep.Settled
	total.Skipped += rep.Skipped
	total.ErrorCount += rep.ErrorCount
	for k, v := range rep.Transitions {
		total.Transitions[k] += v
	}
	for _, e := range rep.Errors {
		if len(total.Errors) < 20 {
			total.Errors = append(total.Errors, e)
		}
	}
}

// remainingJSON is one operation left open, in the --until-settled report.
type remainingJSON struct {
	ID          string     `json:"id"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	NextCheckAt *time.Time `json:"next_check_at"`
	Why         string     `json:"why"`
}

// print prints the report; left and stopped only for --until-settled.
func (c *reconcileCmd) print(left *openWork, stopped string) error {
	a, rep := c.a, c.total
	errs := make([]string, len(rep.Errors))
	for i, e := range rep.Errors {
		errs[i] = e.Error()
	}
	now := a.now()
	if c.asJSON {
		out := map[string]any{
			"passes": c.passes, "claimed": rep.Claimed, "settled": rep.Settled, "skipped": rep.Skipped,
			"in_review": toReview(rep.Transitions), "transitions": rep.Transitions, "error_count": rep.ErrorCount, "errors": errs,
		}
		if left != nil {
			counts := map[string]int{}
			for _, st := range openStatuses {
				counts[string(st)] = left.counts[st]
			}
			ops := make([]remainingJSON, len(left.first))
			for i, op := range left.first {
				ops[i] = remainingJSON{ID: op.ID, Kind: op.Kind, Status: string(op.Status), NextCheckAt: timeJSON(dueAt(op)), Why: why(op, now)}
			}
			out["stopped"] = stopped
			out["remaining"] = counts
			out["remaining_total"] = left.total
			out["next_check_at"] = timeJSON(left.nextDue)
			out["remaining_operations"] = ops
		}
		return writeJSON(a.Stdout, out)
	}
	fmt.Fprintf(a.Stdout, "passes %d: claimed %d, settled %d, skipped %d, in review %d, errors %d\n",
		c.passes, rep.Claimed, rep.Settled, rep.Skipped, toReview(rep.Transitions), rep.ErrorCount)
	if len(rep.Transitions) > 0 {
		keys := make([]string, 0, len(rep.Transitions))
		for k := range rep.Transitions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, rep.Transitions[k])
		}
		fmt.Fprintf(a.Stdout, "transitions: %s\n", strings.Join(parts, ", "))
	}
	if left != nil {
		provider := c.client.Provider().Name()
		if left.total == 0 {
			fmt.Fprintf(a.Stdout, "settled: nothing of %s is pending, in flight or unknown\n", provider)
		} else {
			reason := map[string]string{"timeout": "--settle-timeout passed", "signal": "stopped by a signal"}[stopped]
			fmt.Fprintf(a.Stdout, "not settled (%s): %s of %s left; next check %s\n", reason, left.countsText(), provider, timeText(left.nextDue))
			for _, op := range left.first {
				fmt.Fprintf(a.Stdout, "  %s  %s %s: %s\n", op.ID, op.Kind, op.Status, why(op, now))
			}
			if left.total > len(left.first) {
				fmt.Fprintf(a.Stdout, "  ... and %d more (\"payonce ops list --status unknown\")\n", left.total-len(left.first))
			}
		}
	}
	for _, e := range errs {
		fmt.Fprintf(a.Stderr, "payonce: %s\n", e)
	}
	return nil
}
