package ledger

import (
	"context"
	"time"
)

// FindingClass names one kind of difference an audit found between the
// ledger and the provider's own records (payonce's Client.Audit). It is
// stored beside the finding: what programs compare and count.
type FindingClass string

const (
	// FindingUnknownToLedger: the provider holds an object that names a
	// payonce operation the ledger has no record of (a tombstone counts as
	// a record): money moved with nothing in the ledger.
	FindingUnknownToLedger FindingClass = "unknown_to_ledger"
	// FindingStatusDiffers: the ledger and the provider disagree on the
	// outcome (the ledger says failed or in review and the provider
	// succeeded; the ledger says succeeded and the provider failed, canceled
	// or reversed it).
	FindingStatusDiffers FindingClass = "status_differs"
	// FindingDuplicated: the provider holds more than one object that took
	// effect for one operation.
	FindingDuplicated FindingClass = "duplicated"
	// FindingContradicted: the provider's object has another amount or
	// currency than the operation's request.
	FindingContradicted FindingClass = "contradicted"
	// FindingMissingAtProvider: the ledger says succeeded and the provider
	// holds nothing for the operation in the period.
	FindingMissingAtProvider FindingClass = "missing_at_provider"
)

// FindingClasses lists every recorded finding class in a stable order.
// Objects that carry no payonce metadata are counted by an audit, not
// recorded, and have no class here.
var FindingClasses = []FindingClass{FindingUnknownToLedger, FindingStatusDiffers, FindingDuplicated,
	FindingContradicted, FindingMissingAtProvider}

// NewFinding is one difference an audit records (Store.RecordFindings).
type NewFinding struct {
	Provider string       // required
	Class    FindingClass // required, one of FindingClasses
	// OperationID is the payonce operation the difference concerns, when
	// one is known (the operation id the provider's object names, even
	// when the ledger has no record of it). ProviderRef is the provider's
	// object. At least one of the two is required.
	OperationID string
	ProviderRef string
	// Detail says, for a person, what differs (both sides' status, amount
	// and currency). Required. It must hold no secret.
	Detail string
	// PeriodFrom and PeriodTo are the audited period. Required, From < To.
	PeriodFrom time.Time
	PeriodTo   time.Time
}

// Finding is a recorded audit difference. The same difference found again
// (same Provider, Class, OperationID and ProviderRef) is one finding: a
// later audit updates LastFoundAt, Times, Detail and the period.
type Finding struct {
	ID           int64
	Provider     string
	Class        FindingClass
	OperationID  string
	ProviderRef  string
	Detail       string
	PeriodFrom   time.Time
	PeriodTo     time.Time
	FirstFoundAt time.Time
	LastFoundAt  time.Time
	// Times counts the audits that found it.
	Times int
	// AckedAt, AckedBy and AckNote record an operator's acknowledgement:
	// the finding stays (it is history) but is no longer open. Zero when
	// open. Finding it again does not reopen it.
	AckedAt time.Time
	AckedBy string
	AckNote string
}

// FindingFilter selects findings (Store.ListFindings). Zero fields do not
// filter.
type FindingFilter struct {
	Provider    string
	Class       FindingClass
	OperationID string
	// Open keeps the findings nobody acknowledged.
	Open bool
	// AfterID returns findings whose ID is greater (keyset paging; the
	// list is ordered by ID).
	AfterID int64
	// Limit defaults to 100; at most 10000.
	Limit int
}

// AckFindingParams are the arguments of Store.AckFinding.
type AckFindingParams struct {
	ID    int64     // required
	Actor string    // required: who acknowledged it
	Note  string    // required: why (what was done about it)
	Now   time.Time // required
}

// FindingCount is the number of open findings of one class (Stats.Findings).
type FindingCount struct {
	Provider string
	Class    FindingClass
	Open     int64
}

// findingStore is the part of Store that keeps audit findings; it is
// embedded in Store. Findings are history: Cleanup never deletes them.
type findingStore interface {
	// RecordFindings records the differences of one audit, in one
	// transaction: a new one is inserted, one already recorded (same
	// Provider, Class, OperationID, ProviderRef) gets LastFoundAt = now,
	// Times + 1, the new Detail and period (an acknowledged one stays
	// acknowledged). It never changes an operation. Everything is checked
	// before anything is written: one invalid finding and none is
	// recorded. Errors: validation errors naming the field and index
	// ("fs[3].Class"), for a zero now, more than MaxFindingsPerCall
	// findings (the caller records them in several calls) and one
	// difference twice in fs (the caller merges them: it would count as
	// found by two audits). An empty fs is a no-op.
	RecordFindings(ctx context.Context, fs []NewFinding, now time.Time) error
	// ListFindings returns findings matching the filter, ordered by ID
	// (empty, never nil, when none). Errors: validation errors naming the
	// field (an unknown Class, a negative AfterID, a Limit out of range).
	ListFindings(ctx context.Context, f FindingFilter) ([]Finding, error)
	// AckFinding records an operator's acknowledgement of a finding.
	// Errors: ErrNotFound, validation errors naming the field. A finding
	// already acknowledged keeps its first acknowledgement and returns it.
	AckFinding(ctx context.Context, p AckFindingParams) (Finding, error)
}
