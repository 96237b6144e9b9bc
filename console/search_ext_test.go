package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
)

// Search by the provider's reference and by the current key (after a
// resend, the key of generation 1; the old key finds nothing).
func TestSearchByProviderRefAndKey(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		e := newEnv(t, envOpts{pg: pg})
		b := e.browser(t, "vera:viewer")
		op := e.inReview(t, "order-ref", ledger.ReviewCodeProcessing, "still processing")
		_, err := e.Client.Resolve(e.Ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveSucceeded,
			Actor: "bob", Note: "dashboard", ProviderRef: "pi_found_by_ref"})
		require.NoError(t, err)
		a := b.get("/console/search?q=pi_found_by_ref")
		require.Equal(t, http.StatusSeeOther, a.StatusCode, a.Body)
		require.Equal(t, opPath(op.ID), a.Header.Get("Location"))

		// A resend moves the operation to a new key (payonce.Resolve: the
		// ledger alone, no provider lookup, for the test).
		op2 := e.inReview(t, "order-key", ledger.ReviewCodeWindowPassed, payonce.ReasonWindowPassed)
		resent, err := payonce.Resolve(e.Ctx, e.Store, payonce.ResolveParams{OperationID: op2.ID, Outcome: ledger.ResolveResend,
			Actor: "bob", Note: "nothing at the provider", Now: e.Clock.Now()})
		require.NoError(t, err)
		require.NotEqual(t, op2.ID, resent.Key)
		a = b.get("/console/search?q=" + url.QueryEscape(resent.Key))
		require.Equal(t, http.StatusSeeOther, a.StatusCode, a.Body)
		require.Equal(t, opPath(op2.ID), a.Header.Get("Location"))
		a = b.page("/console/search?q=pi_nobody")
		require.Contains(t, a.Body, `id="no-hits"`)
	})
}

// The overview shows the webhook inbox counts of the last day.
func TestOverviewInbox(t *testing.T) {
	e := newEnv(t, envOpts{})
	_, err := e.Store.RecordWebhook(e.Ctx, ledger.RecordWebhookParams{Now: e.Clock.Now(),
		Event: ledger.WebhookEvent{Provider: "stripe", ID: "evt_console", Type: "payment_intent.<script>", Unreadable: "no object <b>"}})
	require.NoError(t, err)
	a := e.browser(t, "vera:viewer").page("/console/")
	require.Contains(t, a.Body, `data-inbox="stripe recorded (every entry)"`)
	require.Contains(t, a.Body, `data-inbox="stripe unreadable"`)
}
