// What the SQL stores (ledgerpg and ledgersqlite) select for the ledger's
// list filters: each filter field set becomes one condition of the WHERE
// clause, the same in both stores.
// The stores keep their own placeholders and value encodings.

package sqlstore

import (
	"time"

	"github.com/payonce/payonce/ledger"
)

// AddCond appends a condition whose single "?" stands for arg.
type AddCond func(cond string, arg any)

// cond is one condition of a filter: added when its field is set.
type cond struct {
	set bool
	sql string // with a single "?" standing for arg
	arg any
}

// addSet adds the conditions that are set, in order.
func addSet(add AddCond, conds ...cond) {
	for _, c := range conds {
		if c.set {
			add(c.sql, c.arg)
		}
	}
}

// ListConds adds the conditions of f, a filter that passed Validate: its
// status, provider, kind and the ID to list after, each when set.
func ListConds(f ledger.ListFilter, add AddCond) {
	addSet(add,
		cond{f.Status != "", "status = ?", string(f.Status)},
		cond{f.Provider != "", "provider = ?", f.Provider},
		cond{f.Kind != "", "kind = ?", f.Kind},
		cond{f.AfterID != "", "id > ?", f.AfterID},
	)
}

// ReviewConds adds the conditions of f, a filter that passed Validate, beyond
// the status (the stores write status = 'manual_review' as a literal, to
// match the review index's predicate): its provider, kind, reason and
// entry time, each when set. at is the store's encoding of a time.
func ReviewConds(f ledger.ReviewFilter, at func(time.Time) any, add AddCond) {
	addSet(add,
		cond{f.Provider != "", "provider = ?", f.Provider},
		cond{f.Kind != "", "kind = ?", f.Kind},
		cond{f.Code != "", "review_code = ?", string(f.Code)},
		cond{f.Reason != "", "review_reason = ?", f.Reason},
		cond{!f.EnteredBefore.IsZero(), "review_at < ?", at(f.EnteredBefore)},
	)
}

// InboxConds adds the conditions of f, a filter that passed Validate, on the
// inbox table aliased w, whose outcomes are in the table outcomes (the
// store's name for payonce_webhook_outcomes): its provider, and entries
// with an outcome of its disposition or on its operation, each when set.
func InboxConds(f ledger.InboxFilter, outcomes string, add AddCond) {
	has := func(col string) string {
		return "EXISTS (SELECT 1 FROM " + outcomes + " o WHERE o.provider = w.provider AND o.event_id = w.event_id AND o." + col + " = ?)"
	}
	addSet(add,
		cond{f.Provider != "", "w.provider = ?", f.Provider},
		cond{f.Disposition != "", has("disposition"), string(f.Disposition)},
		cond{f.OperationID != "", has("operation_id"), f.OperationID},
	)
}
