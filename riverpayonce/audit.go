package riverpayonce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/payonce/payonce"
)

// AuditKind is the River job kind of AuditArgs.
const AuditKind = "payonce_audit"

// DefaultAuditTimeout is AuditWorkerConfig.Timeout's default: an audit
// lists a day of a provider's objects within the provider's rate limits,
// which River's one-minute default would cut short.
const DefaultAuditTimeout = time.Hour

// AuditArgs are the arguments of the audit job: audit the client of
// Provider over [now-Delay-Window, now-Delay) (see AuditWorker).
type AuditArgs struct {
	// Provider names the client to audit (Provider.Name, e.g. "stripe").
	Provider string `json:"provider"`
	// Window is the length of the audited period. Required, > 0.
	Window time.Duration `json:"window"`
	// Delay keeps the period that far in the past, so that what the
	// provider and the ledger are still settling (a charge in flight, a
	// webhook on its way, a list the provider has not caught up) is not
	// reported as a difference. >= 0.
	Delay time.Duration `json:"delay"`
}

// Kind returns AuditKind.
func (AuditArgs) Kind() string { return AuditKind }

// AuditWorkerConfig configures an AuditWorker.
type AuditWorkerConfig struct {
	// Clients are the clients the jobs may audit, by their provider's
	// name (AuditArgs.Provider). Required: at least one.
	Clients []*payonce.Client
	// Timeout bounds one job. Defaults to DefaultAuditTimeout.
	Timeout time.Duration
	// Logger receives a line per job, a warning when it found differences.
	// Defaults to discarding.
	Logger *slog.Logger
	// Now is the clock of the audited period. Defaults to time.Now.
	Now func() time.Time
}

// AuditWorker is the River worker of AuditArgs: each job runs Client.Audit
// over [now-Delay-Window, now-Delay) for the client of AuditArgs.Provider,
// which records what differs as findings in the ledger (ledger.Finding:
// "payonce audit findings", the console's findings page). The audit reads
// only: it sends no request that moves money and changes no operation.
//
// Differences are not a failure of the job: they are recorded findings,
// and a retry would only find them again. A failed audit (the provider's
// listing or the ledger failed) fails the job and River retries it. A
// provider without a client here, an adapter that cannot audit
// (payonce.ErrNotAuditable) or bad arguments cancel the job: retrying
// cannot fix them.
//
// Periods of consecutive runs are computed from each run's own clock, so
// they may overlap or leave a gap of the scheduler's jitter: schedule it a
// little more often than Window (overlap is harmless: a difference found
// again is the same finding, Finding.Times counts the audits). A retry
// computes its period from its own clock too: after River's growing retry
// delays it audits a later period than the failed attempt meant, and the
// start of that period is covered only by a run whose window reaches back
// to it (a Window of a few intervals covers the early retries).
type AuditWorker struct {
	river.WorkerDefaults[AuditArgs]
	cfg     AuditWorkerConfig
	clients map[string]*payonce.Client
}

// NewAuditWorker builds an AuditWorker from cfg. Register it with
// river.AddWorkerSafely.
func NewAuditWorker(cfg AuditWorkerConfig) (*AuditWorker, error) {
	if len(cfg.Clients) == 0 {
		return nil, invalid("AuditWorkerConfig.Clients", "required: the *payonce.Client of each provider to audit")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultAuditTimeout
	}
	if cfg.Timeout < 0 {
		return nil, invalid("AuditWorkerConfig.Timeout", "must be > 0 (0 for %v), got %v: a job without a timeout is never rescued by River after a crash", DefaultAuditTimeout, cfg.Timeout)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w := &AuditWorker{cfg: cfg, clients: map[string]*payonce.Client{}}
	for i, c := range cfg.Clients {
		if c == nil {
			return nil, invalid(fmt.Sprintf("AuditWorkerConfig.Clients[%d]", i), "is nil")
		}
		name := c.Provider().Name()
		if _, dup := w.clients[name]; dup {
			return nil, invalid(fmt.Sprintf("AuditWorkerConfig.Clients[%d]", i), "is a second client of provider %q", name)
		}
		w.clients[name] = c
	}
	return w, nil
}

// Timeout returns AuditWorkerConfig.Timeout.
func (w *AuditWorker) Timeout(*river.Job[AuditArgs]) time.Duration { return w.cfg.Timeout }

// AuditSummary is what one audit job found, recorded as the job's output.
type AuditSummary struct {
	Provider     string         `json:"provider"`
	From         time.Time      `json:"from"`
	To           time.Time      `json:"to"`
	Objects      int            `json:"objects"`
	Operations   int            `json:"operations"`
	Unattributed int            `json:"unattributed"`
	Counts       map[string]int `json:"counts,omitempty"`
	Differs      bool           `json:"differs"`
}

// Work runs the audit (see AuditWorker).
func (w *AuditWorker) Work(ctx context.Context, job *river.Job[AuditArgs]) error {
	a := job.Args
	c := w.clients[a.Provider]
	switch {
	case c == nil:
		return river.JobCancel(fmt.Errorf("riverpayonce: audit of provider %q: this worker has no client of it (AuditWorkerConfig.Clients)", a.Provider))
	case a.Window <= 0:
		return river.JobCancel(fmt.Errorf("riverpayonce: audit of %s: AuditArgs.Window must be > 0, got %v", a.Provider, a.Window))
	case a.Delay < 0:
		return river.JobCancel(fmt.Errorf("riverpayonce: audit of %s: AuditArgs.Delay must be >= 0, got %v", a.Provider, a.Delay))
	}
	// A provider audited from a downloaded report (Adyen's settlement
	// details report) cannot be audited by a job that has none: Client.Audit
	// would refuse every retry the same way. Cancel, and say what to run.
	if au, ok := c.Provider().(payonce.Auditor); ok && au.AuditInfo().NeedsReport {
		return river.JobCancel(fmt.Errorf("riverpayonce: audit of %s: its audit reads a report the merchant downloads (AuditParams.Report); run `payonce audit --provider %s --report FILE` or Client.Audit with the report instead", a.Provider, a.Provider))
	}
	// A provider whose listing lags (AuditInfo.Lag: PayPal's transaction
	// search) is audited that much further back whatever Delay says.
	delay := a.Delay
	if au, ok := c.Provider().(payonce.Auditor); ok {
		delay = max(delay, au.AuditInfo().Settled())
	}
	to := w.cfg.Now().Add(-delay)
	from := to.Add(-a.Window)
	rep, err := c.Audit(ctx, payonce.AuditParams{From: from, To: to})
	log := w.cfg.Logger.With("job_id", job.ID, "attempt", job.Attempt, "provider", a.Provider, "from", from, "to", to)
	if errors.Is(err, payonce.ErrNotAuditable) {
		return river.JobCancel(fmt.Errorf("riverpayonce: audit of %s: %w", a.Provider, err))
	}
	if err != nil {
		log.Warn("payonce: audit job failed", "error", err)
		return fmt.Errorf("riverpayonce: audit of %s from %s to %s: %w", a.Provider, from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	sum := AuditSummary{Provider: a.Provider, From: from.UTC(), To: to.UTC(), Objects: rep.Objects, Operations: rep.Operations,
		Unattributed: rep.Unattributed, Differs: rep.Differs()}
	for class, n := range rep.Counts {
		if n > 0 {
			if sum.Counts == nil {
				sum.Counts = map[string]int{}
			}
			sum.Counts[string(class)] = n
		}
	}
	// Output is advisory (River's UI shows it).
	_ = river.RecordOutput(ctx, sum)
	if sum.Differs {
		log.Warn("payonce: the audit found differences, recorded as findings", "counts", sum.Counts)
	} else {
		log.Info("payonce: audit job", "objects", sum.Objects, "operations", sum.Operations)
	}
	return nil
}

// AuditPeriodicJob returns a River periodic job that inserts the audit job
// of args every interval (not on start: an audit right after every deploy
// would repeat the last one). Its ID is AuditKind + ":" + args.Provider, so
// each provider's schedule is its own. Its insertions are unique by
// arguments within each interval-long period (River's UniqueOpts.ByPeriod,
// for an interval of a second or more): the schedule firing twice in one
// period (a new leader, a restart) audits once. Consecutive runs fall in
// consecutive periods. Window must be at least interval, so that the
// periods audited leave no gap. Add it to river.Config.PeriodicJobs of a client
// that also works the job (an AuditWorker):
//
//	job, err := riverpayonce.AuditPeriodicJob(riverpayonce.AuditArgs{
//		Provider: "stripe", Window: 25 * time.Hour, Delay: time.Hour,
//	}, 24*time.Hour)
//	cfg.PeriodicJobs = append(cfg.PeriodicJobs, job)
func AuditPeriodicJob(args AuditArgs, interval time.Duration) (*river.PeriodicJob, error) {
	switch {
	case args.Provider == "":
		return nil, invalid("args.Provider", "required: the provider to audit, e.g. \"stripe\"")
	case args.Window <= 0:
		return nil, invalid("args.Window", "must be > 0 (the length of the audited period), got %v", args.Window)
	case args.Delay < 0:
		return nil, invalid("args.Delay", "must be >= 0, got %v", args.Delay)
	case interval <= 0:
		return nil, invalid("interval", "must be > 0 (how often to audit, e.g. 24*time.Hour), got %v", interval)
	case args.Window < interval:
		// A window shorter than the interval leaves a gap between the
		// periods audited: an operation created in it is never audited.
		return nil, invalid("args.Window", "is %v, shorter than the interval %v: the periods audited would leave gaps; make it at least the interval (a little more covers a late run)", args.Window, interval)
	}
	var opts *river.InsertOpts
	if interval >= time.Second {
		// River refuses a ByPeriod under a second.
		opts = &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByPeriod: interval}}
	}
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return args, opts },
		&river.PeriodicJobOpts{ID: AuditKind + ":" + args.Provider}), nil
}
