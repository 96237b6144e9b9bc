package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

func runMigrate(ctx context.Context, a *App, args []string) error {
	f := newFlags("migrate", "payonce migrate [--ledger DSN] [--schema NAME] [--json]",
		"Creates the ledger's tables, or applies the migrations it lacks. Safe to run\nagain, and from several processes at once.")
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print the result as one JSON object")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	l, err := a.openLedger(ctx, lf, openCreate)
	if err != nil {
		return err
	}
	defer l.Close()
	applied, version, err := l.migrate(ctx)
	if err != nil {
		return fmt.Errorf("migrating the ledger %s: %w", l.desc, err)
	}
	if asJSON {
		if applied == nil {
			applied = []appliedMigration{}
		}
		return writeJSON(a.Stdout, map[string]any{"ledger": l.desc, "applied": applied, "schema_version": version})
	}
	if len(applied) == 0 {
		fmt.Fprintf(a.Stdout, "%s: up to date (schema version %d)\n", l.desc, version)
		return nil
	}
	for _, m := range applied {
		fmt.Fprintf(a.Stdout, "applied %03d_%s\n", m.Version, m.Name)
	}
	fmt.Fprintf(a.Stdout, "%s: now at schema version %d\n", l.desc, version)
	return nil
}

func runReconcile(ctx context.Context, a *App, args []string) error {
	f := newFlags("reconcile", "payonce reconcile [--once | --until-idle | --interval D] [--batch N] [--concurrency N] [flags]",
		`Settles the operations calls left unfinished: sends pending ones, looks up
unknown ones (and those whose process died) and follows the decision table,
and keeps looking up operations in review, read-only. Any number of
reconcilers may share one PostgreSQL ledger.

  --once        one pass, then print its report
  --until-idle  passes until one claims nothing (for cron jobs)
  (default)     a pass every --interval until SIGINT or SIGTERM`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print the report as one JSON object (--once, --until-idle)")
	pf := addProviderFlags(f)
	var once, idle bool
	var interval time.Duration
	var batch, conc int
	f.BoolVar(&once, "once", false, "run one pass and print its report")
	f.BoolVar(&idle, "until-idle", false, "run passes until one claims nothing")
	f.duration(&interval, "interval", 10*time.Second, "wait `D` between passes when nothing is due")
	f.IntVar(&batch, "batch", 100, "`N` operations claimed per pass")
	f.IntVar(&conc, "concurrency", 4, "`N` operations settled at once")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	if once && idle {
		return usageErrorf("--once and --until-idle exclude each other")
	}
	if (once || idle) && f.wasSet("interval") {
		return usageErrorf("--interval applies only to the loop, not with --once or --until-idle")
	}
	if interval <= 0 {
		return usageErrorf("--interval must be greater than 0")
	}
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	level := quiet
	if !once && !idle {
		level = slog.LevelInfo
	}
	client, err := a.newClient(pf, l.store, level)
	if err != nil {
		return err
	}
	r, err := payonce.NewReconciler(payonce.ReconcilerConfig{
		Store: l.store, Clients: []*payonce.Client{client}, BatchSize: batch, Concurrency: conc,
		Interval: interval, Logger: a.logger(level),
	})
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if !once && !idle {
		fmt.Fprintf(a.Stderr, "payonce: reconciling %s for %s every %s; SIGINT or SIGTERM stops\n", l.desc, client.Provider().Name(), fmtDuration(interval))
		if err := r.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		fmt.Fprintln(a.Stderr, "payonce: reconciler stopped")
		return nil
	}
	total := payonce.ReconcileReport{Transitions: map[string]int{}}
	passes := 0
	for {
		rep, err := r.RunOnce(ctx)
		passes++
		addReport(&total, rep)
		if err != nil {
			return fmt.Errorf("reconcile pass %d: %w", passes, err)
		}
		if once || rep.Claimed == 0 || ctx.Err() != nil {
			break
		}
	}
	if err := a.printReconcile(total, passes, asJSON); err != nil {
		return err
	}
	if total.ErrorCount > 0 {
		return silentExit(ExitError)
	}
	return ctx.Err()
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

func (a *App) printReconcile(rep payonce.ReconcileReport, passes int, asJSON bool) error {
	errs := make([]string, len(rep.Errors))
	for i, e := range rep.Errors {
		errs[i] = e.Error()
	}
	if asJSON {
		return writeJSON(a.Stdout, map[string]any{
			"passes": passes, "claimed": rep.Claimed, "settled": rep.Settled, "skipped": rep.Skipped,
			"transitions": rep.Transitions, "error_count": rep.ErrorCount, "errors": errs,
		})
	}
	fmt.Fprintf(a.Stdout, "passes %d: claimed %d, settled %d, skipped %d, errors %d\n",
		passes, rep.Claimed, rep.Settled, rep.Skipped, rep.ErrorCount)
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
	for _, e := range errs {
		fmt.Fprintf(a.Stderr, "payonce: %s\n", e)
	}
	return nil
}

func runCleanup(ctx context.Context, a *App, args []string) error {
	f := newFlags("cleanup", "payonce cleanup --retention D [--batch N] [flags]",
		`Deletes succeeded and failed operations that finished more than --retention
ago. It refuses a retention shorter than the provider's key TTL, and never
deletes an operation that is pending, unknown or in review.`)
	var asJSON bool
	lf := addLedgerFlags(f, &asJSON, "print the report as one JSON object")
	pf := addProviderFlags(f)
	var retention, tombstones time.Duration
	var batch int
	f.duration(&retention, "retention", 0, "keep finished operations this long, `D` such as 30d (required)")
	f.duration(&tombstones, "tombstone-retention", 0, "keep the tombstones of deleted operations this long, `D` (at least --retention);\n"+
		"0 keeps them forever, so that a late duplicate call always gets the recorded outcome")
	f.IntVar(&batch, "batch", 1000, "`N` operations deleted per transaction")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	if retention <= 0 {
		return usageErrorf("--retention is required: how long to keep finished operations, e.g. --retention 30d")
	}
	if batch < 1 {
		return usageErrorf("--batch must be 1 or more, got %d", batch)
	}
	if tombstones != 0 && tombstones < retention {
		return usageErrorf("--tombstone-retention %s is shorter than --retention %s: a tombstone must outlive the operation it replaces; use at least %s, or 0 to keep them forever",
			fmtDuration(tombstones), fmtDuration(retention), fmtDuration(retention))
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
	r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: l.store, Clients: []*payonce.Client{client}, TombstoneRetention: tombstones})
	if err != nil {
		return withCode(ExitUsage, err)
	}
	rep, err := r.Cleanup(ctx, retention, batch)
	if errors.Is(err, ledger.ErrRetentionTooShort) {
		ttl := client.Provider().Info().KeyTTL
		return usageErrorf("--retention %s is shorter than the key TTL of %s (%s): a finished operation must be kept "+
			"at least as long as the provider remembers its idempotency key; use --retention %s or more",
			fmtDuration(retention), client.Provider().Name(), fmtDuration(ttl), fmtDuration(ttl))
	}
	if err != nil {
		return fmt.Errorf("cleanup stopped after deleting %d operations in %d batches: %w", rep.Deleted, rep.Batches, err)
	}
	if asJSON {
		return writeJSON(a.Stdout, map[string]any{
			"deleted": rep.Deleted, "batches": rep.Batches, "oldest_age_seconds": rep.OldestAge.Seconds(),
			"oldest_finished_at": timeJSON(rep.OldestFinishedAt),
			"tombstoned":         rep.Tombstoned, "tombstones": rep.Tombstones,
		})
	}
	fmt.Fprintf(a.Stdout, "deleted %d finished operations in %d batches\n", rep.Deleted, rep.Batches)
	// Each deleted operation leaves a tombstone, so that a late duplicate
	// call gets the recorded outcome instead of a second charge.
	fmt.Fprintf(a.Stdout, "tombstones written %d, purged %d, kept %d (late calls for them return the recorded outcome)\n", rep.Tombstoned, rep.TombstonesPurged, rep.Tombstones)
	if rep.OldestFinishedAt.IsZero() {
		fmt.Fprintln(a.Stdout, "no finished operation is left")
	} else {
		fmt.Fprintf(a.Stdout, "oldest finished operation left: %s ago (%s)\n", rep.OldestAge.Round(time.Second), rep.OldestFinishedAt.Format(time.RFC3339))
	}
	return nil
}
