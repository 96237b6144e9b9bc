package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/console"
	"github.com/payonce/payonce/ledger"
)

// Every route, for the checks that apply to all of them.
func routes(opID string) [][2]string {
	return [][2]string{
		{http.MethodGet, "/console/"},
		{http.MethodGet, "/console/review"},
		{http.MethodGet, opPath(opID)},
		{http.MethodGet, "/console/search?q=x"},
		{http.MethodPost, opPath(opID) + "/resolve"},
		{http.MethodPost, "/console/bulk/preview"},
		{http.MethodPost, "/console/bulk/apply"},
	}
}

// No anonymous access: without an identity every page and every POST is
// 401 (or, with a LoginURL, a GET is sent there), and nothing is shown.
func TestSecurityUnauthenticated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-secret", ledger.ReviewCodeStoredError, "stored 500")
	anon := e.browser(t, "")
	for _, r := range routes(op.ID) {
		a := anon.do(r[0], r[1], url.Values{"outcome": {"failed"}, "note": {"x"}})
		require.Equal(t, http.StatusUnauthorized, a.StatusCode, "%s %s", r[0], r[1])
		require.NotContains(t, a.Body, "order-secret")
		require.NotContains(t, a.Body, op.ID)
	}
	require.Equal(t, ledger.StatusManualReview, e.op(t, op.ID).Status)

	e2 := newEnv(t, envOpts{loginURL: "/login"})
	a := e2.browser(t, "").get("/console/review")
	require.Equal(t, http.StatusSeeOther, a.StatusCode)
	require.Equal(t, "/login", a.Header.Get("Location"))
	a = e2.browser(t, "").do(http.MethodPost, "/console/bulk/apply", url.Values{})
	require.Equal(t, http.StatusUnauthorized, a.StatusCode, "a POST is refused, not redirected")
}

// A viewer sees no forms and its POSTs are refused, with a valid token too.
func TestSecurityViewerCannotResolve(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-viewer", ledger.ReviewCodeStoredError, "stored 500")
	v := e.browser(t, "vera:viewer")
	page := v.page(opPath(op.ID))
	require.NotContains(t, page.Body, "<form id=\"resolve\"")
	require.NotContains(t, page.Body, `name="csrf"`)
	require.NotContains(t, v.page("/console/review").Body, `<form id="bulk"`)

	// A resolver's page gives a token; the viewer's own cookie and a
	// well-formed token of its own make no difference.
	token := v.csrfFor()
	for _, r := range routes(op.ID) {
		if r[0] != http.MethodPost {
			continue
		}
		a := v.do(r[0], r[1], url.Values{"csrf": {token}, "outcome": {"failed"}, "note": {"x"}, "op": {op.ID + "|1"}})
		require.Equal(t, http.StatusForbidden, a.StatusCode, "%s %s", r[0], r[1])
	}
	require.Equal(t, ledger.StatusManualReview, e.op(t, op.ID).Status)
	// An unknown role reads only.
	a := e.browser(t, "rick:admin").page(opPath(op.ID))
	require.NotContains(t, a.Body, "<form id=\"resolve\"")
}

// csrfFor computes the token the console would give this browser, by
// asking a resolver handler with the same cookie: the viewer's pages carry
// none. It proves the 403 is the role's, not the token's.
func (b *browser) csrfFor() string {
	b.t.Helper()
	u, _ := url.Parse(b.e.srv.URL + "/console/")
	var cookie string
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "payonce_console_csrf" {
			cookie = c.Value
		}
	}
	require.NotEmpty(b.t, cookie)
	// Same operator name, resolver role: the same token.
	name, _, _ := strings.Cut(b.operator, ":")
	req := httptest.NewRequest(http.MethodGet, "/console/review", nil)
	req.RequestURI = "/console/review"
	req.URL.Path = "/review"
	req.Header.Set(operatorHeader, name+":resolver")
	req.AddCookie(&http.Cookie{Name: "payonce_console_csrf", Value: cookie})
	b.e.inReviewIfEmpty(b.t)
	rec := httptest.NewRecorder()
	b.e.handler.ServeHTTP(rec, req)
	return csrfOf(b.t, rec.Body.String())
}

func (e *env) inReviewIfEmpty(t *testing.T) {
	ops, err := e.Store.ListReview(e.Ctx, ledger.ReviewFilter{Limit: 1})
	require.NoError(t, err)
	if len(ops) == 0 {
		e.inReview(t, "order-token", ledger.ReviewCodeStoredError, "stored 500")
	}
}

// Every POST needs the token of this browser's cookie: none, a forged
// one, one of another browser or another operator, or one without the
// cookie are refused, and nothing is recorded.
func TestSecurityCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-csrf", ledger.ReviewCodeStoredError, "stored 500")
	alice := e.browser(t, "alice:resolver")
	good := csrfOf(t, alice.page(opPath(op.ID)).Body)
	other := e.browser(t, "alice:resolver")
	otherToken := csrfOf(t, other.page(opPath(op.ID)).Body)
	require.NotEqual(t, good, otherToken, "each browser has its own token")
	bob := e.browser(t, "bob:resolver")
	_ = bob.page(opPath(op.ID))

	form := func(tok string) url.Values {
		v := url.Values{"outcome": {"failed"}, "note": {"forged"}, "code": {"stored_error"}, "op": {op.ID + "|1"}}
		if tok != "" {
			v.Set("csrf", tok)
		}
		return v
	}
	for _, r := range routes(op.ID) {
		if r[0] != http.MethodPost {
			continue
		}
		for name, tc := range map[string]struct {
			b   *browser
			tok string
		}{
			"no token":                  {alice, ""},
			"forged token":              {alice, strings.Repeat("A", len(good))},
			"another browser's token":   {alice, otherToken},
			"another operator's cookie": {bob, good},
		} {
			a := tc.b.do(r[0], r[1], form(tc.tok))
			require.Equal(t, http.StatusForbidden, a.StatusCode, "%s %s: %s", r[0], r[1], name)
			require.Contains(t, a.Body, "CSRF")
		}
		// The right token without its cookie (a fresh browser).
		fresh := e.browser(t, "alice:resolver")
		a := fresh.do(r[0], r[1], form(good))
		require.Equal(t, http.StatusForbidden, a.StatusCode, "%s %s: no cookie", r[0], r[1])
	}
	require.Equal(t, ledger.StatusManualReview, e.op(t, op.ID).Status, "nothing was recorded")
	// And the right token works.
	a := alice.do(http.MethodPost, opPath(op.ID)+"/resolve", form(good))
	require.Equal(t, http.StatusSeeOther, a.StatusCode, a.Body)
	require.Equal(t, ledger.StatusFailed, e.op(t, op.ID).Status)
}

// GET never changes state, whatever its query says, and GET on a POST
// route is 405.
func TestSecurityGETChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-get", ledger.ReviewCodeStoredError, "stored 500")
	alice := e.browser(t, "alice:resolver")
	tok := csrfOf(t, alice.page(opPath(op.ID)).Body)
	before, atts, err := e.Store.Get(e.Ctx, op.ID)
	require.NoError(t, err)
	evs, err := e.Store.Events(e.Ctx, op.ID)
	require.NoError(t, err)
	q := "?" + url.Values{"csrf": {tok}, "outcome": {"failed"}, "note": {"x"}, "op": {op.ID + "|" + "1"}}.Encode()
	for _, r := range routes(op.ID) {
		a := alice.get(r[1] + q)
		if r[0] == http.MethodPost {
			require.Equal(t, http.StatusMethodNotAllowed, a.StatusCode, "GET %s", r[1])
		}
	}
	after, atts2, err := e.Store.Get(e.Ctx, op.ID)
	require.NoError(t, err)
	evs2, err := e.Store.Events(e.Ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.Equal(t, atts, atts2)
	require.Equal(t, evs, evs2)
}

// The actor is the identity: a form's "actor" field is ignored.
func TestSecurityActorIsTheIdentity(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-actor", ledger.ReviewCodeStoredError, "stored 500")
	alice := e.browser(t, "alice:resolver")
	a := alice.post(opPath(op.ID), opPath(op.ID)+"/resolve", url.Values{"outcome": {"failed"}, "note": {"n"}, "actor": {"mallory"}, "Actor": {"mallory"}})
	require.Equal(t, http.StatusSeeOther, a.StatusCode)
	got := e.op(t, op.ID)
	require.Equal(t, "alice", got.Resolution.Actor)
	evs, err := e.Store.Events(e.Ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, "alice", evs[len(evs)-1].Actor)
}

var wantHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
	"X-Frame-Options":         "DENY",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "same-origin",
	"Cache-Control":           "no-store",
}

// Every answer carries the security headers: pages, redirects, errors,
// refusals and the static files.
func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-headers", ledger.ReviewCodeStoredError, "stored 500")
	alice := e.browser(t, "alice:resolver")
	vera := e.browser(t, "vera:viewer")
	anon := e.browser(t, "")
	answers := map[string]answer{
		"overview":      alice.get("/console/"),
		"review":        alice.get("/console/review"),
		"operation":     alice.get(opPath(op.ID)),
		"search 303":    alice.get("/console/search?q=" + url.QueryEscape(op.ID)),
		"404":           alice.get("/console/ops/nobody"),
		"400":           alice.get("/console/review?code=nope"),
		"401":           anon.get("/console/"),
		"403 viewer":    vera.do(http.MethodPost, opPath(op.ID)+"/resolve", url.Values{}),
		"403 csrf":      alice.do(http.MethodPost, opPath(op.ID)+"/resolve", url.Values{}),
		"405":           alice.get(opPath(op.ID) + "/resolve"),
		"css":           anon.get("/console/static/console.css"),
		"resolve 303":   alice.post(opPath(op.ID), opPath(op.ID)+"/resolve", url.Values{"outcome": {"failed"}, "note": {"n"}}),
		"static absent": anon.get("/console/static/nothing.js"),
	}
	for name, a := range answers {
		for k, v := range wantHeaders {
			require.Equal(t, v, a.Header.Get(k), "%s: %s", name, k)
		}
	}
	require.Equal(t, http.StatusOK, answers["css"].StatusCode)
	require.Equal(t, http.StatusMethodNotAllowed, answers["405"].StatusCode)
	require.NotContains(t, answers["overview"].Body, "<script", "no script at all, inline or not")
	require.NotContains(t, answers["operation"].Body, "style=", "no inline style")
}

// Cookies are HttpOnly and SameSite=Strict, and Secure over TLS.
func TestSecurityCookies(t *testing.T) {
	t.Parallel()
	for _, overTLS := range []bool{false, true} {
		e := newEnv(t, envOpts{tls: overTLS})
		op := e.inReview(t, "order-cookie", ledger.ReviewCodeStoredError, "stored 500")
		alice := e.browser(t, "alice:resolver")
		a := alice.get(opPath(op.ID))
		res := alice.post(opPath(op.ID), opPath(op.ID)+"/resolve", url.Values{"outcome": {"failed"}, "note": {"n"}})
		cookies := append(a.Cookies(), res.Cookies()...)
		names := map[string]bool{}
		for _, c := range cookies {
			names[c.Name] = true
			require.True(t, c.HttpOnly, "%s HttpOnly", c.Name)
			require.Equal(t, http.SameSiteStrictMode, c.SameSite, "%s SameSite", c.Name)
			require.Equal(t, overTLS, c.Secure, "%s Secure over TLS only (TLS %v)", c.Name, overTLS)
			require.Equal(t, "/console/", c.Path, "%s scoped to the mount point", c.Name)
		}
		require.True(t, names["payonce_console_csrf"] && names["payonce_console_flash"], "%v", names)
	}
	// Config.Secure forces it on a plain connection (TLS ended at a proxy).
	e := newEnv(t, envOpts{})
	h, err := console.New(console.Config{Store: e.Store, Identity: testIdentity, Secure: true})
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodGet, "/review", nil)
	req.Header.Set(operatorHeader, "alice:resolver")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.NotEmpty(t, rec.Result().Cookies())
	for _, c := range rec.Result().Cookies() {
		require.True(t, c.Secure)
	}
}

// Hostile values (an order id, a reason, a note, an actor with markup, very
// long values) are rendered as text.
func TestSecurityEscaping(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	hostile := `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	op := e.inReview(t, "order-"+hostile, ledger.ReviewCodeOther, "reason "+hostile+strings.Repeat("r", 3000))
	name := "eve" + hostile
	eve := e.browser(t, name+":resolver")
	pages := []string{"/console/", "/console/review", opPath(op.ID), "/console/search?q=" + url.QueryEscape("order-"+hostile+"-nothing")}
	for _, p := range pages {
		a := eve.page(p)
		require.NotContains(t, a.Body, "<script>", p)
		require.NotContains(t, a.Body, "<img", p)
		require.Contains(t, a.Body, "&lt;script&gt;", p)
	}
	// A hostile note, recorded and shown in the timeline and the flash.
	a := eve.post(opPath(op.ID), opPath(op.ID)+"/resolve", url.Values{"outcome": {"failed"}, "note": {"note " + hostile}})
	page := eve.follow(a)
	require.NotContains(t, page.Body, "<script>")
	require.NotContains(t, page.Body, "<img")
	require.Contains(t, page.Body, "note &lt;script&gt;")
	// A note over the limit is refused, not cut.
	op2 := e.inReview(t, "order-long", ledger.ReviewCodeOther, "x")
	a = eve.post(opPath(op2.ID), opPath(op2.ID)+"/resolve", url.Values{"outcome": {"failed"}, "note": {strings.Repeat("n", 5000)}})
	kind, text := flashOf(t, eve.follow(a).Body)
	require.Equal(t, "error", kind)
	require.Contains(t, text, "at most")
	// A body over the bound is refused.
	big := url.Values{"csrf": {"x"}, "note": {strings.Repeat("n", 100<<10)}}
	a = eve.do(http.MethodPost, opPath(op2.ID)+"/resolve", big)
	require.Equal(t, http.StatusBadRequest, a.StatusCode)
	require.Equal(t, ledger.StatusManualReview, e.op(t, op2.ID).Status)
}

// A flash cookie the console did not sign is not shown.
func TestSecurityFlashIsSigned(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	op := e.inReview(t, "order-flash", ledger.ReviewCodeOther, "x")
	req := httptest.NewRequest(http.MethodGet, "/ops/"+op.ID, nil)
	req.Header.Set(operatorHeader, "alice:resolver")
	// {"k":"ok","t":"pay to IBAN X"} without a valid signature.
	req.AddCookie(&http.Cookie{Name: "payonce_console_flash", Value: "eyJrIjoib2siLCJ0IjoicGF5IHRvIElCQU4gWCJ9.forged"})
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.NotContains(t, rec.Body.String(), "IBAN")
}
