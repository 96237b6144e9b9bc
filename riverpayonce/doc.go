// Package riverpayonce runs payonce's background settlement as River jobs
// (github.com/riverqueue/river, with the pgx driver riverpgxv5), for
// services whose ledger is ledgerpg in the database that holds River's
// tables.
//
// Three pieces, one job kind (ReconcileArgs, "payonce_reconcile"):
//
//   - Worker (AddWorkers, NewWorker) runs reconcile passes with a
//     *payonce.Reconciler: RunOnce until a pass claims nothing, at most
//     WorkerConfig.MaxPasses times, within WorkerConfig.Timeout (15 minutes
//     by default, since River's one-minute default would cut a pass short).
//     A claim that fails fails the job and River retries it, after at most
//     WorkerConfig.MaxRetryDelay; errors settling single operations are
//     logged and counted in the job's output, and the ledger has already
//     rescheduled those operations.
//   - InsertNudgeTx inserts the job in the caller's transaction, the one
//     that records operations with ledgerpg's Store.CreateOrGetTx (due at
//     once): settlement starts when it commits, and nothing exists if it
//     rolls back.
//   - PeriodicJob inserts the job every interval and when River starts: the
//     backstop for operations no nudge announced (Client.Enqueue, lookups
//     the ledger scheduled, operations in review).
//
// The job is unique while it waits or runs (ReconcileArgs.InsertOpts), so
// a burst of orders, and the periodic job meeting a nudge, collapse into
// one job: at most one reconcile job is queued or running at a time. That
// is for efficiency, not safety: the ledger's leases already keep two
// passes from handling one operation, on any number of replicas, and a
// Reconciler.Run loop may run beside the jobs.
//
// Placing an order:
//
//	op, err := client.PrepareCharge(ctx, payonce.ChargeParams{OrderID: id, Amount: 1999, Currency: "USD", PaymentMethod: pm})
//	tx, err := pool.Begin(ctx)
//	// ... insert the order ...
//	_, _, err = store.CreateOrGetTx(ctx, tx, op, time.Now())
//	err = riverpayonce.InsertNudgeTx(ctx, riverClient, tx) // last, right before the commit
//	err = tx.Commit(ctx)
//
// A second job kind audits: AuditArgs ("payonce_audit") names a provider,
// a Window and a Delay, and the AuditWorker (NewAuditWorker) runs
// payonce's Client.Audit over [now-Delay-Window, now-Delay) for that
// provider's client, recording what differs between the ledger and the
// provider's own records as findings. It reads only. AuditPeriodicJob
// schedules it, unique per provider and interval:
//
//	w, err := riverpayonce.NewAuditWorker(riverpayonce.AuditWorkerConfig{Clients: []*payonce.Client{stripeClient}})
//	err = river.AddWorkerSafely(workers, w)
//	audit, err := riverpayonce.AuditPeriodicJob(riverpayonce.AuditArgs{
//		Provider: "stripe", Window: 25 * time.Hour, Delay: time.Hour, // yesterday, give or take an hour
//	}, 24*time.Hour)
//	cfg := &river.Config{Workers: workers, PeriodicJobs: []*river.PeriodicJob{audit}}
//
// Example shows the whole setup. River's own tables come from its
// migrations (rivermigrate, or the river CLI); the ledger's from
// Store.Migrate.
package riverpayonce
