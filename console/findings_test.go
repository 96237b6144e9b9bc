package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/console"
	"github.com/payonce/payonce/ledger"
)

// recordFindings records two audit findings: a status difference on op
// (a real operation) and an object the ledger has no record of.
func (e *env) recordFindings(t *testing.T, op ledger.Operation) []ledger.Finding {
	t.Helper()
	now := e.Clock.Now()
	require.NoError(t, e.Store.RecordFindings(e.Ctx, []ledger.NewFinding{
		{Provider: "stripe", Class: ledger.FindingStatusDiffers, OperationID: op.ID, ProviderRef: "pi_audit_1",
			Detail: "ledger in review, provider <b>succeeded</b>", PeriodFrom: now.Add(-24 * time.Hour), PeriodTo: now},
		{Provider: "stripe", Class: ledger.FindingUnknownToLedger, ProviderRef: "pi_audit_2",
			Detail: "a succeeded PaymentIntent names no operation of the ledger", PeriodFrom: now.Add(-24 * time.Hour), PeriodTo: now},
	}, now))
	fs, err := e.Store.ListFindings(e.Ctx, ledger.FindingFilter{Open: true})
	require.NoError(t, err)
	require.Len(t, fs, 2)
	return fs
}

var findingRowRE = submatches{regexp.MustCompile(`<tr data-finding="([0-9]+)"`)}

// submatches is a regexp whose first group is read from every match.
type submatches struct{ *regexp.Regexp }

func (s submatches) all(body string) []string {
	var out []string
	for _, m := range s.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// The findings page lists the open findings (the operation linked to its
// page, the detail escaped), the overview counts them; a viewer sees no
// form; a resolver acknowledges one with a note, recorded under the
// operator's name (not a form field), and it leaves the page. A missing
// note, an unknown id, a bad filter are said.
func TestFindingsPageAndAcknowledge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-audit", ledger.ReviewCodeStoredError, "stored 500")
	fs := e.recordFindings(t, op)
	viewer := e.browser(t, "vera:viewer")

	ov := viewer.page("/console/")
	require.Contains(t, ov.Body, `<a id="open-findings" href="/console/findings">2 open</a>`)
	require.Contains(t, ov.Body, `data-findings="stripe status_differs"`)
	require.Contains(t, ov.Body, `id="nav-findings"`)

	pg := viewer.page("/console/findings")
	require.Equal(t, []string{fmt.Sprint(fs[0].ID), fmt.Sprint(fs[1].ID)}, findingRowRE.all(pg.Body))
	require.Contains(t, pg.Body, `href="/console/ops/`+url.PathEscape(op.ID)+`"`)
	require.Contains(t, pg.Body, "pi_audit_2")
	require.Contains(t, pg.Body, "provider &lt;b&gt;succeeded&lt;/b&gt;", "the detail is escaped")
	require.NotContains(t, pg.Body, `class="ack"`, "a viewer sees no form")
	res := viewer.do(http.MethodPost, fmt.Sprintf("/console/findings/%d/ack", fs[0].ID), url.Values{"csrf": {"a-viewer-has-no-token"}, "note": {"x"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode, res.Body)
	require.Contains(t, res.Body, "vera is a viewer")

	only := viewer.page("/console/findings?class=unknown_to_ledger")
	require.Equal(t, []string{fmt.Sprint(fs[1].ID)}, findingRowRE.all(only.Body))
	bad := viewer.get("/console/findings?class=nonsense")
	require.Equal(t, http.StatusBadRequest, bad.StatusCode)
	require.Contains(t, bad.Body, "unknown_to_ledger, status_differs")

	alice := e.browser(t, "alice:resolver")
	pg = alice.page("/console/findings")
	require.Contains(t, pg.Body, fmt.Sprintf(`action="/console/findings/%d/ack"`, fs[0].ID))
	ackPath := fmt.Sprintf("/console/findings/%d/ack", fs[0].ID)

	// No CSRF token: refused, nothing recorded.
	res = alice.do(http.MethodPost, ackPath, url.Values{"note": {"refunded"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode, res.Body)

	kind, text := flashOf(t, alice.follow(alice.post("/console/findings", ackPath, url.Values{"note": {"  "}})).Body)
	require.Equal(t, "error", kind)
	require.Contains(t, text, "a note is required")

	require.Equal(t, http.StatusNotFound, alice.post("/console/findings", "/console/findings/abc/ack", url.Values{"note": {"x"}}).StatusCode)
	kind, text = flashOf(t, alice.follow(alice.post("/console/findings", "/console/findings/999999/ack", url.Values{"note": {"x"}})).Body)
	require.Equal(t, "error", kind)
	require.Contains(t, text, "no finding with id 999999")

	after := alice.follow(alice.post("/console/findings", ackPath, url.Values{"note": {"resolved as succeeded"}, "actor": {"mallory"}}))
	kind, text = flashOf(t, after.Body)
	require.Equal(t, "ok", kind, text)
	require.Contains(t, text, fmt.Sprintf("finding %d", fs[0].ID))
	require.Equal(t, []string{fmt.Sprint(fs[1].ID)}, findingRowRE.all(after.Body))

	all, err := e.Store.ListFindings(context.Background(), ledger.FindingFilter{})
	require.NoError(t, err)
	require.Equal(t, "alice", all[0].AckedBy, "the actor is the operator, not the form's field")
	require.Equal(t, "resolved as succeeded", all[0].AckNote)
	require.True(t, all[1].AckedAt.IsZero())
	require.Contains(t, alice.page("/console/").Body, `>1 open</a>`)

	// Acknowledged again (a resubmitted form): the first one stays.
	kind, text = flashOf(t, alice.follow(alice.post("/console/findings", ackPath, url.Values{"note": {"again"}})).Body)
	require.Equal(t, "error", kind)
	require.Contains(t, text, "already acknowledged by alice")
}

// No finding: the page and the overview say so.
func TestFindingsNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	b := e.browser(t, "alice:resolver")
	require.Contains(t, b.page("/console/findings").Body, "No open audit finding.")
	require.Contains(t, b.page("/console/").Body, `<p id="open-findings">No open audit finding.</p>`)
}

// brokenFindings fails AckFinding, and ListFindings when list is nil, with
// a database's error.
type brokenFindings struct {
	ledger.Store
	list []ledger.Finding
}

var errDB = errors.New("ledgerpg: failed to connect to `host=db.internal user=payments`")

func (s brokenFindings) ListFindings(context.Context, ledger.FindingFilter) ([]ledger.Finding, error) {
	if s.list == nil {
		return nil, errDB
	}
	return s.list, nil
}

func (brokenFindings) AckFinding(context.Context, ledger.AckFindingParams) (ledger.Finding, error) {
	return ledger.Finding{}, errDB
}

// A store error is logged, not shown: its text may name the database.
func TestFindingsStoreErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	browse := func(store ledger.Store) *browser {
		h, err := console.New(console.Config{Store: store, Identity: testIdentity, Now: e.Clock.Now})
		require.NoError(t, err)
		mux := http.NewServeMux()
		mux.Handle("/console/", http.StripPrefix("/console", h))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return (&env{E2E: e.E2E, srv: srv, handler: h}).browser(t, "alice:resolver")
	}
	res := browse(brokenFindings{Store: e.Store}).get("/console/findings")
	require.Equal(t, http.StatusInternalServerError, res.StatusCode)
	require.Contains(t, res.Body, "see the service&#39;s log")
	require.NotContains(t, res.Body, "db.internal")

	b := browse(brokenFindings{Store: e.Store, list: []ledger.Finding{{ID: 7, Provider: "stripe", Class: ledger.FindingDuplicated, ProviderRef: "pi_7", Detail: "two"}}})
	res = b.post("/console/findings", "/console/findings/7/ack", url.Values{"note": {"x"}})
	kind, text := flashOf(t, b.follow(res).Body)
	require.Equal(t, "error", kind)
	require.Contains(t, text, "acknowledging finding 7 failed")
	require.NotContains(t, text, "db.internal")
}
