package riverpayonce

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/payonce/payonce"
)

// Kind is the River job kind of ReconcileArgs.
const Kind = "payonce_reconcile"

// The defaults of WorkerConfig.
const (
	DefaultTimeout       = 15 * time.Minute
	DefaultMaxPasses     = 10
	DefaultMaxRetryDelay = time.Minute
)

// uniqueStates are the states in which a reconcile job blocks the insertion
// of another: the job is waiting (available, scheduled, pending, retryable)
// or running, so a burst of nudges, or a nudge meeting the periodic job,
// collapses into the one job already there. River requires available,
// pending, running and scheduled in the set (UniqueOpts.ByState); retryable
// is included so that a job waiting to retry a failed pass is the one job
// too (Worker.NextRetry keeps that wait short). Completed is left out on
// purpose, unlike River's default set: a completed job stays in river_job
// until River's cleaner removes it (24 h by default), and would block every
// nudge until then.
var uniqueStates = []rivertype.JobState{
	rivertype.JobStateAvailable,
	rivertype.JobStatePending,
	rivertype.JobStateRetryable,
	rivertype.JobStateRunning,
	rivertype.JobStateScheduled,
}

// ReconcileArgs are the arguments of the reconcile job: none, the job always
// drains whatever the ledger has due. Every insertion of it is unique by
// kind (see InsertOpts).
type ReconcileArgs struct{}

// Kind returns Kind.
func (ReconcileArgs) Kind() string { return Kind }

// InsertOpts makes every insertion of the job unique by kind while another
// reconcile job is waiting or running, whoever inserts it (InsertNudgeTx,
// PeriodicJob or the application's own Insert): one pass drains everything
// due, so a second job queued behind it would only repeat it.
func (ReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByState: uniqueStates}}
}

// WorkerConfig configures a Worker. Zero fields take the defaults named on
// each.
type WorkerConfig struct {
	// Reconciler runs the passes. Required.
	Reconciler *payonce.Reconciler
	// Timeout bounds one job: River cancels the job's context after it, and
	// the worker starts no pass it does not expect to finish before it.
	// Defaults to DefaultTimeout (15 minutes), well past River's own
	// default of one minute, which would cancel a pass mid-settlement
	// (operations then wait, unknown, for their lease to end). Make it at
	// least the longest pass: per provider, the clients' LeaseDuration plus
	// an AttemptTimeout. It must be finite: River's rescuer never frees a
	// job without a timeout, so the job of a process that died while
	// running it would stay "running", and as the unique reconcile job
	// block every later nudge and periodic run. The rescuer frees it after
	// the larger of Timeout and the River client's RescueStuckJobsAfter (1
	// hour by default): lower that to a little over Timeout for a quicker
	// recovery.
	Timeout time.Duration
	// MaxPasses bounds the RunOnce passes of one job. Defaults to
	// DefaultMaxPasses.
	MaxPasses int
	// MaxRetryDelay caps River's backoff before a failed job (a claim that
	// failed) runs again. While the job waits to retry it is the unique
	// reconcile job, and nudges collapse into it, so the wait must stay
	// short. Defaults to DefaultMaxRetryDelay (1 minute).
	MaxRetryDelay time.Duration
	// Logger receives a line per job and the errors of single operations.
	// Defaults to discarding.
	Logger *slog.Logger
	// Now is the clock of the pass budget. Defaults to time.Now.
	Now func() time.Time
}

// Worker is the River worker of ReconcileArgs: each job drains the ledger
// with the Reconciler's RunOnce, again and again until a pass claims
// nothing, at most MaxPasses times and within Timeout.
//
// One job runs passes until idle rather than a single pass because a
// nudge that arrives while the job runs is collapsed into it (the job is
// unique while running): the operation it announces may have committed
// after the running pass claimed its batch, and one more pass picks it up.
// A nudge that arrives after the last, empty pass claimed nothing is left
// to the periodic job (PeriodicJob), at most one interval later; the ledger
// keeps the operation due in any case.
type Worker struct {
	river.WorkerDefaults[ReconcileArgs]
	cfg WorkerConfig
}

// NewWorker builds a Worker from cfg, applying defaults and validating the
// result.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.Reconciler == nil {
		return nil, invalid("WorkerConfig.Reconciler", "required: a *payonce.Reconciler from payonce.NewReconciler")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxPasses == 0 {
		cfg.MaxPasses = DefaultMaxPasses
	}
	if cfg.MaxRetryDelay == 0 {
		cfg.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.Timeout < 0:
		return nil, invalid("WorkerConfig.Timeout", "must be > 0 (0 for %v), got %v: a job without a timeout is never rescued by River after a crash, and would block every later reconcile job", DefaultTimeout, cfg.Timeout)
	case cfg.MaxPasses < 0:
		return nil, invalid("WorkerConfig.MaxPasses", "must be > 0 (0 for %d), got %d", DefaultMaxPasses, cfg.MaxPasses)
	case cfg.MaxRetryDelay < 0:
		return nil, invalid("WorkerConfig.MaxRetryDelay", "must be > 0 (0 for %v), got %v", DefaultMaxRetryDelay, cfg.MaxRetryDelay)
	}
	return &Worker{cfg: cfg}, nil
}

// AddWorkers registers a Worker of rec, with the defaults of WorkerConfig,
// on workers (the River client's Config.Workers). Register a Worker built
// with NewWorker through river.AddWorkerSafely to change them.
func AddWorkers(workers *river.Workers, rec *payonce.Reconciler) error {
	if workers == nil {
		return invalid("workers", "must not be nil: pass the *river.Workers of the River client's Config (river.NewWorkers())")
	}
	w, err := NewWorker(WorkerConfig{Reconciler: rec})
	if err != nil {
		return err
	}
	if err := river.AddWorkerSafely(workers, w); err != nil {
		return fmt.Errorf("riverpayonce: registering the %s worker: %w", Kind, err)
	}
	return nil
}

// Timeout returns WorkerConfig.Timeout: River's client-wide JobTimeout
// (one minute by default) is sized for short jobs and would cancel a pass
// mid-settlement.
func (w *Worker) Timeout(*river.Job[ReconcileArgs]) time.Duration { return w.cfg.Timeout }

// NextRetry is River's default backoff capped at WorkerConfig.MaxRetryDelay:
// a failed job waiting to retry is the unique reconcile job, so nudges and
// the periodic job collapse into it, and River's backoff (attempt^4
// seconds: hours after ten failures) would hold settlement back that long
// once the database is back.
func (w *Worker) NextRetry(job *river.Job[ReconcileArgs]) time.Time {
	next := (&river.DefaultClientRetryPolicy{}).NextRetry(job.JobRow)
	if limit := w.cfg.Now().Add(w.cfg.MaxRetryDelay); next.After(limit) {
		return limit
	}
	return next
}

// Summary is what one reconcile job did: its passes' reports added up. It
// is recorded as the job's output (river.RecordOutput), without the errors'
// texts, which go to the Logger.
type Summary struct {
	Passes      int            `json:"passes"`
	Claimed     int            `json:"claimed"`
	Settled     int            `json:"settled"`
	Skipped     int            `json:"skipped"`
	Errors      int            `json:"errors"`
	Transitions map[string]int `json:"transitions,omitempty"`
}

func (s *Summary) add(rep payonce.ReconcileReport) {
	s.Passes++
	s.Claimed += rep.Claimed
	s.Settled += rep.Settled
	s.Skipped += rep.Skipped
	s.Errors += rep.ErrorCount
	for k, n := range rep.Transitions {
		if s.Transitions == nil {
			s.Transitions = map[string]int{}
		}
		s.Transitions[k] += n
	}
}

// Work runs the passes (see Worker). A pass that fails to claim fails the
// job, and River retries it. Errors settling single operations do not:
// they are logged, and the ledger has already rescheduled those
// operations, so a retry would only repeat the pass.
func (w *Worker) Work(ctx context.Context, job *river.Job[ReconcileArgs]) error {
	sum, err := w.run(ctx)
	// Output is advisory (River's UI shows it); RecordOutput fails only
	// outside a River worker or for a value JSON cannot encode.
	_ = river.RecordOutput(ctx, sum)
	log := w.cfg.Logger.With("job_id", job.ID, "attempt", job.Attempt)
	if err != nil {
		// Warn: River retries the job, and a ledger that is briefly away is
		// a fault the design expects.
		log.Warn("payonce: reconcile job failed", "passes", sum.Passes, "claimed", sum.Claimed, "error", err)
		return err
	}
	if sum.Claimed > 0 {
		log.Info("payonce: reconcile job", "passes", sum.Passes, "claimed", sum.Claimed,
			"settled", sum.Settled, "skipped", sum.Skipped, "errors", sum.Errors)
	}
	return nil
}

// run is Work's loop: RunOnce until a pass claims nothing, MaxPasses passes
// have run, or the next pass would not fit in what is left of Timeout
// (assumed to take as long as the longest so far: starting it would have
// River cancel it mid-settlement).
func (w *Worker) run(ctx context.Context) (Summary, error) {
	var sum Summary
	start := w.cfg.Now()
	deadline := start.Add(w.cfg.Timeout)
	var longest time.Duration
	for sum.Passes < w.cfg.MaxPasses {
		passStart := w.cfg.Now()
		if sum.Passes > 0 && passStart.Add(longest).After(deadline) {
			break
		}
		rep, err := w.cfg.Reconciler.RunOnce(ctx)
		sum.add(rep)
		w.logErrors(rep)
		if err != nil {
			return sum, err
		}
		// RunOnce stops settling when ctx ends and reports what it did
		// without an error; the job must still fail, or River would
		// record a cut pass as a completed one.
		if err := ctx.Err(); err != nil {
			return sum, fmt.Errorf("riverpayonce: reconcile pass %d cut short after %v: %w", sum.Passes, w.cfg.Now().Sub(start), err)
		}
		if rep.Claimed == 0 {
			break
		}
		longest = max(longest, w.cfg.Now().Sub(passStart))
	}
	return sum, nil
}

// logErrors logs the errors of single operations of one pass: the first
// ones (ReconcileReport keeps at most 20) and how many there were.
func (w *Worker) logErrors(rep payonce.ReconcileReport) {
	for _, err := range rep.Errors {
		w.cfg.Logger.Warn("payonce: reconcile: operation not settled", "error", err)
	}
	if n := rep.ErrorCount - len(rep.Errors); n > 0 {
		w.cfg.Logger.Warn("payonce: reconcile: more operations not settled", "count", n)
	}
}

func invalid(field, format string, args ...any) error {
	return &payonce.ValidationError{Field: field, Problem: fmt.Sprintf(format, args...)}
}
