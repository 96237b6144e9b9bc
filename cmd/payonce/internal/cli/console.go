package cli

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/term"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/console"
	"github.com/payonce/payonce/ledger"
)

// Environment of "payonce console". Credentials come only from the
// environment, never from flags: a flag is visible to every user of the
// machine in the process list and lands in shell history.
const (
	envConsoleUsers      = "PAYONCE_CONSOLE_USERS"
	envConsoleSessionKey = "PAYONCE_CONSOLE_SESSION_KEY"
)

// Limits of the console's server and of its login.
const (
	consoleReadHeaderTimeout = 5 * time.Second
	consoleReadTimeout       = 15 * time.Second
	// A resolve may ask the provider under every key the operation
	// carried; the write timeout leaves it room.
	consoleWriteTimeout    = 2 * time.Minute
	consoleIdleTimeout     = 60 * time.Second
	consoleMaxHeaderBytes  = 64 << 10
	consoleShutdownTimeout = 10 * time.Second
	// ConsoleSessionTTL is how long a login lasts.
	ConsoleSessionTTL = 12 * time.Hour
	// A login form is a user name and a password: a few hundred bytes.
	consoleLoginMaxBytes = 8 << 10
	// At most this many bcrypt comparisons run at once: each costs tens of
	// milliseconds of CPU, and a flood of logins must not starve the pages.
	consoleLoginConcurrency = 4
	consoleSessionCookie    = "payonce_console_session"
	consoleLoginCookie      = "payonce_console_login"
	consoleMinKeyBytes      = 32
	// bcrypt reads at most 72 bytes of a password; a longer one would be
	// silently truncated, so hash-password refuses it.
	consoleMaxPasswordBytes = 72
)

// consoleSecurityHeaders are the headers of the login and logout pages,
// the same as the console's own: no inline script, no framing.
func consoleSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// consoleUser is one entry of PAYONCE_CONSOLE_USERS.
type consoleUser struct {
	name string
	role console.Role
	hash []byte
}

// parseConsoleUsers reads PAYONCE_CONSOLE_USERS: comma-separated
// name:role:bcrypt-hash. Errors never contain a hash.
func parseConsoleUsers(s string) (map[string]consoleUser, error) {
	users := map[string]consoleUser{}
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := strings.SplitN(entry, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("entry %d is not name:role:bcrypt-hash", i+1)
		}
		name, role, hash := strings.TrimSpace(parts[0]), console.Role(strings.TrimSpace(parts[1])), []byte(strings.TrimSpace(parts[2]))
		switch {
		case name == "":
			return nil, fmt.Errorf("entry %d has no user name", i+1)
		case len(name) > 200:
			return nil, fmt.Errorf("entry %d: the user name is longer than 200 bytes", i+1)
		case role != console.RoleViewer && role != console.RoleResolver:
			return nil, fmt.Errorf("user %q: role %q is neither %s nor %s", name, role, console.RoleViewer, console.RoleResolver)
		}
		if _, err := bcrypt.Cost(hash); err != nil {
			return nil, fmt.Errorf("user %q: the third field is not a bcrypt hash (make one with \"payonce console hash-password\")", name)
		}
		if _, dup := users[name]; dup {
			return nil, fmt.Errorf("user %q is listed twice", name)
		}
		users[name] = consoleUser{name: name, role: role, hash: hash}
	}
	if len(users) == 0 {
		return nil, errors.New("it lists no user")
	}
	return users, nil
}

// ConsoleOptions configures ConsoleHandler.
type ConsoleOptions struct {
	Store   ledger.Store
	Clients []*payonce.Client
	// Users is PAYONCE_CONSOLE_USERS: comma-separated name:role:bcrypt-hash.
	Users string
	// SessionKey signs the session cookies; nil: random, so sessions end
	// with the process. At least 32 bytes.
	SessionKey []byte
	// TLS: served over TLS, so cookies are Secure.
	TLS    bool
	Now    func() time.Time
	Logger *slog.Logger
}

// ConsoleHandler is the handler of "payonce console": its login and
// logout pages, and the console (package console) behind them at "/".
func ConsoleHandler(o ConsoleOptions) (http.Handler, error) {
	h, _, err := consoleHandler(o)
	return h, err
}

func consoleHandler(o ConsoleOptions) (http.Handler, *consoleAuth, error) {
	users, err := parseConsoleUsers(o.Users)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", envConsoleUsers, err)
	}
	key := o.SessionKey
	if key == nil {
		key = make([]byte, consoleMinKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, nil, err
		}
	}
	if len(key) < consoleMinKeyBytes {
		return nil, nil, fmt.Errorf("%s must be at least %d bytes", envConsoleSessionKey, consoleMinKeyBytes)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	// A dummy hash of the default cost: an unknown user costs the same
	// comparison as a known one, so the time of a failed login does not
	// tell which names exist.
	dummy, err := bcrypt.GenerateFromPassword([]byte("payonce-console-no-such-user"), bcrypt.DefaultCost)
	if err != nil {
		return nil, nil, err
	}
	auth := &consoleAuth{users: users, key: key, now: now, secure: o.TLS, dummy: dummy,
		sem: make(chan struct{}, consoleLoginConcurrency)}
	inner, err := console.New(console.Config{
		Store: o.Store, Clients: o.Clients, Identity: auth.identity, LoginURL: "/login", Secure: o.TLS,
		Now: now, Logger: o.Logger,
		// Derived from the session key: with a fixed key, forms stay
		// valid across a restart; the two uses never share a MAC input.
		CSRFKey: auth.mac("payonce-console-csrf-key"),
	})
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", auth.loginPage)
	mux.HandleFunc("POST /login", auth.login)
	mux.HandleFunc("GET /logout", auth.logoutPage)
	mux.HandleFunc("POST /logout", auth.logout)
	mux.HandleFunc("GET /favicon.ico", http.NotFound)
	mux.Handle("/", inner)
	return mux, auth, nil
}

// consoleAuth is the console's own authentication: users from the
// environment, sessions in an HMAC-signed cookie (no server state).
type consoleAuth struct {
	users  map[string]consoleUser
	key    []byte
	now    func() time.Time
	secure bool
	dummy  []byte
	sem    chan struct{}
}

func (s *consoleAuth) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		// Length-prefixed: no two part lists give the same input.
		fmt.Fprintf(m, "%d:%s", len(p), p)
	}
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// session returns the cookie value of a session of u until exp. The MAC
// covers the user's password hash, so changing a password (or removing
// the user) ends the user's sessions at the next restart.
func (s *consoleAuth) session(u consoleUser, exp time.Time) string {
	name, e := b64.EncodeToString([]byte(u.name)), strconv.FormatInt(exp.Unix(), 10)
	sig := s.mac("session", name, e, string(u.hash))
	return name + "." + e + "." + b64.EncodeToString(sig)
}

// check verifies a session cookie value and returns its user.
func (s *consoleAuth) check(v string) (consoleUser, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return consoleUser{}, false
	}
	raw, err := b64.DecodeString(parts[0])
	if err != nil {
		return consoleUser{}, false
	}
	u, ok := s.users[string(raw)]
	if !ok {
		return consoleUser{}, false
	}
	sig, err := b64.DecodeString(parts[2])
	// hmac.Equal: a comparison that stops at the first differing byte
	// would let a client find a valid signature byte by byte.
	if err != nil || !hmac.Equal(sig, s.mac("session", parts[0], parts[1], string(u.hash))) {
		return consoleUser{}, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !s.now().Before(time.Unix(exp, 0)) {
		return consoleUser{}, false
	}
	return u, true
}

// identity is console.Config.Identity: the operator of the session cookie.
func (s *consoleAuth) identity(r *http.Request) (console.Operator, bool) {
	c, err := r.Cookie(consoleSessionCookie)
	if err != nil {
		return console.Operator{}, false
	}
	u, ok := s.check(c.Value)
	if !ok {
		return console.Operator{}, false
	}
	return console.Operator{Name: u.name, Role: u.role}, true
}

func (s *consoleAuth) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure}
}

var consoleAuthPage = template.Must(template.New("auth").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>payonce console: {{.Title}}</title>
<link rel="stylesheet" href="/static/console.css"></head>
<body class="login"><main>
<h1>payonce console</h1>
{{if .Error}}<p id="flash" class="error">{{.Error}}</p>{{end}}
{{if .Logout}}<form id="logout" method="post" action="/logout">
<p>Signed in as <span id="whoami">{{.User}}</span>.</p>
<input type="hidden" name="csrf" value="{{.CSRF}}">
<button id="logout-submit" type="submit">Log out</button>
</form>{{else}}<form id="login" method="post" action="/login">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<label>User <input name="user" autocomplete="username" required maxlength="200" autofocus></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required maxlength="200"></label>
<button id="login" type="submit">Log in</button>
</form>{{end}}
</main></body></html>
`))

type consoleAuthData struct {
	Title, Error, User, CSRF string
	Logout                   bool
}

func (s *consoleAuth) render(w http.ResponseWriter, status int, d consoleAuthData) {
	consoleSecurityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = consoleAuthPage.Execute(w, d)
}

// loginPage shows the form. A fresh random value in a cookie, and its MAC
// in the form, guard the login against cross-site forgery (another site
// logging the browser in as the attacker's user).
func (s *consoleAuth) loginPage(w http.ResponseWriter, r *http.Request) {
	s.showLogin(w, r, http.StatusOK, "")
}

func (s *consoleAuth) showLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	// The browser's value is kept while it has one: a second tab, or a
	// request the browser makes on its own (a favicon sent here by the
	// console), must not invalidate a form already shown.
	n := ""
	if c, err := r.Cookie(consoleLoginCookie); err == nil {
		if raw, err := b64.DecodeString(c.Value); err == nil && len(raw) == 16 {
			n = c.Value
		}
	}
	if n == "" {
		nonce := make([]byte, 16)
		_, _ = rand.Read(nonce)
		n = b64.EncodeToString(nonce)
	}
	http.SetCookie(w, s.cookie(consoleLoginCookie, n, 3600))
	s.render(w, status, consoleAuthData{Title: "log in", Error: msg, CSRF: b64.EncodeToString(s.mac("login", n))})
}

// consoleLoginFailed is the one message of every failed login: it does not
// say whether the user exists.
const consoleLoginFailed = "wrong user or password"

func (s *consoleAuth) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, consoleLoginMaxBytes)
	if err := r.ParseForm(); err != nil {
		s.showLogin(w, r, http.StatusBadRequest, "the form could not be read")
		return
	}
	c, err := r.Cookie(consoleLoginCookie)
	tok, derr := b64.DecodeString(r.PostFormValue("csrf"))
	if err != nil || derr != nil || !hmac.Equal(tok, s.mac("login", c.Value)) {
		s.showLogin(w, r, http.StatusForbidden, "the login form expired: try again")
		return
	}
	name, password := r.PostFormValue("user"), r.PostFormValue("password")
	u, known := s.users[name]
	hash := u.hash
	if !known {
		hash = s.dummy
	}
	select {
	case s.sem <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	err = bcrypt.CompareHashAndPassword(hash, []byte(password))
	<-s.sem
	if err != nil || !known {
		s.showLogin(w, r, http.StatusUnauthorized, consoleLoginFailed)
		return
	}
	http.SetCookie(w, s.cookie(consoleLoginCookie, "", -1))
	http.SetCookie(w, s.cookie(consoleSessionCookie, s.session(u, s.now().Add(ConsoleSessionTTL)), int(ConsoleSessionTTL/time.Second)))
	// Always to the overview: a redirect target taken from the request
	// could send the browser to another site.
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logoutToken is the CSRF token of the logout form: bound to the session
// cookie, which another site can neither read nor send (SameSite=Strict).
func (s *consoleAuth) logoutToken(session string) string {
	return b64.EncodeToString(s.mac("logout", session))
}

func (s *consoleAuth) logoutPage(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(consoleSessionCookie)
	if err != nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	u, ok := s.check(c.Value)
	if !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, consoleAuthData{Title: "log out", User: u.name + " (" + string(u.role) + ")",
		CSRF: s.logoutToken(c.Value), Logout: true})
}

func (s *consoleAuth) logout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, consoleLoginMaxBytes)
	c, err := r.Cookie(consoleSessionCookie)
	if err != nil {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	tok, derr := b64.DecodeString(r.PostFormValue("csrf"))
	if derr != nil || !hmac.Equal(tok, s.mac("logout", c.Value)) {
		consoleSecurityHeaders(w.Header())
		http.Error(w, "the logout form expired: open /logout again", http.StatusForbidden)
		return
	}
	http.SetCookie(w, s.cookie(consoleSessionCookie, "", -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// consoleSessionKey reads PAYONCE_CONSOLE_SESSION_KEY (nil when unset).
func consoleSessionKey(env func(string) string) ([]byte, error) {
	v := env(envConsoleSessionKey)
	if v == "" {
		return nil, nil
	}
	if len(v) < consoleMinKeyBytes {
		return nil, usageErrorf("%s must be at least %d characters (e.g. the output of \"openssl rand -base64 48\"); unset, each start picks a random key and logins end with the process",
			envConsoleSessionKey, consoleMinKeyBytes)
	}
	return []byte(v), nil
}

// isLoopback reports whether host (of a HOST:PORT) is a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

const consoleUsersHelp = envConsoleUsers + ` lists the operators, comma-separated, as
name:role:bcrypt-hash with role viewer (reads every page) or resolver (also
resolves), e.g.
  export ` + envConsoleUsers + `="alice@example.com:resolver:$(payonce console hash-password)"
("payonce console hash-password" reads the password from stdin).`

func runConsole(ctx context.Context, a *App, args []string) error {
	if len(args) > 0 && args[0] == "hash-password" {
		return runConsoleHashPassword(ctx, a, args[1:])
	}
	f := newFlags("console", "payonce console [--addr HOST:PORT] [--tls-cert FILE --tls-key FILE] [flags] | payonce console hash-password",
		`Serves the operator console: the overview of the ledger, the review queue,
each operation's timeline, search, resolving operations in review (one by
one or in bulk, each checked by Client.Resolve), and the open audit findings
("payonce audit"), which resolvers acknowledge, in a browser.

Operators log in; credentials come only from the environment:
  `+strings.ReplaceAll(consoleUsersHelp, "\n", "\n  ")+`
  `+envConsoleSessionKey+` (optional, 32+ characters) signs the session
  cookies; unset, a random key per start (logins end with the process).
A login lasts 12h. Without `+envConsoleUsers+` the console refuses to start
(exit code 2).

It listens on 127.0.0.1 by default. An address that is not loopback needs
--tls-cert and --tls-key: passwords and session cookies never cross a
network in clear text.

Resolving as resend asks the provider first, so it needs the provider's
credentials in the environment (as "review resolve" does); the console
builds a client for every provider whose credentials are set. Without them
it still starts: recording succeeded or failed needs none, and a resend is
refused with the reason. SIGINT or SIGTERM stops it gracefully.`)
	lf := addLedgerFlags(f, nil, "")
	pf := addProviderFlags(f)
	var addr, certFile, keyFile string
	f.StringVar(&addr, "addr", "127.0.0.1:8088", "listen on `HOST:PORT`")
	f.StringVar(&certFile, "tls-cert", "", "serve HTTPS with this certificate `FILE` (PEM; with --tls-key)")
	f.StringVar(&keyFile, "tls-key", "", "the private key `FILE` of --tls-cert (PEM)")
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	if f.wasSet("provider") {
		return usageErrorf("console builds a client for every provider whose credentials are set; --provider does not apply")
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--addr %q is not HOST:PORT: %v", addr, err)
	}
	if (certFile == "") != (keyFile == "") {
		return usageErrorf("--tls-cert and --tls-key go together")
	}
	tls := certFile != ""
	if !tls && !isLoopback(host) {
		// Refused, not warned: the login sends a password and every page
		// a session cookie that can move money; in clear text on a network
		// anyone on the path takes them.
		return usageErrorf("--addr %s is not a loopback address: serving the console beyond this machine needs --tls-cert and --tls-key "+
			"(or keep 127.0.0.1 and put a TLS proxy in front)", addr)
	}
	usersEnv := a.Env(envConsoleUsers)
	if strings.TrimSpace(usersEnv) == "" {
		return usageErrorf("the console needs operators: %s is not set. %s", envConsoleUsers, consoleUsersHelp)
	}
	if _, err := parseConsoleUsers(usersEnv); err != nil {
		return usageErrorf("%s: %v. %s", envConsoleUsers, err, consoleUsersHelp)
	}
	key, err := consoleSessionKey(a.Env)
	if err != nil {
		return err
	}
	l, err := a.openLedger(ctx, lf, openExisting)
	if err != nil {
		return err
	}
	defer l.Close()
	var clients []*payonce.Client
	var with []string
	for _, name := range a.Providers.Names() {
		p := *pf
		p.provider, p.fixed = name, true
		var c *payonce.Client
		if missing := a.Providers.missing(name, a.Env); len(missing) > 0 {
			if c, err = a.offlineClient(&p, l.store, missing); err != nil {
				// Its operations stay readable; the console says it
				// cannot resolve them.
				continue
			}
		} else {
			c, err = a.newClient(&p, l.store, quiet)
			with = append(with, name)
		}
		if err != nil {
			return err
		}
		clients = append(clients, c)
	}
	h, err := ConsoleHandler(ConsoleOptions{Store: l.store, Clients: clients, Users: usersEnv, SessionKey: key, TLS: tls,
		Now: a.Now, Logger: a.logger(slog.LevelWarn)})
	if err != nil {
		return withCode(ExitUsage, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErrorf("--addr %s: %v", addr, err)
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	clientsMsg := "resend needs provider credentials, none are set (succeeded and failed need none)"
	if len(with) > 0 {
		clientsMsg = "resend through " + strings.Join(with, ", ")
	}
	fmt.Fprintf(a.Stderr, "payonce: console on %s://%s/ (ledger %s; %s); SIGINT or SIGTERM stops\n", scheme, ln.Addr(), l.desc, clientsMsg)
	return serveConsole(ctx, ln, h, certFile, keyFile)
}

// offlineClient is a client of pf's provider for a console without that
// provider's credentials. The console resolves an operation, finds an
// order's operations and records succeeded or failed through its
// provider's client; none of that asks the provider, so it works without
// credentials, as "review resolve" does. A resend asks the provider first:
// here every request is refused before it leaves the process (the adapter's
// placeholder credentials are never sent anywhere), so Client.Resolve
// refuses the resend with this reason, naming the variables to set.
func (a *App) offlineClient(pf *providerFlags, store ledger.Store, missing []string) (*payonce.Client, error) {
	name := pf.name(a)
	env := func(k string) string {
		if v := a.Env(k); v != "" {
			return v
		}
		for _, m := range missing {
			if k == m {
				return "payonce-console-offline"
			}
		}
		return ""
	}
	p, err := a.Providers.build(name, env, AdapterConfig{KeyTTL: pf.keyTTL, SearchLag: pf.searchLag})
	if err != nil {
		return nil, err
	}
	reason := fmt.Errorf("no request sent: %s not set in the environment of payonce console (a resend asks %s first)",
		strings.Join(missing, " and "), name)
	return payonce.New(payonce.Config{
		Provider: p, Store: store, Logger: a.logger(quiet),
		HTTPClient:     &http.Client{Transport: refuseTransport{reason}},
		AttemptTimeout: pf.timeout, ClockSkew: pf.clockSkew,
		// One try, and no breaker: a refusal says nothing about the
		// provider's health, and its reason must reach the operator
		// rather than "circuit breaker is open".
		Retry:   payonce.RetryPolicy{MaxAttempts: 1},
		Breaker: payonce.BreakerSettings{ConsecutiveFailures: math.MaxUint32},
	})
}

// refuseTransport answers every request with its error, sending nothing.
type refuseTransport struct{ err error }

func (t refuseTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return nil, t.err
}

// serveConsole serves h on ln until ctx ends, then shuts down gracefully.
func serveConsole(ctx context.Context, ln net.Listener, h http.Handler, certFile, keyFile string) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: consoleReadHeaderTimeout,
		ReadTimeout:       consoleReadTimeout,
		WriteTimeout:      consoleWriteTimeout,
		IdleTimeout:       consoleIdleTimeout,
		MaxHeaderBytes:    consoleMaxHeaderBytes,
	}
	errc := make(chan error, 1)
	go func() {
		if certFile != "" {
			errc <- srv.ServeTLS(ln, certFile, keyFile)
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("console server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), consoleShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("console server shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console server: %w", err)
	}
	return nil
}

func runConsoleHashPassword(_ context.Context, a *App, args []string) error {
	f := newFlags("console hash-password", "payonce console hash-password < password",
		`Reads a password from stdin (its first line; typed without echo on a
terminal) and prints its bcrypt hash, for `+envConsoleUsers+`. The
password is never a flag: flags show in the process list and shell history.`)
	if _, err := f.parseArgs(a, args); err != nil {
		return err
	}
	pw, err := readPassword(a, os.Stdin)
	if err != nil {
		return err
	}
	h, err := hashConsolePassword(pw)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.Stdout, string(h))
	return nil
}

// hashConsolePassword is the bcrypt hash of pw for PAYONCE_CONSOLE_USERS.
func hashConsolePassword(pw []byte) ([]byte, error) {
	switch {
	case len(pw) == 0:
		return nil, usageErrorf("the password on stdin is empty")
	case len(pw) > consoleMaxPasswordBytes:
		return nil, usageErrorf("the password is longer than %d bytes, bcrypt's limit: it would be cut", consoleMaxPasswordBytes)
	}
	return bcrypt.GenerateFromPassword(pw, bcrypt.DefaultCost)
}

// readPassword reads one line from in, without echo when it is a terminal.
func readPassword(a *App, in io.Reader) ([]byte, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fd := int(f.Fd())
		fmt.Fprint(a.Stderr, "Password: ")
		pw, err := term.ReadPassword(fd)
		fmt.Fprintln(a.Stderr)
		return pw, err
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return []byte(strings.TrimRight(line, "\r\n")), nil
}
