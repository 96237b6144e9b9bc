// What the SQL stores (ledgerpg and ledgersqlite) select for the ledger's
// list filters: each filter field set becomes one condition of the WHERE
// clause, the same in both stores.
// The stores keep their own placeholders and value encodings.

package sqlstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/payonce/payonce/ledger"
)

// AddCond appends a condition whose "?"s stand for args, in order.
type AddCond func(cond string, args ...any)

// cond is one condition of a filter: added when its field is set.
type cond struct {
	set  bool
	sql  string // with one "?" per arg
	args []any
}

// c1 is a condition of one argument.
func c1(set bool, sql string, arg any) cond { return cond{set, sql, []any{arg}} }

// addSet adds the conditions that are set, in order.
func addSet(add AddCond, conds ...cond) {
	for _, c := range conds {
		if c.set {
			add(c.sql, c.args...)
		}
	}
}

// ListConds adds the conditions of f, a filter that passed Validate: its
// status, provider, kind, key, creation range and the ID to list after,
// each when set. Key is the unique key constraint's column: at most one
// row, found by its index. at is the store's encoding of a time.
// f.ProviderRef is not among them: see RefConds.
//
// No index holds created_at for every operation, deliberately: one more
// index entry on every insert, for an audit's occasional read. A created
// range is a filter on the rows the rest of the statement reads: the
// primary key in ID order from AfterID (or the table, as the planner
// prefers), until Limit rows match. A page costs about Limit divided by
// the share of operations in the range; paging through a whole range reads
// the table once.
func ListConds(f ledger.ListFilter, at func(time.Time) any, add AddCond) {
	addSet(add,
		c1(f.Status != "", "status = ?", string(f.Status)),
		c1(f.Provider != "", "provider = ?", f.Provider),
		c1(f.Kind != "", "kind = ?", f.Kind),
		c1(f.Key != "", "key = ?", f.Key),
		c1(!f.CreatedFrom.IsZero(), "created_at >= ?", at(f.CreatedFrom)),
		c1(!f.CreatedBefore.IsZero(), "created_at < ?", at(f.CreatedBefore)),
		c1(f.AfterID != "", "id > ?", f.AfterID),
	)
}

// ProviderKind is one (provider, kind) of the operations that have a
// provider reference.
type ProviderKind struct{ Provider, Kind string }

// NextRefPair finds the first (provider, kind) after (after.Provider,
// after.Kind), or the first of all when first is set, among the operations
// with a provider reference, restricted to f's provider and kind when set:
// one probe of the provider reference index (NextRefPairQuery). ok is
// false when there is none.
type NextRefPair func(after ProviderKind, first bool) (next ProviderKind, ok bool, err error)

// NextRefPairQuery is the statement of one NextRefPair probe on the table
// ops with "?" placeholders, and its arguments: the first (provider, kind)
// after after (of all when first), of f's provider when set. Each form
// seeks in the index (provider, kind, provider_ref) and reads one entry:
// an equality on provider then a range on kind, or a row-value range on
// (provider, kind). (An equality on kind is not written: after a
// provider's last kind, kind = ? would have the probe walk every entry of
// the next provider's smaller kinds; RefConds keeps f's kind itself.)
// Only the conditions that apply are written (no "? OR ..."), so that a
// cached generic plan seeks too.
func NextRefPairQuery(ops string, f ledger.ListFilter, after ProviderKind, first bool) (string, []any) {
	q := "SELECT provider, kind FROM " + ops + " WHERE provider_ref IS NOT NULL"
	var args []any
	switch {
	case f.Provider != "" && first:
		q += " AND provider = ?"
		args = append(args, f.Provider)
	case f.Provider != "":
		q += " AND provider = ? AND kind > ?"
		args = append(args, f.Provider, after.Kind)
	case !first:
		q += " AND (provider, kind) > (?, ?)"
		args = append(args, after.Provider, after.Kind)
	}
	return q + " ORDER BY provider, kind LIMIT 1", args
}

// refPairs are the (provider, kind) pairs under which f.ProviderRef may be
// recorded: f's own when it names both (no probe), else those the probes
// find, of f's kind when set.
func refPairs(f ledger.ListFilter, next NextRefPair) ([]ProviderKind, error) {
	if f.Provider != "" && f.Kind != "" {
		return []ProviderKind{{f.Provider, f.Kind}}, nil
	}
	var (
		pairs []ProviderKind
		after ProviderKind
	)
	for probes := 0; ; probes++ {
		if probes == MaxRefPairs {
			return nil, fmt.Errorf("more than %d (provider, kind) pairs with provider references", MaxRefPairs)
		}
		pk, found, err := next(after, probes == 0)
		if err != nil || !found {
			return pairs, err
		}
		after = pk
		if f.Kind == "" || pk.Kind == f.Kind {
			pairs = append(pairs, pk)
		}
	}
}

// MaxRefPairs bounds the (provider, kind) pairs RefConds enumerates: a
// ledger has a handful of providers and four kinds.
const MaxRefPairs = 1000

// RefConds adds f.ProviderRef's condition when set, for ListFilter. The
// provider reference index (migration 004) is on (provider, kind,
// provider_ref): a condition on provider_ref alone cannot seek in it (the
// planners would read the whole index, one entry per settled operation),
// so RefConds first enumerates the (provider, kind) pairs in the index,
// one probe each (a loose index scan), and then asks for provider_ref
// under each pair: one seek per pair. ok is false when no operation can
// match (no pair): the caller returns no rows without asking.
func RefConds(f ledger.ListFilter, next NextRefPair, add AddCond) (ok bool, err error) {
	if f.ProviderRef == "" {
		return true, nil
	}
	pairs, err := refPairs(f, next)
	if err != nil {
		return false, err
	}
	if len(pairs) == 0 {
		return false, nil
	}
	var (
		arms []string
		args []any
	)
	for _, pk := range pairs {
		arms = append(arms, "(provider = ? AND kind = ? AND provider_ref = ?)")
		args = append(args, pk.Provider, pk.Kind, f.ProviderRef)
	}
	// The partial index's predicate, written out for the planners.
	add("provider_ref IS NOT NULL AND ("+strings.Join(arms, " OR ")+")", args...)
	return true, nil
}

// ReviewConds adds the conditions of f, a filter that passed Validate, beyond
// the status (the stores write status = 'manual_review' as a literal, to
// match the review index's predicate): its provider, kind, reason and
// entry time, each when set. at is the store's encoding of a time.
func ReviewConds(f ledger.ReviewFilter, at func(time.Time) any, add AddCond) {
	addSet(add,
		c1(f.Provider != "", "provider = ?", f.Provider),
		c1(f.Kind != "", "kind = ?", f.Kind),
		c1(f.Code != "", "review_code = ?", string(f.Code)),
		c1(f.Reason != "", "review_reason = ?", f.Reason),
		c1(!f.EnteredBefore.IsZero(), "review_at < ?", at(f.EnteredBefore)),
		// The keyset, as a row value in the review index's column order
		// (review_at, id): both planners seek to it and read on, whatever
		// the page's depth.
		cond{f.AfterID != "", "(review_at, id) > (?, ?)", []any{at(f.AfterReviewAt), f.AfterID}},
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
		c1(f.Provider != "", "w.provider = ?", f.Provider),
		c1(f.Disposition != "", has("disposition"), string(f.Disposition)),
		c1(f.OperationID != "", has("operation_id"), f.OperationID),
	)
}
