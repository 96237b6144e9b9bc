package console_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/console"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/providertest"
)

// Regression tests of the console's safety rules: bulk resolve and duplicated
// operations, stale forms, error pages, flash messages, blank operators.

// A duplicated operation (the money moved more than once) must never be
// swept by a bulk resolution: "failed" would record that money did not
// move, and Client.Resolve records "failed" without asking. The preview
// leaves it out, and apply skips it even when the browser sends its id.
func TestReviewBulkSkipsDuplicated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	dup := e.inReview(t, "order-dup", ledger.ReviewCodeDuplicated, "two charges at the provider")
	other := e.inReview(t, "order-other", ledger.ReviewCodeStoredError, "stored 500")
	b := e.browser(t, "alice:resolver")

	pv := b.post("/console/review", "/console/bulk/preview", url.Values{"outcome": {"failed"}, "note": {"nothing at the provider"}})
	require.Equal(t, http.StatusOK, pv.StatusCode, pv.Body)
	require.Contains(t, pv.Body, `<tr data-op="`+dup.ID+`" class="error">`, "the duplicated operation is shown as left out")
	var items []string
	for _, m := range regexpOps.FindAllStringSubmatch(pv.Body, -1) {
		items = append(items, m[1])
	}
	require.Len(t, items, 1)
	require.True(t, strings.HasPrefix(items[0], other.ID+"|"))

	// A tampered apply: the duplicated operation's id with its right
	// review time.
	tampered := append(items, fmt.Sprintf("%s|%d", dup.ID, dup.ReviewAt.UnixMicro()))
	res := b.do(http.MethodPost, "/console/bulk/apply", url.Values{"csrf": {csrfOf(t, pv.Body)}, "outcome": {"failed"},
		"note": {"nothing at the provider"}, "op": tampered})
	require.Equal(t, http.StatusOK, res.StatusCode, res.Body)
	require.Equal(t, ledger.StatusManualReview, e.op(t, dup.ID).Status, "the duplicated operation stays in review")
	require.Equal(t, ledger.StatusFailed, e.op(t, other.ID).Status)
	require.Contains(t, res.Body, "duplicated")
}

// failingStore answers Resolve with err.
type failingStore struct {
	ledger.Store
	err error
}

func (s failingStore) Resolve(context.Context, ledger.ResolveParams) (ledger.Operation, error) {
	return ledger.Operation{}, s.err
}

// A resolution the store refuses for a concurrent change is said plainly;
// any other store error is logged, not shown (its text may name the
// database's host and user).
func TestReviewResolveStoreErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err       error
		want, not string
	}{
		{fmt.Errorf("ledgerpg: resolve: %w", ledger.ErrStateConflict), "changed while this was decided", "ledger:"},
		{errors.New("ledgerpg: resolve: failed to connect to `host=db.internal user=payments`: dial tcp 10.0.0.7:5432: refused"),
			"see the service's log", "db.internal"},
	} {
		e := testkit.NewE2E(t, providertest.StripeEnv)
		op := (&env{E2E: e}).inReview(t, "order-err", ledger.ReviewCodeStoredError, "stored 500")
		client, err := payonce.New(providertest.ClientConfig(e.Client.Provider(), failingStore{e.Store, c.err}, e.Clock.Now))
		require.NoError(t, err)
		h, err := console.New(console.Config{Store: e.Store, Clients: []*payonce.Client{client}, Identity: testIdentity, Now: e.Clock.Now})
		require.NoError(t, err)
		mux := http.NewServeMux()
		mux.Handle("/console/", http.StripPrefix("/console", h))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		b := (&env{E2E: e, srv: srv, handler: h}).browser(t, "alice:resolver")
		a := b.post(opPath(op.ID), opPath(op.ID)+"/resolve", url.Values{"outcome": {"failed"}, "note": {"n"}})
		kind, text := flashOf(t, b.follow(a).Body)
		require.Equal(t, "error", kind)
		require.Contains(t, text, c.want)
		require.NotContains(t, text, c.not)
	}
}

// A signed flash cookie is shown once, within its minute, to its operator:
// replayed later (the signature does not expire with the cookie's MaxAge)
// or to another operator, it is not shown.
func TestReviewFlashExpiresAndIsPersonal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-flash", ledger.ReviewCodeStoredError, "stored 500")
	b := e.browser(t, "alice:resolver")
	a := b.post(opPath(op.ID), opPath(op.ID)+"/resolve", url.Values{"outcome": {"failed"}}) // no note: an error flash
	require.Equal(t, http.StatusSeeOther, a.StatusCode)
	var flashCookie *http.Cookie
	for _, c := range a.Cookies() {
		if c.Name == "payonce_console_flash" {
			flashCookie = c
		}
	}
	require.NotNil(t, flashCookie)
	show := func(operator string) bool {
		req, err := http.NewRequest(http.MethodGet, e.srv.URL+opPath(op.ID), nil)
		require.NoError(t, err)
		req.Header.Set(operatorHeader, operator)
		req.AddCookie(&http.Cookie{Name: flashCookie.Name, Value: flashCookie.Value})
		res, err := e.srv.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return strings.Contains(string(body), `id="flash"`)
	}
	require.True(t, show("alice:resolver"), "the genuine flash is shown")
	require.False(t, show("bob:resolver"), "not to another operator")
	e.Clock.Advance(2 * time.Minute)
	require.False(t, show("alice:resolver"), "not after its minute")
}

// An Identity that answers ok with a blank name is not an operator: the
// name would be the actor of a resolution.
func TestReviewBlankOperatorName(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, providertest.StripeEnv)
	h, err := console.New(console.Config{Store: e.Store, Identity: func(*http.Request) (console.Operator, bool) {
		return console.Operator{Name: " \t", Role: console.RoleResolver}, true
	}})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.Equal(t, http.StatusUnauthorized, rec.Code)
}

// reenteredStore shows every operation as if it had left review and come
// back since: its review entered later.
type reenteredStore struct {
	ledger.Store
	on *bool
}

func (s reenteredStore) Get(ctx context.Context, id string) (ledger.Operation, []ledger.Attempt, error) {
	op, atts, err := s.Store.Get(ctx, id)
	if *s.on && op.Status == ledger.StatusManualReview {
		op.ReviewAt = op.ReviewAt.Add(time.Hour)
	}
	return op, atts, err
}

// A single resolve form decides the review it was shown for: submitted
// again, or after the operation left review and came back, it records
// nothing (bulk apply has the same check); without its review time it is
// refused.
func TestReviewResolveFormIsForOneReview(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, providertest.StripeEnv)
	op := (&env{E2E: e}).inReview(t, "order-stale", ledger.ReviewCodeStoredError, "stored 500")
	on := new(bool)
	h, err := console.New(console.Config{Store: reenteredStore{e.Store, on}, Clients: []*payonce.Client{e.Client}, Identity: testIdentity, Now: e.Clock.Now})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/console/", http.StripPrefix("/console", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b := (&env{E2E: e, srv: srv, handler: h}).browser(t, "alice:resolver")
	body := b.page(opPath(op.ID)).Body
	form := url.Values{"csrf": {csrfOf(t, body)}, "outcome": {"failed"}, "note": {"n"}}

	a := b.do(http.MethodPost, opPath(op.ID)+"/resolve", form) // no review_at
	kind, text := flashOf(t, b.follow(a).Body)
	require.Equal(t, "error", kind)
	require.Contains(t, text, "reload the page")

	form.Set("review_at", reviewAtRE.FindStringSubmatch(body)[1])
	*on = true
	a = b.do(http.MethodPost, opPath(op.ID)+"/resolve", form)
	kind, text = flashOf(t, b.follow(a).Body)
	require.Equal(t, "error", kind)
	require.Contains(t, text, "came back")
	require.Equal(t, ledger.StatusManualReview, (&env{E2E: e}).op(t, op.ID).Status, "nothing recorded")

	*on = false
	a = b.do(http.MethodPost, opPath(op.ID)+"/resolve", form)
	kind, _ = flashOf(t, b.follow(a).Body)
	require.Equal(t, "ok", kind)
	require.Equal(t, ledger.StatusFailed, (&env{E2E: e}).op(t, op.ID).Status)
}
