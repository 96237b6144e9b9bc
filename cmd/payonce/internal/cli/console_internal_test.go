package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/payonce/payonce/console"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
)

// consoleFixture is the console's handler on an empty ledger, with a
// resolver alice and a viewer victor, on a manual clock.
type consoleFixture struct {
	h     http.Handler
	auth  *consoleAuth
	clock *mocks.ManualClock
}

func newConsoleFixture(t *testing.T, tls bool) consoleFixture {
	t.Helper()
	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"), ledgersqlite.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Migrate(t.Context()))
	ha, err := bcrypt.GenerateFromPassword([]byte("alice pw"), bcrypt.MinCost)
	require.NoError(t, err)
	hv, err := bcrypt.GenerateFromPassword([]byte("victor pw"), bcrypt.MinCost)
	require.NoError(t, err)
	clock := mocks.NewManualClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	h, auth, err := consoleHandler(ConsoleOptions{Store: store, Users: "alice:resolver:" + string(ha) + ", victor:viewer:" + string(hv),
		TLS: tls, Now: clock.Now})
	require.NoError(t, err)
	return consoleFixture{h: h, auth: auth, clock: clock}
}

func (f consoleFixture) do(method, target string, form url.Values, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func cookieNamed(w *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range w.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// loginForm opens the login page: its cookie and CSRF token.
func (f consoleFixture) loginForm(t *testing.T) (*http.Cookie, string) {
	t.Helper()
	w := f.do("GET", "/login", nil)
	require.Equal(t, http.StatusOK, w.Code)
	m := csrfField.FindStringSubmatch(w.Body.String())
	require.NotNil(t, m, w.Body.String())
	c := cookieNamed(w, consoleLoginCookie)
	require.NotNil(t, c)
	return c, m[1]
}

func (f consoleFixture) login(t *testing.T, user, pw string) *httptest.ResponseRecorder {
	t.Helper()
	c, tok := f.loginForm(t)
	return f.do("POST", "/login", url.Values{"csrf": {tok}, "user": {user}, "password": {pw}}, c)
}

func (f consoleFixture) session(t *testing.T, user, pw string) *http.Cookie {
	t.Helper()
	w := f.login(t, user, pw)
	require.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
	require.Equal(t, "/", w.Header().Get("Location"))
	c := cookieNamed(w, consoleSessionCookie)
	require.NotNil(t, c)
	return c
}

func TestConsoleLogin(t *testing.T) {
	t.Parallel()
	f := newConsoleFixture(t, false)

	// The login page carries the console's security headers.
	w := f.do("GET", "/login", nil)
	require.Contains(t, w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'")
	require.Equal(t, "DENY", w.Header().Get("X-Frame-Options"))
	require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	require.Contains(t, w.Body.String(), `<button id="login"`)

	// A wrong password and an unknown user get the same answer.
	bad := f.login(t, "alice", "wrong")
	unknown := f.login(t, "mallory", "alice pw")
	for _, w := range []*httptest.ResponseRecorder{bad, unknown} {
		require.Equal(t, http.StatusUnauthorized, w.Code)
		require.Contains(t, w.Body.String(), "wrong user or password")
		require.Nil(t, cookieNamed(w, consoleSessionCookie))
	}
	// A hostile user name is escaped, never echoed as markup.
	hostile := f.login(t, "<script>alert(1)</script>", "x")
	require.NotContains(t, hostile.Body.String(), "<script>alert")

	// Without the login form's token, or with another form's: refused,
	// even with the right password (login forgery).
	w = f.do("POST", "/login", url.Values{"user": {"alice"}, "password": {"alice pw"}})
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Nil(t, cookieNamed(w, consoleSessionCookie))
	c1, _ := f.loginForm(t)
	_, tok2 := f.loginForm(t)
	w = f.do("POST", "/login", url.Values{"csrf": {tok2}, "user": {"alice"}, "password": {"alice pw"}}, c1)
	require.Equal(t, http.StatusForbidden, w.Code)
	// A body beyond the bound is refused.
	c, tok := f.loginForm(t)
	w = f.do("POST", "/login", url.Values{"csrf": {tok}, "user": {"alice"}, "password": {strings.Repeat("x", 10000)}}, c)
	require.Equal(t, http.StatusBadRequest, w.Code)

	// The session cookie: HttpOnly, SameSite=Strict, 12h, not Secure over
	// plain HTTP.
	s := f.session(t, "alice", "alice pw")
	require.True(t, s.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, s.SameSite)
	require.False(t, s.Secure)
	require.Equal(t, int(12*time.Hour/time.Second), s.MaxAge)
}

func TestConsoleSessionCookieSecureOverTLS(t *testing.T) {
	t.Parallel()
	f := newConsoleFixture(t, true)
	c, _ := f.loginForm(t)
	require.True(t, c.Secure)
	s := f.session(t, "victor", "victor pw")
	require.True(t, s.Secure)
	require.True(t, s.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, s.SameSite)
}

func TestConsoleIdentity(t *testing.T) {
	t.Parallel()
	f := newConsoleFixture(t, false)
	s := f.session(t, "alice", "alice pw")
	v := f.session(t, "victor", "victor pw")
	id := func(c *http.Cookie) (console.Operator, bool) {
		r := httptest.NewRequest("GET", "/", nil)
		if c != nil {
			r.AddCookie(c)
		}
		return f.auth.identity(r)
	}
	op, ok := id(s)
	require.True(t, ok)
	require.Equal(t, console.Operator{Name: "alice", Role: console.RoleResolver}, op)
	op, ok = id(v)
	require.True(t, ok)
	require.Equal(t, console.RoleViewer, op.Role)

	_, ok = id(nil)
	require.False(t, ok, "no cookie, no identity")
	// Tampered: another name under alice's signature, a changed expiry, a
	// truncated signature.
	parts := strings.Split(s.Value, ".")
	vparts := strings.Split(v.Value, ".")
	for _, bad := range []string{
		vparts[0] + "." + parts[1] + "." + parts[2],
		parts[0] + "." + "99999999999" + "." + parts[2],
		parts[0] + "." + parts[1] + "." + parts[2][:10],
		"garbage",
		"",
	} {
		_, ok := id(&http.Cookie{Name: consoleSessionCookie, Value: bad})
		require.False(t, ok, "%q", bad)
	}
	// 12 hours later the session is over.
	f.clock.Advance(12*time.Hour - time.Second)
	_, ok = id(s)
	require.True(t, ok)
	f.clock.Advance(time.Second)
	_, ok = id(s)
	require.False(t, ok)
}

func TestConsoleLogout(t *testing.T) {
	t.Parallel()
	f := newConsoleFixture(t, false)
	s := f.session(t, "alice", "alice pw")
	w := f.do("GET", "/logout", nil, s)
	require.Equal(t, http.StatusOK, w.Code)
	m := csrfField.FindStringSubmatch(w.Body.String())
	require.NotNil(t, m)
	// Without the token, or with a token of another session: refused, the
	// cookie stays.
	w = f.do("POST", "/logout", url.Values{}, s)
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Nil(t, cookieNamed(w, consoleSessionCookie))
	other := f.session(t, "victor", "victor pw")
	w = f.do("POST", "/logout", url.Values{"csrf": {m[1]}}, other)
	require.Equal(t, http.StatusForbidden, w.Code)
	// With it: the cookie is cleared.
	w = f.do("POST", "/logout", url.Values{"csrf": {m[1]}}, s)
	require.Equal(t, http.StatusSeeOther, w.Code)
	c := cookieNamed(w, consoleSessionCookie)
	require.NotNil(t, c)
	require.Equal(t, "", c.Value)
	require.Less(t, c.MaxAge, 0)
	// GET /logout never logs out.
	w = f.do("GET", "/logout", nil, other)
	require.Nil(t, cookieNamed(w, consoleSessionCookie))
}

// Without a session, the console sends the browser to the login page.
func TestConsoleUnauthenticated(t *testing.T) {
	t.Parallel()
	f := newConsoleFixture(t, false)
	for _, p := range []string{"/", "/review"} {
		w := f.do("GET", p, nil)
		require.Contains(t, []int{http.StatusSeeOther, http.StatusFound, http.StatusUnauthorized}, w.Code, p)
		if w.Code != http.StatusUnauthorized {
			require.Equal(t, "/login", w.Header().Get("Location"))
		}
	}
	w := f.do("POST", "/ops/x/resolve", url.Values{"outcome": {"failed"}})
	require.NotEqual(t, http.StatusOK, w.Code)
	if loc := w.Header().Get("Location"); loc != "" {
		require.Equal(t, "/login", loc)
	}
}

func TestParseConsoleUsers(t *testing.T) {
	t.Parallel()
	h, err := bcrypt.GenerateFromPassword([]byte("x"), bcrypt.MinCost)
	require.NoError(t, err)
	u, err := parseConsoleUsers(" alice@example.com:resolver:" + string(h) + " ,bob:viewer:" + string(h) + ",")
	require.NoError(t, err)
	require.Len(t, u, 2)
	require.Equal(t, console.RoleResolver, u["alice@example.com"].role)
	require.Equal(t, console.RoleViewer, u["bob"].role)
	for _, bad := range []string{"", ",", ":viewer:" + string(h), "a:b:c", "a:viewer", "a:viewer:" + string(h) + ",a:resolver:" + string(h)} {
		_, err := parseConsoleUsers(bad)
		require.Error(t, err, "%q", bad)
		require.NotContains(t, err.Error(), string(h))
	}
}
