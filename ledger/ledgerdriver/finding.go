package ledgerdriver

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/payonce/payonce/ledger"
)

// ParseFindingClass turns a stored or user-supplied string into a
// ledger.FindingClass, or returns an error naming the allowed values.
func ParseFindingClass(s string) (ledger.FindingClass, error) {
	return parseEnum("finding class", s, ledger.FindingClasses...)
}

// FindingKey is what makes two findings one (the unique index of the
// findings table): the same difference found again.
type FindingKey struct {
	Provider    string
	Class       ledger.FindingClass
	OperationID string
	ProviderRef string
}

// KeyOf is f's FindingKey.
func KeyOf(f ledger.NewFinding) FindingKey {
	return FindingKey{f.Provider, f.Class, f.OperationID, f.ProviderRef}
}

// ValidateFindings checks the arguments of Store.RecordFindings before
// anything is written: a set now, at most ledger.MaxFindingsPerCall
// findings, each valid (the error names its index: "fs[3].Class"), and no
// finding twice. A finding twice in one call would count as found by two
// audits (Times + 2), and PostgreSQL refuses to upsert one row twice in a
// statement: the caller merges them.
func ValidateFindings(fs []ledger.NewFinding, now time.Time) error {
	if now.IsZero() {
		return invalid("now", "must be set")
	}
	if len(fs) > ledger.MaxFindingsPerCall {
		return invalid("fs", "at most %d findings per call, got %d: record them in several calls", ledger.MaxFindingsPerCall, len(fs))
	}
	seen := make(map[FindingKey]int, len(fs))
	for i, f := range fs {
		if err := checkFinding(f); err != nil {
			var v *ledger.ValidationError
			if errors.As(err, &v) {
				v.Field = fmt.Sprintf("fs[%d].%s", i, v.Field)
			}
			return err
		}
		k := KeyOf(f)
		if j, dup := seen[k]; dup {
			return invalid(fmt.Sprintf("fs[%d]", i), "the same difference as fs[%d] (Provider, Class, OperationID and ProviderRef): merge them", j)
		}
		seen[k] = i
	}
	return nil
}

// checkFinding is ValidateFindings for one finding, naming its fields
// without the index.
func checkFinding(f ledger.NewFinding) error {
	switch {
	case f.Provider == "":
		return invalid("Provider", "must not be empty")
	case len(f.Provider) > 256:
		return invalid("Provider", "is %d bytes; at most 256", len(f.Provider))
	case f.OperationID == "" && f.ProviderRef == "":
		return invalid("OperationID", "or ProviderRef must be set: the operation or the provider's object the difference is about")
	case len(f.OperationID) > ledger.MaxFindingRefBytes:
		return invalid("OperationID", "is %d bytes; at most %d", len(f.OperationID), ledger.MaxFindingRefBytes)
	case len(f.ProviderRef) > ledger.MaxFindingRefBytes:
		return invalid("ProviderRef", "is %d bytes; at most %d", len(f.ProviderRef), ledger.MaxFindingRefBytes)
	case f.Detail == "":
		return invalid("Detail", "must not be empty: what differs, for a person")
	case len(f.Detail) > ledger.MaxTextBytes:
		return invalid("Detail", "is %d bytes; at most %d", len(f.Detail), ledger.MaxTextBytes)
	case f.PeriodFrom.IsZero():
		return invalid("PeriodFrom", "must be set: the start of the audited period")
	case f.PeriodTo.IsZero():
		return invalid("PeriodTo", "must be set: the end of the audited period")
	case !UTC(f.PeriodTo).After(UTC(f.PeriodFrom)):
		// Compared as stored (to the microsecond): a period that rounds
		// to nothing is refused, not stored empty.
		return invalid("PeriodTo", "must be after PeriodFrom (got %v, PeriodFrom %v)", f.PeriodTo, f.PeriodFrom)
	}
	if _, err := ParseFindingClass(string(f.Class)); err != nil {
		return invalid("Class", "%v", err)
	}
	return checkAllStored("Provider", f.Provider, "OperationID", f.OperationID, "ProviderRef", f.ProviderRef, "Detail", f.Detail)
}

// ValidateFindingFilter checks a FindingFilter.
func ValidateFindingFilter(f ledger.FindingFilter) error {
	if f.Class != "" {
		if _, err := ParseFindingClass(string(f.Class)); err != nil {
			return invalid("Class", "%v", err)
		}
	}
	if f.AfterID < 0 {
		return invalid("AfterID", "must be >= 0 (the ID of the last finding of the previous page), got %d", f.AfterID)
	}
	return checkListLimit(f.Limit)
}

// FindingLimit is f.Limit, or ledger.DefaultListLimit when it is zero.
func FindingLimit(f ledger.FindingFilter) int { return orDefault(f.Limit, ledger.DefaultListLimit) }

// ValidateAckFinding checks AckFindingParams.
func ValidateAckFinding(p ledger.AckFindingParams) error {
	switch {
	case p.ID <= 0:
		return invalid("ID", "must be a finding's ID (> 0), got %d", p.ID)
	case p.Actor == "":
		return invalid("Actor", "required: who acknowledges the finding")
	case len(p.Actor) > 256:
		return invalid("Actor", "is %d bytes; at most 256", len(p.Actor))
	case p.Note == "":
		return invalid("Note", "required: what was done about the finding")
	case len(p.Note) > ledger.MaxTextBytes:
		return invalid("Note", "is %d bytes; at most %d", len(p.Note), ledger.MaxTextBytes)
	case p.Now.IsZero():
		return invalid("Now", "must be set")
	}
	return checkAllStored("Actor", p.Actor, "Note", p.Note)
}

// FindingNotFound is the error of AckFinding for an unknown ID: it wraps
// ledger.ErrNotFound.
func FindingNotFound(id int64) error {
	return fmt.Errorf("%w: no audit finding %d", ledger.ErrNotFound, id)
}

// SortFindingCounts orders Stats.Findings: by provider (byte order), then
// class in the order of ledger.FindingClasses. A class that is not one of
// them is reported as ledger.ErrCorrupt.
func SortFindingCounts(cs []ledger.FindingCount) error {
	for _, c := range cs {
		if _, err := ParseFindingClass(string(c.Class)); err != nil {
			return fmt.Errorf("%w: audit findings of %q: %v", ledger.ErrCorrupt, c.Provider, err)
		}
	}
	slices.SortStableFunc(cs, func(a, b ledger.FindingCount) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider),
			cmp.Compare(slices.Index(ledger.FindingClasses, a.Class), slices.Index(ledger.FindingClasses, b.Class)))
	})
	return nil
}
