// Stats.Inbox for the SQL stores: the statement (the same text in both,
// with "?" for InboxSince twice) and the assembly of its rows.

package sqlstore

import (
	"fmt"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// InboxStatsStatement is the statement of Stats.Inbox on the inbox tables:
// webhooks is the FROM item of the entries, aliased w (the store's name
// for payonce_webhooks, with what the store needs to add), outcomes the
// name of payonce_webhook_outcomes. One SELECT: both
// branches read one snapshot. Each starts from the entries received at or
// after its "?" (InboxSince), a range of the received-at index (migration
// 004), and the outcomes of those entries by their primary key, so its cost
// is bounded by what arrived since then, never by the whole inbox.
//
// Its rows: provider, disposition ("" for the row of all entries), entries,
// outcomes (0 in the "" row: AssembleInbox sums them).
func InboxStatsStatement(webhooks, outcomes string) string {
	return `SELECT w.provider, '' AS disposition, count(*) AS entries, 0 AS outcomes
FROM ` + webhooks + `
WHERE w.received_at >= ?
GROUP BY w.provider
UNION ALL
SELECT w.provider, o.disposition, count(DISTINCT w.event_id), count(*)
FROM ` + webhooks + `
JOIN ` + outcomes + ` o ON o.provider = w.provider AND o.event_id = w.event_id
WHERE w.received_at >= ?
GROUP BY w.provider, o.disposition
ORDER BY 1, 2`
}

// InboxRow is one row of InboxStatsStatement as read.
type InboxRow struct {
	Provider, Disposition string
	Entries, Outcomes     int64
}

// AssembleInbox turns the rows of InboxStatsStatement into Stats.Inbox:
// every disposition checked (a value the store cannot read is reported as
// corrupt), the "" row's Outcomes the sum of its provider's outcomes.
// Empty, not nil, when there are no rows.
func AssembleInbox(rows []InboxRow) ([]ledger.InboxCount, error) {
	out := make([]ledger.InboxCount, 0, len(rows))
	all := map[string]int{} // provider -> index of its "" row in out
	for _, r := range rows {
		c := ledger.InboxCount{Provider: r.Provider, Entries: r.Entries, Outcomes: r.Outcomes}
		if r.Disposition == "" {
			all[r.Provider] = len(out)
			out = append(out, c)
			continue
		}
		d, err := ledgerdriver.ParseWebhookDisposition(r.Disposition)
		if err != nil {
			return nil, fmt.Errorf("%w: webhook inbox of %q: %v", ledger.ErrCorrupt, r.Provider, err)
		}
		c.Disposition = d
		if i, ok := all[r.Provider]; ok {
			out[i].Outcomes += r.Outcomes
		}
		out = append(out, c)
	}
	return out, nil
}
