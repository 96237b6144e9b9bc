// ledger.Store.Stats for the SQL stores (ledgerpg and ledgersqlite): the
// statement, whose text is the same in both (each store fills in its table
// name and scans the values its way), and the assembly of its rows into a
// ledger.Stats.
//
// The statement is one SELECT, so that every count comes from one snapshot
// (PostgreSQL under READ COMMITTED and SQLite in autocommit both give a
// statement one snapshot) and no operation moving between two statuses is
// counted twice or not at all. It takes no row locks and writes nothing.
//
// What it reads, and why that is bounded by the open work:
//
//   - pending, in_flight and unknown operations: the open-work index
//     (status, provider, kind, created_at) of migration 005, whose predicate
//     the statement repeats word for word so that the planners can use it.
//     The counts and the oldest creation time of each group are read from
//     the index alone; the oldest operation's ID is one lookup per group.
//   - manual_review operations: the review index (review_at, id) of
//     migration 001, and the rows it points at (for provider, kind and
//     reason). One lookup per (provider, kind, reason) finds the oldest ID.
//   - with IncludeSettled, succeeded and failed operations: every one of
//     them, the settled history. Only the caller who asks pays for it.

package sqlstore

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// The row kinds of the statement, its first column.
const (
	partOpen    = "open"    // one (status, provider, kind) of pending, in_flight, unknown
	partReview  = "review"  // one (provider, kind, reason) of manual_review
	partSettled = "settled" // one (status, provider, kind) of succeeded, failed
)

// The statement's branches. {{ops}} is the operations table as the store
// names it. The status lists are literals identical to the predicates of
// the partial indexes (open work: migration 005; review: migration 001), so
// that both planners prove each index usable.
const (
	openBranch = `SELECT 'open' AS part, g.status, g.provider, g.kind, '' AS code, '' AS reason, g.n, g.since,
	(SELECT o.id FROM {{ops}} o
	  WHERE o.status IN ('pending', 'in_flight', 'unknown')
	    AND o.status = g.status AND o.provider = g.provider AND o.kind = g.kind AND o.created_at = g.since
	  ORDER BY o.id LIMIT 1) AS id
FROM (SELECT status, provider, kind, count(*) AS n, min(created_at) AS since
	FROM {{ops}}
	WHERE status IN ('pending', 'in_flight', 'unknown')
	GROUP BY status, provider, kind) g`

	reviewBranch = `SELECT 'review', 'manual_review', g.provider, g.kind, g.code, g.reason, g.n, g.since,
	(SELECT o.id FROM {{ops}} o
	  WHERE o.status = 'manual_review'
	    AND o.review_at = g.since AND o.provider = g.provider AND o.kind = g.kind
	    AND coalesce(o.review_code, '') = g.code AND coalesce(o.review_reason, '') = g.reason
	  ORDER BY o.id LIMIT 1)
FROM (SELECT provider, kind, coalesce(review_code, '') AS code, coalesce(review_reason, '') AS reason, count(*) AS n,
		min(review_at) AS since
	FROM {{ops}}
	WHERE status = 'manual_review'
	GROUP BY provider, kind, coalesce(review_code, ''), coalesce(review_reason, '')) g`

	// No index helps here, nor should one: an index over every settled row
	// would cost every write that settles an operation, for a count only
	// operators ask for.
	settledBranch = `SELECT 'settled', status, provider, kind, '', '', count(*), NULL, NULL
FROM {{ops}}
WHERE status IN ('succeeded', 'failed')
GROUP BY status, provider, kind`
)

// StatsStatement returns the text of Stats' statement on the operations table
// ops (as the store's SQL names it, quoted and qualified if need be), with
// the settled branch when includeSettled. It has no parameters. Its columns
// are those of StatsRow, in order: part, status, provider, kind, code, reason, count,
// since (the store's time encoding, NULL for settled rows) and id (NULL for
// settled rows).
func StatsStatement(ops string, includeSettled bool) string {
	branches := []string{openBranch, reviewBranch}
	if includeSettled {
		branches = append(branches, settledBranch)
	}
	return strings.ReplaceAll(strings.Join(branches, "\nUNION ALL\n"), "{{ops}}", ops)
}

// StatsRow is one row of the statement, its values decoded by the store.
type StatsRow struct {
	Part     string
	Status   string
	Provider string
	Kind     string
	Code     string // the review code; empty but for review rows
	Reason   string
	Count    int64
	// Since is the oldest creation time (open) or review time (review); zero
	// for settled rows, and for a group whose times are all NULL.
	Since time.Time
	// ID is the operation with Since and the smallest ID among those; empty
	// for settled rows.
	ID string
}

// Dest returns the scan destinations of the row's columns before since,
// in the statement's order: part, status, provider, kind, code, reason,
// count.
// Each store scans since and id its own way after them.
func (r *StatsRow) Dest() []any {
	return []any{&r.Part, &r.Status, &r.Provider, &r.Kind, &r.Code, &r.Reason, &r.Count}
}

// AssembleStats turns the rows of the statement into a ledger.Stats, ordered as
// ledger.Stats documents. The manual_review entries of Open and Oldest are
// the sums and minimums of the review rows of their provider and kind.
// Settled is nil unless includeSettled. An unexpected row (a part or status
// the statement cannot produce) is reported as ledger.ErrCorrupt.
func AssembleStats(rows []StatsRow, includeSettled bool) (ledger.Stats, error) {
	st := ledger.Stats{Open: []ledger.StatusCount{}, Oldest: []ledger.OldestOpen{}, Reviews: []ledger.ReasonCount{}, Consumers: []ledger.ConsumerLag{}}
	if includeSettled {
		st.Settled = []ledger.StatusCount{}
	}
	type group struct{ provider, kind string }
	inReview := map[group]int{} // index in st.Open and st.Oldest
	for _, r := range rows {
		status, err := ledgerdriver.ParseStatus(r.Status)
		if err != nil {
			return ledger.Stats{}, fmt.Errorf("%w: stats: %v", ledger.ErrCorrupt, err)
		}
		count := ledger.StatusCount{Provider: r.Provider, Kind: r.Kind, Status: status, Count: r.Count}
		oldest := ledger.OldestOpen{Provider: r.Provider, Kind: r.Kind, Status: status, Since: r.Since, OperationID: r.ID}
		switch {
		case r.Part == partOpen && !status.Terminal():
			st.Open = append(st.Open, count)
			st.Oldest = append(st.Oldest, oldest)
		case r.Part == partReview && status == ledger.StatusManualReview:
			var code ledger.ReviewCode
			if r.Code != "" {
				if code, err = ledgerdriver.ParseReviewCode(r.Code); err != nil {
					return ledger.Stats{}, fmt.Errorf("%w: stats: %v", ledger.ErrCorrupt, err)
				}
			}
			st.Reviews = append(st.Reviews, ledger.ReasonCount{Provider: r.Provider, Kind: r.Kind, Code: code, Reason: r.Reason, Count: r.Count})
			g := group{r.Provider, r.Kind}
			i, seen := inReview[g]
			if !seen {
				inReview[g] = len(st.Open)
				st.Open = append(st.Open, count)
				st.Oldest = append(st.Oldest, oldest)
				continue
			}
			st.Open[i].Count += r.Count
			if earlier(oldest, st.Oldest[i]) {
				st.Oldest[i] = oldest
			}
		case r.Part == partSettled && status.Final() && includeSettled:
			st.Settled = append(st.Settled, count)
		default:
			return ledger.Stats{}, fmt.Errorf("%w: stats: unexpected row %q of status %s", ledger.ErrCorrupt, r.Part, status)
		}
	}
	byGroup := func(a, b ledger.StatusCount) int {
		return compareGroup(a.Provider, a.Kind, a.Status, b.Provider, b.Kind, b.Status)
	}
	slices.SortFunc(st.Open, byGroup)
	slices.SortFunc(st.Settled, byGroup)
	slices.SortFunc(st.Oldest, func(a, b ledger.OldestOpen) int {
		return compareGroup(a.Provider, a.Kind, a.Status, b.Provider, b.Kind, b.Status)
	})
	slices.SortFunc(st.Reviews, func(a, b ledger.ReasonCount) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Reason, b.Reason))
	})
	return st, nil
}

// earlier reports whether a is older than b: an earlier time (a known time
// before none), then the smaller ID.
func earlier(a, b ledger.OldestOpen) bool {
	switch {
	case a.Since.IsZero() != b.Since.IsZero():
		return b.Since.IsZero()
	case !a.Since.Equal(b.Since):
		return a.Since.Before(b.Since)
	}
	return a.OperationID < b.OperationID
}

// compareGroup orders by provider, kind, then status in the order of
// ledger.Statuses.
func compareGroup(p1, k1 string, s1 ledger.Status, p2, k2 string, s2 ledger.Status) int {
	return cmp.Or(cmp.Compare(p1, p2), cmp.Compare(k1, k2),
		cmp.Compare(slices.Index(ledger.Statuses, s1), slices.Index(ledger.Statuses, s2)))
}
