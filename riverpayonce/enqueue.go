package riverpayonce

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// PeriodicJobID is the ID of the periodic job PeriodicJob returns.
const PeriodicJobID = Kind

// InsertNudgeTx inserts the reconcile job in tx, the caller's transaction
// that records operations with ledgerpg's Store.CreateOrGetTx: settlement
// starts as soon as tx commits, and when tx rolls back there is neither
// operation nor job. The job is unique (ReconcileArgs.InsertOpts): when a
// reconcile job is already waiting or running, nothing is inserted, so a
// burst of orders is settled by one job.
//
// Call it last, right before the commit. The job's uniqueness is a unique
// index entry that tx holds until it ends: a concurrent transaction's
// nudge waits on it until tx commits or rolls back (and then finds the job,
// or inserts it). Nudging last keeps that wait to the commit itself, and
// keeps a transaction from waiting on a nudge while holding locks another
// one needs.
//
// riverClient must use the schema of River's tables (river.Config.Schema)
// in tx's database; an insert-only client (no Workers) is enough.
func InsertNudgeTx(ctx context.Context, riverClient *river.Client[pgx.Tx], tx pgx.Tx) error {
	switch {
	case riverClient == nil:
		return invalid("riverClient", "must not be nil: pass the *river.Client[pgx.Tx] built with riverpgxv5.New(pool)")
	case tx == nil:
		return invalid("tx", "must not be nil: pass the transaction that recorded the operations (Store.CreateOrGetTx)")
	}
	if _, err := riverClient.InsertTx(ctx, tx, ReconcileArgs{}, nil); err != nil {
		return fmt.Errorf("riverpayonce: inserting the %s job: %w", Kind, err)
	}
	return nil
}

// PeriodicJob returns a River periodic job that inserts the reconcile job
// every interval, and once when River's periodic scheduler starts
// (RunOnStart): the backstop that settles what no nudge announced
// (operations enqueued with payonce.Client.Enqueue, retries the ledger
// scheduled, lookups of operations in review, a nudge that came as the last
// pass was ending). An insertion while a reconcile job is waiting or
// running collapses into it. Add it to river.Config.PeriodicJobs of a
// client that also works the job (AddWorkers).
func PeriodicJob(interval time.Duration) (*river.PeriodicJob, error) {
	if interval <= 0 {
		return nil, invalid("interval", "must be > 0 (how often to reconcile, e.g. 30*time.Second), got %v", interval)
	}
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return ReconcileArgs{}, nil },
		&river.PeriodicJobOpts{ID: PeriodicJobID, RunOnStart: true}), nil
}
