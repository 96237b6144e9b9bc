package payonce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/payonce/payonce/ledger"
)

// Auditor is implemented by adapters whose provider lets payonce compare
// the ledger with the provider's own records (Client.Audit). It is
// optional: a Provider without it cannot be audited.
type Auditor interface {
	// AuditInfo says what an audit of this provider can see.
	AuditInfo() AuditInfo
}

// AuditLister is an Auditor that lists the provider's own objects of a
// period (the provider → ledger direction).
type AuditLister interface {
	Auditor
	// ListObjects calls yield for every object the provider holds that was
	// created in [q.From, q.To), in any order (an object yielded more than
	// once, as a report's journal does, counts once, in the state of its
	// row with the latest Created), read-only: it must never
	// create, capture, cancel or refund anything. hc sends its requests
	// (with the client's retries of safe reads, breaker and timeouts); the
	// lister paces itself within the provider's rate limits. An error from
	// yield stops the listing and is returned. yield must not be called
	// from two goroutines at once.
	ListObjects(ctx context.Context, hc HTTPDoer, q AuditQuery, yield func(AuditObject) error) error
}

// AuditInfo says what an audit of a provider can see.
type AuditInfo struct {
	// ListedKinds are the operation kinds whose objects ListObjects
	// returns (a Stripe PaymentIntent for a charge, a Refund for a
	// refund): a ledger operation of such a kind that succeeded must be
	// among them (ledger → provider). Empty when ListObjects is not
	// complete enough for that (a settlement report holds only what
	// settled).
	ListedKinds []Kind
	// ByLookup: the provider lists nothing; the audit checks each ledger
	// operation of the period with the adapter's Lookup (ledger →
	// provider), as Checkout.com allows.
	ByLookup bool
	// Margin widens the provider's listing on both sides of the period: an
	// object may be created a little before the ledger records the
	// operation (clock skew) or after (a late attempt).
	Margin time.Duration
	// Directions says, for people, what the audit covers, e.g.
	// "provider → ledger: PaymentIntents and Refunds by created".
	Directions string
	// NeedsReport: ListObjects reads AuditQuery.Report (a settlement
	// report the merchant downloads), so Client.Audit refuses a call
	// without one and a Reconciler's scheduled audits skip the provider.
	NeedsReport bool
	// Lag is how long after an object is made the provider's listing may
	// still miss it (PayPal's transaction search: up to 3 hours). An audit
	// of a period that ended less than Lag (plus Margin) ago would report
	// the objects not listed yet as missing, so Client.Audit refuses it,
	// and scheduled audits (ReconcilerConfig.Audit, riverpayonce) keep
	// their periods at least that far in the past whatever their Delay.
	Lag time.Duration
}

// Settled is how far before now an audit period must end for this
// provider's listing to hold everything of it: Lag plus Margin, or zero
// for a listing that does not lag.
func (i AuditInfo) Settled() time.Duration {
	if i.Lag <= 0 {
		return 0
	}
	return i.Lag + i.Margin
}

// AuditQuery is what ListObjects lists.
type AuditQuery struct {
	// From and To bound the objects' creation time: [From, To).
	From, To time.Time
	// Report is a report the merchant downloaded from the provider, for
	// providers audited from one (Adyen's settlement details report, CSV);
	// nil otherwise.
	Report io.Reader
}

// AuditState is what became of a provider's object, as an audit compares it.
type AuditState string

const (
	// AuditSucceeded: the object took effect (a charge authorized or
	// captured, a refund done).
	AuditSucceeded AuditState = "succeeded"
	// AuditFailed: the object never took effect (declined, refused, failed).
	AuditFailed AuditState = "failed"
	// AuditProcessing: the provider has not finished it.
	AuditProcessing AuditState = "processing"
	// AuditCanceled: an authorization canceled or voided (by a cancel, or
	// by the provider when it expired).
	AuditCanceled AuditState = "canceled"
	// AuditReversed: the object took effect and was undone afterwards (a
	// chargeback, a refund returned).
	AuditReversed AuditState = "reversed"
)

// AuditObject is one of the provider's objects, as ListObjects reads it.
type AuditObject struct {
	// Ref is the provider's id of the object.
	Ref string
	// OperationID is the payonce operation the object names (its metadata
	// or reference); empty when it carries no payonce metadata. Key is the
	// idempotency key its metadata holds, when the provider keeps one.
	OperationID string
	Key         string
	// Kind is the kind of the operation that made it (from the metadata),
	// or what the object is when it has no metadata (a PaymentIntent: a
	// charge; a Refund: a refund).
	Kind Kind
	// State is what became of it; Status is the provider's own word
	// (e.g. "requires_capture"), for people.
	State  AuditState
	Status string
	// Amount (minor units) and Currency (ISO 4217, upper case) are the
	// object's requested amount and currency.
	Amount   int64
	Currency string
	// Created is when the provider created it.
	Created time.Time
	// PaymentRef is the payment a refund, capture or cancel acts on.
	PaymentRef string
}

// AuditParams are the arguments of Client.Audit.
type AuditParams struct {
	// From and To are the period: provider objects created in [From, To)
	// (widened by AuditInfo.Margin) and ledger operations created in it.
	// Required, From before To.
	From, To time.Time
	// Report is the provider's report to read (AuditQuery.Report):
	// required when AuditInfo.NeedsReport, refused otherwise (the
	// provider would not read it).
	Report io.Reader
	// DryRun compares without recording findings in the ledger.
	DryRun bool
	// ListUnattributed lists the provider's objects that carry no payonce
	// metadata too (AuditReport.Unattributed counts them always), after
	// the differences: they share MaxListed, and never take a difference's
	// place in the list.
	ListUnattributed bool
	// MaxListed bounds AuditReport.Differences (default 1000); every
	// difference is still counted, recorded and passed to OnDifference.
	MaxListed int
	// OnDifference, when set, is called with every difference as it is found.
	OnDifference func(AuditDifference)
	// TempDir is where the comparison spills sorted runs to disk; default
	// os.TempDir().
	TempDir string
}

// AuditDifference is one difference between the ledger and the provider.
type AuditDifference struct {
	// Class is what kind of difference; empty for an unattributed object
	// listed on request.
	Class       ledger.FindingClass
	OperationID string
	ProviderRef string
	Kind        Kind
	// LedgerStatus is the ledger's status of the operation (empty when the
	// ledger has no record); ProviderState the provider's (empty when it
	// holds nothing).
	LedgerStatus  ledger.Status
	ProviderState AuditState
	// Detail says, for a person, what differs.
	Detail string
}

// AuditReport is the result of Client.Audit.
type AuditReport struct {
	Provider string
	From, To time.Time
	// Directions is AuditInfo.Directions.
	Directions string
	// Objects counts the provider's objects read; Operations the ledger's
	// operations of the period.
	Objects    int
	Operations int
	// Unattributed counts the provider's objects with no payonce metadata.
	Unattributed int
	// Counts is the number of differences per class.
	Counts map[ledger.FindingClass]int
	// Differences lists the first MaxListed differences; Truncated reports
	// that there were more.
	Differences []AuditDifference
	Truncated   bool
}

// Differs reports whether the audit found any difference.
func (r AuditReport) Differs() bool {
	for _, n := range r.Counts {
		if n > 0 {
			return true
		}
	}
	return false
}

// ErrNotAuditable: the client's provider does not implement Auditor.
var ErrNotAuditable = errors.New("payonce: the provider's adapter cannot audit (it does not implement payonce.Auditor)")

// defaultMaxListed is AuditParams.MaxListed's default.
const defaultMaxListed = 1000

// Audit compares the ledger with the provider's own records for the
// period [p.From, p.To) and reports, counts and (unless p.DryRun) records
// every difference as a finding (ledger.Store.RecordFindings; the same
// difference found again updates its finding).
//
// The audit is read-only towards the provider and the operations: it sends
// only GET (or HEAD) requests, through the client's read path (the retries
// of safe reads, the breaker and the timeouts a status lookup has), never a
// request that moves money, and it never changes an operation's status:
// a difference is for a person to look at, and the reconciler settles what
// is still open. What it writes is findings, nothing else.
//
// How (docs/ARCHITECTURE.md, "The audit"): both sides are sorted by
// operation id on disk (p.TempDir) and merge-joined, so that memory stays
// bounded whatever the number of operations in the period; see classify
// for the classes and their rules. A provider that lists nothing
// (AuditInfo.ByLookup) is audited by looking up each settled operation of
// the period.
//
// One ledger per provider account: the objects another service makes on
// the same account with payonce carry payonce metadata of operations this
// ledger never recorded, and each is unknown_to_ledger (the metadata names
// no service). An audit that fails after recording some batches of
// findings and is run again counts those findings twice (Times): both
// audits found them.
//
// Errors: ErrNotAuditable when the provider's adapter does not implement
// Auditor (or neither lists nor looks up); a *ValidationError naming the
// field of p that is wrong; otherwise the first error of the listing, the
// ledger or the recording, with the report of what was compared so far.
func (c *Client) Audit(ctx context.Context, p AuditParams) (AuditReport, error) {
	aud, ok := c.cfg.Provider.(Auditor)
	if !ok {
		return AuditReport{}, ErrNotAuditable
	}
	info := aud.AuditInfo()
	lister, lists := aud.(AuditLister)
	if !info.ByLookup && !lists {
		return AuditReport{}, fmt.Errorf("%w: it declares no lookup audit and has no ListObjects", ErrNotAuditable)
	}
	if err := p.check(info); err != nil {
		return AuditReport{}, err
	}
	if settled := c.cfg.Now().Add(-info.Settled()); info.Settled() > 0 && p.To.After(settled) {
		// A listing that lags shows an object only some time after it is
		// made: compared too early, every recent operation would look
		// missing at the provider.
		return AuditReport{}, invalid("AuditParams.To", "is %s, but %s's listing may lag %v behind (plus a %v margin): audit periods that end by %s",
			p.To.UTC().Format(time.RFC3339), c.cfg.Provider.Name(), info.Lag, info.Margin, settled.UTC().Format(time.RFC3339))
	}
	if p.MaxListed == 0 {
		p.MaxListed = defaultMaxListed
	}
	name := c.cfg.Provider.Name()
	a := &auditRun{c: c, p: p, info: info, provider: name,
		rep: AuditReport{Provider: name, From: p.From, To: p.To, Directions: info.Directions, Counts: map[ledger.FindingClass]int{}}}
	var err error
	if info.ByLookup {
		err = a.byLookup(ctx)
	} else {
		err = a.compare(ctx, lister)
	}
	if ferr := a.flush(ctx); err == nil {
		err = ferr
	}
	a.listDone()
	c.tel.audited(ctx, a.rep, err)
	return a.rep, err
}

// check validates the parameters of an audit of a provider that says info.
func (p AuditParams) check(info AuditInfo) error {
	switch {
	case p.From.IsZero():
		return invalid("AuditParams.From", "required: the start of the period")
	case p.To.IsZero():
		return invalid("AuditParams.To", "required: the end of the period (excluded)")
	case !p.From.Before(p.To):
		return invalid("AuditParams.To", "must be after From (%s), got %s", p.From.Format(time.RFC3339), p.To.Format(time.RFC3339))
	case p.MaxListed < 0:
		return invalid("AuditParams.MaxListed", "must be >= 0 (0: the default, %d), got %d", defaultMaxListed, p.MaxListed)
	case info.NeedsReport && !info.ByLookup && p.Report == nil:
		return invalid("AuditParams.Report", "required: this provider is audited from a report downloaded from it")
	case !info.NeedsReport && p.Report != nil:
		// Ignored, the report would leave the caller believing it was
		// compared with the ledger.
		return invalid("AuditParams.Report", "must be nil: this provider is audited from its API, not from a report")
	}
	return nil
}
