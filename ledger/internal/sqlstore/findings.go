// Audit findings for the SQL stores: the column list, the filter's
// conditions and Stats.Findings' statement, the same text in both stores
// (each store keeps its own placeholders, time encoding and upsert).

package sqlstore

import "github.com/payonce/payonce/ledger"

// FindingColumns are the columns of payonce_audit_findings (migration 012)
// the stores read, in the order they scan them.
const FindingColumns = "id, provider, class, operation_id, provider_ref, detail, period_from, period_to, first_found_at, last_found_at, times, acked_at, acked_by, ack_note"

// OpenFinding is the open-findings index's predicate (migration 012),
// written as a literal in every statement that should use the index.
const OpenFinding = "acked_at IS NULL"

// FindingConds adds the conditions of f, a filter that passed
// ledgerdriver.ValidateFindingFilter: its provider, class, operation,
// openness and the ID to list after, each when set.
func FindingConds(f ledger.FindingFilter, add AddCond) {
	addSet(add,
		c1(f.Provider != "", "provider = ?", f.Provider),
		c1(f.Class != "", "class = ?", string(f.Class)),
		c1(f.OperationID != "", "operation_id = ?", f.OperationID),
		cond{f.Open, OpenFinding, nil},
		c1(f.AfterID > 0, "id > ?", f.AfterID),
	)
}

// FindingStatsStatement is the statement of Stats.Findings on the findings
// table t: the open findings counted by provider and class, read from the
// open-findings index alone (its predicate repeated), so its cost follows
// the open findings, never the acknowledged history. Its rows: provider,
// class, count; ledgerdriver.SortFindingCounts orders them.
func FindingStatsStatement(t string) string {
	return "SELECT provider, class, count(*) FROM " + t + " WHERE " + OpenFinding + " GROUP BY provider, class"
}
