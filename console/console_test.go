package console_test

import (
	"context"
	"database/sql"
	"errors"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/console"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

func TestNewRefusesMissingStoreOrIdentity(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	_, err := console.New(console.Config{Identity: testIdentity})
	require.ErrorContains(t, err, "Store is required")
	_, err = console.New(console.Config{Store: e.Store})
	require.ErrorContains(t, err, "Identity is required")
	_, err = console.New(console.Config{Store: e.Store, Identity: testIdentity, CSRFKey: []byte("short")})
	require.ErrorContains(t, err, "CSRFKey")
	_, err = console.New(console.Config{Store: e.Store, Identity: testIdentity, Clients: []*payonce.Client{e.Client, e.Client}})
	require.ErrorContains(t, err, "two clients")
}

// The queue is oldest first, filtered, and its keyset pages cover every
// operation exactly once.
func TestReviewQueueFiltersAndPages(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		e := newEnv(t, envOpts{pg: pg})
		var stored, passed []string
		for i := range 120 {
			code, reason := ledger.ReviewCodeStoredError, "stored 500, nothing found at the provider"
			if i%3 == 0 {
				code, reason = ledger.ReviewCodeWindowPassed, payonce.ReasonWindowPassed
			}
			op := e.inReview(t, orderName(i), code, reason)
			if code == ledger.ReviewCodeStoredError {
				stored = append(stored, op.ID)
			} else {
				passed = append(passed, op.ID)
			}
		}
		b := e.browser(t, "vera:viewer")
		var got []string
		path := "/console/review"
		pages := 0
		for {
			a := b.page(path)
			require.Contains(t, a.Body, `<table id="review-queue">`)
			require.Contains(t, a.Body, `<form id="filter"`)
			got = append(got, rowsOf(a.Body)...)
			pages++
			require.Less(t, pages, 10, "the pages must end")
			m := nextRE.FindStringSubmatch(a.Body)
			if m == nil {
				break
			}
			path = html.UnescapeString(m[1])
			require.True(t, strings.HasPrefix(path, "/console/review?"), path)
		}
		require.Equal(t, 3, pages)
		require.Equal(t, interleave(stored, passed), got, "every operation once, oldest first")

		// A filter by reason, across pages too.
		a := b.page("/console/review?code=window_passed")
		require.Equal(t, passed, rowsOf(a.Body))
		a = b.page("/console/review?code=stored_error&provider=stripe&kind=charge")
		first := rowsOf(a.Body)
		require.Equal(t, stored[:50], first)
		m := nextRE.FindStringSubmatch(a.Body)
		require.NotNil(t, m)
		require.Contains(t, html.UnescapeString(m[1]), "code=stored_error", "the next page keeps the filter")
		a = b.page(html.UnescapeString(m[1]))
		require.Equal(t, stored[50:], rowsOf(a.Body))
		require.NotContains(t, a.Body, `id="next"`)

		// Age: only what entered review at least that long ago.
		a = b.page("/console/review?older_than=5m")
		require.Empty(t, rowsOf(a.Body), "each entered review less than 3 minutes ago: %v", e.Clock.Now())
		e.Clock.Advance(time.Hour)
		cut := e.Clock.Now().Add(-62 * time.Minute)
		var old []string
		for _, id := range passed {
			if e.op(t, id).ReviewAt.Before(cut) {
				old = append(old, id)
			}
		}
		require.NotEmpty(t, old)
		require.Less(t, len(old), len(passed))
		a = b.page("/console/review?older_than=62m&code=window_passed")
		require.Equal(t, old, rowsOf(a.Body), "only what entered review 62 minutes ago and more")
		a = b.page("/console/review?older_than=59m&code=window_passed")
		require.Equal(t, passed, rowsOf(a.Body))

		// Bad filters are refused with a message.
		for _, q := range []string{"code=nope", "older_than=yesterday", "after=garbage"} {
			a = b.get("/console/review?" + q)
			require.Equal(t, http.StatusBadRequest, a.StatusCode, q)
			require.Contains(t, a.Body, `id="error"`, q)
		}
	})
}

// interleave is the queue's order of the test above: operation i is
// passed when i%3 == 0.
func interleave(stored, passed []string) []string {
	var out []string
	s, p := 0, 0
	for i := range len(stored) + len(passed) {
		if i%3 == 0 {
			out = append(out, passed[p])
			p++
		} else {
			out = append(out, stored[s])
			s++
		}
	}
	return out
}

func TestSearchByOrderIDAndOperationID(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		e := newEnv(t, envOpts{pg: pg})
		op := e.inReview(t, "order-search", ledger.ReviewCodeStoredError, "stored 500")
		refund := e.refundInReview(t, "order-search", 1)
		b := e.browser(t, "vera:viewer")

		// An operation id: straight to it.
		a := b.get("/console/search?q=" + url.QueryEscape(op.ID))
		require.Equal(t, http.StatusSeeOther, a.StatusCode)
		require.Equal(t, opPath(op.ID), a.Header.Get("Location"))

		// An order id: its charge and its refund.
		a = b.page("/console/search?q=order-search")
		require.ElementsMatch(t, []string{op.ID, refund.ID}, rowsOf(a.Body))
		// One hit goes to the operation.
		e.inReview(t, "order-single", ledger.ReviewCodeStoredError, "stored 500")
		a = b.get("/console/search?q=order-single")
		require.Equal(t, http.StatusSeeOther, a.StatusCode)

		a = b.page("/console/search?q=order-nobody")
		require.Contains(t, a.Body, `id="no-hits"`)
		a = b.get("/console/search?q=" + strings.Repeat("x", 2000))
		require.Equal(t, http.StatusBadRequest, a.StatusCode)
	})
}

// refundInReview records refund n of order in review.
func (e *env) refundInReview(t *testing.T, order string, n int) ledger.Operation {
	t.Helper()
	nop, err := e.Client.PrepareRefund(e.Ctx, payonce.RefundParams{OrderID: order, RefundSeq: n, PaymentRef: "pi_search", Amount: 100, Currency: "USD"})
	require.NoError(t, err)
	return e.record(t, nop, ledger.ReviewCodeStoredError, "stored 500")
}

// Resolving failed: the actor is the signed-in operator whatever the form
// says, the operation leaves the queue, and the timeline shows the
// resolution.
func TestResolveFailedLeavesTheQueue(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		e := newEnv(t, envOpts{pg: pg})
		op := e.inReview(t, "order-fail", ledger.ReviewCodeStoredError, "stored 500, nothing found at the provider")
		b := e.browser(t, "alice:resolver")
		page := b.page(opPath(op.ID))
		for _, id := range []string{`id="op-id"`, `id="op-status"`, `id="op-review-code"`, `<ol id="timeline">`, `<form id="resolve"`, `id="resolve-submit"`,
			`li data-kind="created"`, `li data-kind="attempt"`, `li data-kind="review"`} {
			require.Contains(t, page.Body, id)
		}
		// The timeline in time order: created, the attempt, the lookup that
		// settled nothing, the review.
		var order []int
		for _, k := range []string{`li data-kind="created"`, `li data-kind="attempt"`, `li data-kind="lookup"`, `li data-kind="review"`} {
			order = append(order, strings.Index(page.Body, k))
		}
		require.IsIncreasing(t, order)
		require.Contains(t, page.Body, "lookup: not found &lt;at&gt; the provider")
		require.Contains(t, page.Body, "HTTP status</dt><dd>500")
		require.Contains(t, page.Body, "replayed</dt><dd>yes")
		require.Contains(t, page.Body, "order-fail")

		a := b.post(opPath(op.ID), opPath(op.ID)+"/resolve", url.Values{"outcome": {"failed"}, "note": {"nothing at Stripe"}, "actor": {"mallory"}})
		page = b.follow(a)
		kind, text := flashOf(t, page.Body)
		require.Equal(t, "ok", kind, text)
		require.Contains(t, text, "is now failed")
		got := e.op(t, op.ID)
		require.Equal(t, ledger.StatusFailed, got.Status)
		require.Equal(t, "alice", got.Resolution.Actor, "the actor is the identity, not the form's field")
		require.Contains(t, page.Body, `li data-kind="resolution"`)
		require.Contains(t, page.Body, "by alice")
		require.NotContains(t, page.Body, "mallory")
		require.NotContains(t, page.Body, `<form id="resolve"`, "a settled operation has no form")

		require.NotContains(t, rowsOf(b.page("/console/review").Body), op.ID)
		// The flash is shown once.
		require.NotContains(t, b.page(opPath(op.ID)).Body, `id="flash"`)

		// Resolving again is refused as the CLI does (the token of another page).
		op2 := e.inReview(t, "order-form", ledger.ReviewCodeStoredError, "stored 500")
		a = b.post(opPath(op2.ID), opPath(op.ID)+"/resolve", url.Values{"outcome": {"failed"}, "note": {"again"}})
		kind, text = flashOf(t, b.follow(a).Body)
		require.Equal(t, "error", kind)
		require.Contains(t, text, "is failed, not in manual review: nothing to resolve")

		// Bad forms: nothing recorded.
		for _, f := range []url.Values{{"outcome": {"maybe"}, "note": {"x"}}, {"outcome": {"failed"}}, {"outcome": {"succeeded"}, "note": {"x"}}} {
			a = b.post(opPath(op2.ID), opPath(op2.ID)+"/resolve", f)
			kind, _ = flashOf(t, b.follow(a).Body)
			require.Equal(t, "error", kind)
		}
		a = b.post(opPath(op2.ID), opPath(op2.ID)+"/resolve", url.Values{"outcome": {"succeeded"}, "note": {"charged"}, "provider_ref": {"pi_123"}})
		kind, _ = flashOf(t, b.follow(a).Body)
		require.Equal(t, "ok", kind)
		require.Equal(t, "pi_123", e.op(t, op2.ID).ProviderRef)
	})
}

// A resend the client refuses for lack of evidence shows its reason, as
// the CLI prints it, and records nothing.
func TestResendRefusedShowsTheReason(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		e := newEnv(t, envOpts{pg: pg})
		op := e.inReview(t, "order-resend", ledger.ReviewCodeStoredError, "stored 500")
		b := e.browser(t, "alice:resolver")
		// The attempt ended a moment ago: Stripe's search may not show its
		// object yet, so a "not found" proves nothing.
		a := b.post(opPath(op.ID), opPath(op.ID)+"/resolve", url.Values{"outcome": {"resend"}, "note": {"nothing in the dashboard"}})
		kind, text := flashOf(t, b.follow(a).Body)
		require.Equal(t, "error", kind)
		require.Contains(t, text, "nothing was recorded and operation "+op.ID+" stays in review")
		require.NotContains(t, text, "payonce: ")
		got := e.op(t, op.ID)
		require.Equal(t, ledger.StatusManualReview, got.Status)
		require.Equal(t, 0, got.Generation)

		// Without a client for the provider, the console says so.
		e2 := newEnv(t, envOpts{noClient: true, pg: pg})
		op2 := e2.inReview(t, "order-noclient", ledger.ReviewCodeStoredError, "stored 500")
		b2 := e2.browser(t, "alice:resolver")
		page := b2.page(opPath(op2.ID))
		require.Contains(t, page.Body, `id="no-client"`)
		require.NotContains(t, page.Body, `<form id="resolve"`)
	})
}

// Bulk: a preview lists each operation and what will happen, the apply
// resolves them one by one and shows each result.
func TestBulkPreviewThenApply(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		e := newEnv(t, envOpts{pg: pg})
		var ids []string
		for i := range 3 {
			ids = append(ids, e.inReview(t, orderName(i), ledger.ReviewCodeStoredError, "stored 500").ID)
		}
		other := e.inReview(t, "order-other", ledger.ReviewCodeWindowPassed, payonce.ReasonWindowPassed)
		b := e.browser(t, "alice:resolver")
		q := "/console/review?code=stored_error"
		require.Contains(t, b.page(q).Body, `<form id="bulk"`)
		a := b.post(q, "/console/bulk/preview", url.Values{"code": {"stored_error"}, "outcome": {"failed"}, "note": {"stored error, nothing found"}})
		require.Equal(t, http.StatusOK, a.StatusCode, a.Body)
		require.Contains(t, a.Body, `<table id="bulk-preview">`)
		require.Contains(t, a.Body, `id="bulk-apply"`)
		require.Equal(t, ids, rowsOf(a.Body))
		for _, id := range ids {
			require.Equal(t, ledger.StatusManualReview, e.op(t, id).Status, "a preview records nothing")
		}
		// One of them is resolved by someone else in between.
		_, err := e.Client.Resolve(e.Ctx, payonce.ResolveParams{OperationID: ids[1], Outcome: ledger.ResolveFailed, Actor: "bob", Note: "done"})
		require.NoError(t, err)

		form := url.Values{"csrf": {csrfOf(t, a.Body)}, "outcome": {"failed"}, "note": {"stored error, nothing found"}}
		for _, m := range regexpOps.FindAllStringSubmatch(a.Body, -1) {
			form.Add("op", html.UnescapeString(m[1]))
		}
		require.Len(t, form["op"], 3)
		res := b.do(http.MethodPost, "/console/bulk/apply", form)
		require.Equal(t, http.StatusOK, res.StatusCode, res.Body)
		require.Contains(t, res.Body, `<table id="bulk-results">`)
		require.Equal(t, ids, rowsOf(res.Body))
		require.Contains(t, res.Body, "is failed, not in manual review: nothing to resolve")
		for i, id := range ids {
			got := e.op(t, id)
			require.Equal(t, ledger.StatusFailed, got.Status)
			if i != 1 {
				require.Equal(t, "alice", got.Resolution.Actor)
			}
		}
		require.Equal(t, ledger.StatusManualReview, e.op(t, other.ID).Status, "outside the filter")

		// Succeeded is not offered in bulk; a note is required.
		q = "/console/review"
		a = b.post(q, "/console/bulk/preview", url.Values{"outcome": {"succeeded"}, "note": {"x"}})
		require.Equal(t, http.StatusBadRequest, a.StatusCode)
		a = b.post(q, "/console/bulk/preview", url.Values{"outcome": {"failed"}})
		require.Equal(t, http.StatusBadRequest, a.StatusCode)
	})
}

func TestOverviewShowsStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-overview", ledger.ReviewCodeStoredError, "stored 500, nothing found")
	// A feed consumer that cannot apply anything stays behind.
	cons, err := ledgersqlite.NewConsumer(e.Store.(*ledgersqlite.Store), "billing-sync",
		func(context.Context, *sql.Tx, ledger.FeedEntry) error { return errors.New("billing is down") }, ledger.ConsumerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = cons.Run(ctx) }()
	require.Eventually(t, func() bool {
		s, err := e.Store.Stats(e.Ctx, ledger.StatsParams{})
		return err == nil && len(s.Consumers) == 1
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	e.Clock.Advance(time.Minute)
	a := e.browser(t, "vera:viewer").page("/console/")
	require.Contains(t, a.Body, "billing-sync")
	require.Regexp(t, `billing-sync</td>.*<td>1m\d*s?</td></tr>`, a.Body, "its lag")
	for _, id := range []string{`id="stats"`, `id="reviews"`, `id="inbox"`, `id="consumers"`, `id="whoami"`, `id="nav-overview"`, `id="nav-review"`, `<form id="search"`} {
		require.Contains(t, a.Body, id)
	}
	require.Contains(t, a.Body, op.ID)
	require.Contains(t, a.Body, "stored 500, nothing found")
	require.Contains(t, a.Body, "vera (viewer)")
	require.Equal(t, http.StatusNotFound, e.browser(t, "vera:viewer").get("/console/nothing-here").StatusCode)
}
