package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// hashPassword runs "payonce console hash-password" with pw on stdin.
func hashPassword(t *testing.T, pw string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "console", "hash-password")
	cmd.Env = scrubbedEnv(nil)
	cmd.Stdin = strings.NewReader(pw)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "%v", err)
		code = ee.ExitCode()
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

func TestConsoleHashPassword(t *testing.T) {
	t.Parallel()
	r := hashPassword(t, "correct horse battery staple\n")
	require.Equal(t, 0, r.code, "%s", r)
	hash := strings.TrimSpace(r.stdout)
	require.NoError(t, bcrypt.CompareHashAndPassword([]byte(hash), []byte("correct horse battery staple")),
		"the trailing newline is not part of the password")
	require.NotContains(t, r.stdout+r.stderr, "correct horse", "the password is never printed")

	for _, bad := range []struct{ in, want string }{
		{"", "empty"},
		{"\n", "empty"},
		{strings.Repeat("x", 73) + "\n", "longer than 72 bytes"},
	} {
		r := hashPassword(t, bad.in)
		require.Equal(t, 2, r.code, "%q: %s", bad.in, r)
		require.Contains(t, r.stderr, bad.want)
		require.Empty(t, r.stdout)
	}
	// The password is never a flag.
	r = runMain(t, nil, "console", "hash-password", "--password", "x")
	require.Equal(t, 2, r.code, "%s", r)
}

// The console refuses to start without operators, with a bad operator
// list, or on a network address without TLS; each is exit code 2 and says
// what to do.
func TestConsoleRefusesToStart(t *testing.T) {
	t.Parallel()
	tg := sqliteTarget(t)
	require.Equal(t, 0, runMain(t, tg.env(), "migrate").code)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	require.NoError(t, err)
	good := "alice:resolver:" + string(hash)
	for _, c := range []struct {
		name  string
		env   map[string]string
		args  []string
		wants []string
	}{
		{"no users", tg.env(), nil, []string{"PAYONCE_CONSOLE_USERS is not set", "payonce console hash-password"}},
		{"blank users", with(tg.env(), "PAYONCE_CONSOLE_USERS", " , "), nil, []string{"lists no user", "hash-password"}},
		{"two fields", with(tg.env(), "PAYONCE_CONSOLE_USERS", "alice:resolver"), nil, []string{"entry 1 is not name:role:bcrypt-hash"}},
		{"bad role", with(tg.env(), "PAYONCE_CONSOLE_USERS", "alice:admin:"+string(hash)), nil, []string{`role "admin"`}},
		{"not a hash", with(tg.env(), "PAYONCE_CONSOLE_USERS", "alice:viewer:secret123"), nil, []string{"not a bcrypt hash"}},
		{"twice", with(tg.env(), "PAYONCE_CONSOLE_USERS", good+","+good), nil, []string{"listed twice"}},
		{"short key", with(tg.env(), "PAYONCE_CONSOLE_USERS", good, "PAYONCE_CONSOLE_SESSION_KEY", "short"), nil, []string{"at least 32"}},
		{"network without TLS", with(tg.env(), "PAYONCE_CONSOLE_USERS", good), []string{"--addr", "0.0.0.0:0"}, []string{"not a loopback address", "--tls-cert"}},
		{"all interfaces", with(tg.env(), "PAYONCE_CONSOLE_USERS", good), []string{"--addr", ":8088"}, []string{"not a loopback address"}},
		{"half TLS", with(tg.env(), "PAYONCE_CONSOLE_USERS", good), []string{"--tls-cert", "c.pem"}, []string{"go together"}},
		{"provider flag", with(tg.env(), "PAYONCE_CONSOLE_USERS", good), []string{"--provider", "stripe"}, []string{"--provider does not apply"}},
		{"bad addr", with(tg.env(), "PAYONCE_CONSOLE_USERS", good), []string{"--addr", "nope"}, []string{"not HOST:PORT"}},
	} {
		r := runMain(t, c.env, append([]string{"console"}, c.args...)...)
		require.Equal(t, 2, r.code, "%s: %s", c.name, r)
		for _, w := range c.wants {
			require.Contains(t, r.stderr, w, "%s", c.name)
		}
		require.NotContains(t, r.stderr, string(hash), "%s: a hash is never printed", c.name)
	}
}

// "payonce console" as a real process: it serves the login page on
// loopback, a login opens the console, and SIGTERM stops it cleanly.
func TestConsoleServes(t *testing.T) {
	t.Parallel()
	env, ids := inReview(t, "order-cs1", "order-cs2")
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret pw"), bcrypt.MinCost)
	require.NoError(t, err)
	b := startBinary(t, with(env, "PAYONCE_CONSOLE_USERS", "alice:resolver:"+string(hash)), "console", "--addr", "127.0.0.1:0")
	m := regexp.MustCompile(`console on (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(b.first)
	require.NotNil(t, m, b.first)
	require.Contains(t, b.first, "resend needs provider credentials")
	base := m[1]

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	// Unauthenticated: to the login page.
	resp, err := hc.Get(base + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, base+"/login", resp.Request.URL.String())
	require.Contains(t, string(body), `id="login"`)
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(body))
	require.NotNil(t, csrf)

	resp, err = hc.PostForm(base+"/login", url.Values{"csrf": {csrf[1]}, "user": {"alice"}, "password": {"s3cret pw"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, base+"/", resp.Request.URL.String(), "a login lands on the overview")
	u, _ := url.Parse(base)
	var names []string
	for _, c := range jar.Cookies(u) {
		names = append(names, c.Name)
	}
	require.Contains(t, names, "payonce_console_session")

	// Without provider credentials: an order id is found, failed is
	// recorded, and a resend is refused naming the variable it needs.
	get := func(path string) (string, string) {
		t.Helper()
		resp, err := hc.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		return resp.Request.URL.Path, string(body)
	}
	post := func(path string, form url.Values) string {
		t.Helper()
		resp, err := hc.PostForm(base+path, form)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	at, page := get("/search?q=order-cs1")
	require.Equal(t, "/ops/"+ids[0], at)
	tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, tok, page)
	// The form names the review it was shown for; the console refuses a
	// resolution without it (a stale form).
	reviewAt := regexp.MustCompile(`name="review_at" value="([0-9]+)"`)
	at0 := reviewAt.FindStringSubmatch(page)
	require.NotNil(t, at0, page)
	page = post("/ops/"+ids[0]+"/resolve", url.Values{"csrf": {tok[1]}, "review_at": {at0[1]}, "outcome": {"failed"}, "note": {"nothing at Stripe"}})
	require.Regexp(t, `id="flash" class="ok"`, page)
	r := runMain(t, env, "ops", "show", ids[0], "--json")
	require.Equal(t, "failed", r.jsonObject(t)["operation"].(map[string]any)["status"], "%s", r)

	_, page = get("/ops/" + ids[1])
	tok = regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, tok, page)
	at1 := reviewAt.FindStringSubmatch(page)
	require.NotNil(t, at1, page)
	page = post("/ops/"+ids[1]+"/resolve", url.Values{"csrf": {tok[1]}, "review_at": {at1[1]}, "outcome": {"resend"}, "note": {"again"}})
	require.Regexp(t, `id="flash" class="error"`, page)
	require.Contains(t, page, "STRIPE_API_KEY not set")
	r = runMain(t, env, "ops", "show", ids[1], "--json")
	require.Equal(t, "manual_review", r.jsonObject(t)["operation"].(map[string]any)["status"], "%s", r)

	rest := b.stop(t, syscall.SIGTERM)
	require.NotContains(t, rest, "s3cret")
}

// "payonce demo --console" keeps the run's ledger open in the console,
// with a one-time resolver login printed to stderr, until SIGTERM.
func TestDemoConsole(t *testing.T) {
	t.Parallel()
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "127.0.0.1:0"}, "use it with --console"},
		{[]string{"--console", "--addr", "0.0.0.0:8088"}, "not a loopback address"},
		{[]string{"--console", "--addr", "x"}, "not HOST:PORT"},
	} {
		r := runMain(t, nil, append([]string{"demo"}, bad.args...)...)
		require.Equal(t, 2, r.code, "%v: %s", bad.args, r)
		require.Contains(t, r.stderr, bad.want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "demo", "--orders", "3", "--refunds", "1", "--fault-rate", "0", "--webhooks=false",
		"--console", "--addr", "127.0.0.1:0")
	cmd.Env = scrubbedEnv(nil)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	require.NoError(t, cmd.Start())
	lineRE := regexp.MustCompile(`console at (http://127\.0\.0\.1:\d+)/ ; log in as user "demo" with password (\S+) `)
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := lineRE.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	var m []string
	select {
	case m = <-found:
	case <-ctx.Done():
	}
	require.NotNil(t, m, "no console line")

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := hc.Get(m[1] + "/login")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(body))
	require.NotNil(t, csrf)
	resp, err = hc.PostForm(m[1]+"/login", url.Values{"csrf": {csrf[1]}, "user": {"demo"}, "password": {m[2]}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, m[1]+"/", resp.Request.URL.String(), "the printed password logs in")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	require.Contains(t, stdout.String(), "operations", "the report is printed as without --console")
	require.NotContains(t, stdout.String(), m[2], "the password goes to stderr only")
}
