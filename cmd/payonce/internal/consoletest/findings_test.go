package consoletest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// An audit finding in a real browser: the overview counts it, the findings
// page shows it with its operation linked, a resolver acknowledges it with
// a note and it leaves the page, recorded under the operator's name; a
// viewer sees it without the form.
//
// It needs the ledger's findings (Store.RecordFindings, ListFindings,
// AckFinding).
func TestConsoleFindingsInBrowser(t *testing.T) {
	b := newBrowser(t)
	users := userEntry(t, "alice@example.com", "resolver", "alice's pw") + "," + userEntry(t, "victor", "viewer", "victor's pw")
	w := newWorld(t, users, "order-2001")
	ctx := context.Background()
	opID := w.ids["order-2001"]
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	require.NoError(t, w.store.RecordFindings(ctx, []ledger.NewFinding{{Provider: "stripe", Class: ledger.FindingStatusDiffers,
		OperationID: opID, ProviderRef: "pi_found_by_audit", Detail: "ledger manual_review, Stripe succeeded (900 USD)",
		PeriodFrom: now.Add(-24 * time.Hour), PeriodTo: now}}, now))
	fs, err := w.store.ListFindings(ctx, ledger.FindingFilter{Open: true})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	row := fmt.Sprintf(`table#findings tr[data-finding="%d"]`, fs[0].ID)

	victor := b.tab(w.url)
	victor.login("victor", "victor's pw")
	victor.do("viewer's findings", chromedp.Navigate(w.url+"/findings"), chromedp.WaitVisible(chromedp.CSS(row)))
	require.False(t, victor.present(`form.ack`), "a viewer sees no acknowledge form")

	alice := b.tab(w.url)
	alice.login("alice@example.com", "alice's pw")
	alice.do("overview", chromedp.WaitVisible(chromedp.CSS(`#findings`)))
	require.Equal(t, "1 open", alice.text(`a#open-findings`))
	alice.do("findings page", chromedp.Click(chromedp.CSS(`a#open-findings`)), chromedp.WaitVisible(chromedp.CSS(row)))
	require.Equal(t, "/findings", alice.path())
	text := alice.text(row)
	require.Contains(t, text, "status_differs")
	require.Contains(t, text, "pi_found_by_audit")
	require.Contains(t, text, "Stripe succeeded (900 USD)")
	require.True(t, alice.present(row+` a.op[href="/ops/`+opID+`"]`), "the operation is linked to its page")
	alice.shot("findings")

	alice.do("acknowledge",
		chromedp.SendKeys(chromedp.CSS(row+` input[name="note"]`), "resolved as succeeded, pi_found_by_audit"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`button#ack-%d`, fs[0].ID))),
		chromedp.WaitVisible(chromedp.CSS(`#flash`)),
	)
	require.True(t, alice.present(`#flash.ok`), "flash: %s", alice.text(`#flash`))
	require.Equal(t, "/findings", alice.path())
	require.False(t, alice.present(row), "the acknowledged finding left the page")
	require.True(t, alice.present(`#no-findings`))
	alice.shot("findings-acknowledged")

	all, err := w.store.ListFindings(ctx, ledger.FindingFilter{})
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.Equal(t, "alice@example.com", all[0].AckedBy)
	require.Equal(t, "resolved as succeeded, pi_found_by_audit", all[0].AckNote)
	alice.do("overview again", chromedp.Click(chromedp.CSS(`a#nav-overview`)), chromedp.WaitVisible(chromedp.CSS(`#findings`)))
	require.Equal(t, "No open audit finding.", alice.text(`#open-findings`))
}
