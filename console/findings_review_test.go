package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// The operation id and provider ref of a finding come from a provider's
// metadata: anyone with the API key writes them. Rendered in the findings
// page (text, the operation's link) and the overview (the provider in a
// query), none becomes markup or a URL of its own; a resolver's form with
// a forged CSRF token is refused and records nothing.
func TestFindingsProviderTextEscaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	now := e.Clock.Now()
	const evil = `javascript:alert(1)"><script>x</script>`
	require.NoError(t, e.Store.RecordFindings(e.Ctx, []ledger.NewFinding{
		{Provider: "stripe", Class: ledger.FindingUnknownToLedger, OperationID: evil, ProviderRef: `pi_"><img src=x onerror=y>`,
			Detail: "d", PeriodFrom: now.Add(-time.Hour), PeriodTo: now},
	}, now))
	alice := e.browser(t, "alice:resolver")
	pg := alice.page("/console/findings")
	require.NotContains(t, pg.Body, "<script>x")
	require.NotContains(t, pg.Body, "<img src=x")
	require.Contains(t, pg.Body, `href="/console/ops/`+url.PathEscape(evil)+`"`, "the id is a path segment of the operation's page")
	require.NotContains(t, pg.Body, `href="javascript:`)

	fs, err := e.Store.ListFindings(e.Ctx, ledger.FindingFilter{})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	res := alice.do(http.MethodPost, fmt.Sprintf("/console/findings/%d/ack", fs[0].ID), url.Values{"csrf": {"forged"}, "note": {"x"}})
	require.Equal(t, http.StatusForbidden, res.StatusCode, res.Body)
	fs, err = e.Store.ListFindings(e.Ctx, ledger.FindingFilter{})
	require.NoError(t, err)
	require.True(t, fs[0].AckedAt.IsZero(), "nothing acknowledged")
}
