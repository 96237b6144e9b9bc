package console_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/console"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
)

// operatorHeader is how the tests' Identity learns the operator: "name:role".
const operatorHeader = "X-Test-Operator"

func testIdentity(r *http.Request) (console.Operator, bool) {
	name, role, ok := strings.Cut(r.Header.Get(operatorHeader), ":")
	if !ok || name == "" {
		return console.Operator{}, false
	}
	return console.Operator{Name: name, Role: console.Role(role)}, true
}

// env is a console mounted under /console/ on a test server, over a real
// SQLite ledger and a Client on a fake Stripe, all on one manual clock.
type env struct {
	*testkit.E2E
	srv     *httptest.Server
	handler http.Handler
}

type envOpts struct {
	tls      bool
	loginURL string
	noClient bool
	pg       bool // a PostgreSQL ledger (skipped without PAYONCE_TEST_DATABASE_URL)
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	var e *testkit.E2E
	if o.pg {
		e = newPGE2E(t)
	} else {
		e = testkit.NewE2E(t, providertest.StripeEnv)
	}
	cfg := console.Config{Store: e.Store, Identity: testIdentity, Now: e.Clock.Now, LoginURL: o.loginURL}
	if !o.noClient {
		cfg.Clients = []*payonce.Client{e.Client}
	}
	h, err := console.New(cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/console/", http.StripPrefix("/console", h))
	var srv *httptest.Server
	if o.tls {
		srv = httptest.NewTLSServer(mux)
	} else {
		srv = httptest.NewServer(mux)
	}
	t.Cleanup(srv.Close)
	return &env{E2E: e, srv: srv, handler: h}
}

// browser is one operator's browser: a cookie jar, redirects not followed.
type browser struct {
	t        *testing.T
	e        *env
	operator string
	c        *http.Client
}

func (e *env) browser(t *testing.T, operator string) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := new(http.Client)
	*c = *e.srv.Client() // a copy: each browser its own jar
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{t: t, e: e, operator: operator, c: c}
}

type answer struct {
	*http.Response
	Body string
}

func (b *browser) do(method, path string, form url.Values) answer {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, body)
	require.NoError(b.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if b.operator != "" {
		req.Header.Set(operatorHeader, b.operator)
	}
	res, err := b.c.Do(req)
	require.NoError(b.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(b.t, err)
	return answer{Response: res, Body: string(raw)}
}

func (b *browser) get(path string) answer { b.t.Helper(); return b.do(http.MethodGet, path, nil) }

// page GETs path and requires 200.
func (b *browser) page(path string) answer {
	b.t.Helper()
	a := b.get(path)
	require.Equal(b.t, http.StatusOK, a.StatusCode, "GET %s: %s", path, a.Body)
	return a
}

// post POSTs the form with the CSRF token of the page at from.
func (b *browser) post(from, path string, form url.Values) answer {
	b.t.Helper()
	form.Set("csrf", csrfOf(b.t, b.page(from).Body))
	return b.do(http.MethodPost, path, form)
}

// follow GETs a 303's Location.
func (b *browser) follow(a answer) answer {
	b.t.Helper()
	require.Equal(b.t, http.StatusSeeOther, a.StatusCode, a.Body)
	loc, err := a.Location()
	require.NoError(b.t, err)
	return b.page(loc.RequestURI())
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	require.NotNil(t, m, "no CSRF token on the page")
	return html.UnescapeString(m[1])
}

var flashRE = regexp.MustCompile(`(?s)<p id="flash" class="(ok|error)" role="status">(.*?)</p>`)

func flashOf(t *testing.T, body string) (string, string) {
	t.Helper()
	m := flashRE.FindStringSubmatch(body)
	require.NotNil(t, m, "no flash message on the page: %s", body)
	return m[1], html.UnescapeString(m[2])
}

var rowRE = regexp.MustCompile(`<tr data-op="([^"]+)"`)

func rowsOf(body string) []string {
	var ids []string
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		ids = append(ids, html.UnescapeString(m[1]))
	}
	return ids
}

var nextRE = regexp.MustCompile(`<a id="next" href="([^"]+)"`)

// inReview records a real charge of order (prepared by the client, so its
// request is readable) whose attempt ended maybe-sent, and moves it to
// manual review with code and reason.
func (e *env) inReview(t *testing.T, order string, code ledger.ReviewCode, reason string) ledger.Operation {
	t.Helper()
	n, err := e.Client.PrepareCharge(e.Ctx, payonce.ChargeParams{OrderID: order, Amount: 1500, Currency: "USD", PaymentMethod: "pm_card_visa"})
	require.NoError(t, err)
	return e.record(t, n, code, reason)
}

func (e *env) record(t *testing.T, n ledger.NewOperation, code ledger.ReviewCode, reason string) ledger.Operation {
	t.Helper()
	now := e.Clock.Now()
	br, err := e.Store.Begin(e.Ctx, ledger.BeginParams{Op: n, Owner: "test", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	e.Clock.Advance(1500 * time.Millisecond)
	op, err := e.Store.Finish(e.Ctx, ledger.FinishParams{ID: n.ID, Owner: "test", Now: e.Clock.Now(), From: ledger.StatusInFlight,
		To: ledger.StatusManualReview, ReviewCode: code, ReviewReason: reason,
		Events: []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: "lookup: not found <at> the provider"}},
		Attempt: &ledger.AttemptOutcome{Number: br.Attempt.Number, Class: ledger.OutcomeMaybeSent, HTTPStatus: 500, Replayed: true,
			Error: "stripe: 500 api_error"}})
	require.NoError(t, err)
	return op
}

func (e *env) op(t *testing.T, id string) ledger.Operation {
	t.Helper()
	op, _, err := e.Store.Get(context.Background(), id)
	require.NoError(t, err)
	return op
}

func opPath(id string) string { return "/console/ops/" + url.PathEscape(id) }

func orderName(i int) string { return fmt.Sprintf("order-%04d", i) }

var regexpOps = regexp.MustCompile(`name="op" value="([^"]+)"`)

// newPGE2E is testkit.NewE2E on a PostgreSQL ledger in a schema of its own.
func newPGE2E(t *testing.T) *testkit.E2E {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	_, store := testkit.NewPGLedger(t, ctx)
	clock := mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	pe := providertest.StripeEnv(t, providertest.Options{Clock: clock})
	client, err := payonce.New(providertest.ClientConfig(pe.Provider, store, clock.Now))
	require.NoError(t, err)
	return &testkit.E2E{Fake: pe.Fake, Clock: clock, Store: store, Client: client, Ctx: ctx}
}
