package cli

import (
	"context"
	"errors"
	"fmt"
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
