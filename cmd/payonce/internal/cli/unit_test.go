package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
)

func TestParseLedger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want ledgerSpec
		err  string
	}{
		{in: "postgres://u@h/db", want: ledgerSpec{postgres: true, url: "postgres://u@h/db"}},
		{in: "PostgreSQL://u@h/db", want: ledgerSpec{postgres: true, url: "PostgreSQL://u@h/db"}},
		{in: "sqlite:payonce.db", want: ledgerSpec{path: "payonce.db"}},
		{in: "sqlite:///var/lib/payonce.db", want: ledgerSpec{path: "/var/lib/payonce.db"}},
		{in: "sqlite://rel/x.db", want: ledgerSpec{path: "rel/x.db"}},
		{in: "/tmp/x.db", want: ledgerSpec{path: "/tmp/x.db"}},
		{in: "x.db", want: ledgerSpec{path: "x.db"}},
		{in: "sqlite:", err: "names no file"},
		{in: "", err: "is empty"},
		{in: "mysql://x", err: "unsupported scheme"},
	} {
		got, err := parseLedger(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	require.Equal(t, "postgres://alice:xxxxx@db/x", redactURL("postgres://alice:secret@db/x"))
	require.NotContains(t, redactURL("postgres://db/x?password=secret"), "secret")
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "24h": 24 * time.Hour, "30d": 30 * 24 * time.Hour, "1d12h": 36 * time.Hour, "0": 0,
	} {
		got, err := parseDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "d", "xd", "1dx", "-1h", "forever"} {
		_, err := parseDuration(in)
		require.Error(t, err, in)
	}
}

func TestParseAmountAndCurrency(t *testing.T) {
	t.Parallel()
	n, err := parseAmount("1999", true)
	require.NoError(t, err)
	require.EqualValues(t, 1999, n)
	n, err = parseAmount("", false)
	require.NoError(t, err)
	require.Zero(t, n)
	for _, bad := range []string{"", "0", "-1", "1.5", "1,5", "x", "1000000000000"} {
		_, err := parseAmount(bad, true)
		require.Error(t, err, bad)
		require.Equal(t, ExitUsage, exitCode(err), bad)
	}
	c, err := parseCurrency("eur", true)
	require.NoError(t, err)
	require.Equal(t, "EUR", c)
	for _, bad := range []string{"", "EURO", "XXX", "12"} {
		_, err := parseCurrency(bad, true)
		require.Error(t, err, bad)
	}
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return -1
}

func TestCallExit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err     error
		code    int
		outcome bool
	}{
		{nil, ExitOK, true},
		{&payonce.DeclinedError{Provider: "stripe", Code: "card_declined"}, ExitFailed, true},
		{fmt.Errorf("x: %w", payonce.ErrOutcomeUnknown), ExitUnknown, true},
		{payonce.ErrInProgress, ExitInProgress, true},
		{fmt.Errorf("%w: reason", payonce.ErrManualReview), ExitReview, true},
		{payonce.ErrProviderUnavailable, ExitUnavailable, true},
		{&payonce.ValidationError{Field: "Amount", Problem: "bad"}, ExitUsage, false},
		{fmt.Errorf("%w: %w", payonce.ErrFingerprintMismatch, ledger.ErrFingerprintMismatch), ExitUsage, false},
		{errors.New("disk on fire"), ExitError, false},
		{fmt.Errorf("%w: the charge of order \"o\" is unknown", payonce.ErrNotSettled), ExitChargeNotSettled, false},
	} {
		code, outcome := callExit(tc.err)
		require.Equal(t, tc.code, code, "%v", tc.err)
		require.Equal(t, tc.outcome, outcome, "%v", tc.err)
	}
}

// The margin is the library's: never less than one attempt timeout plus
// the clock-skew allowance, whatever the key TTL. (It used to be a quarter
// of a short TTL: --key-ttl 10m --timeout 5m gave 2m30s, shorter than one
// attempt.)
func TestSafetyMargin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl, timeout, skew, want time.Duration
	}{
		{24 * time.Hour, 0, 0, 24*time.Hour/100 + 30*time.Second},
		{24 * time.Hour, 5 * time.Second, time.Minute, 14*time.Minute + 24*time.Second + 5*time.Second},
		{10 * time.Minute, 5 * time.Minute, time.Minute, 6 * time.Minute},
		{10 * time.Minute, 5 * time.Minute, 0, 6 * time.Minute},
		{20 * time.Second, time.Second, time.Second, 2 * time.Second},
		{2 * time.Second, time.Second, 200 * time.Millisecond, 1200 * time.Millisecond},
	} {
		got := safetyMargin(tc.ttl, tc.timeout, tc.skew)
		require.Equal(t, tc.want, got, "%+v", tc)
		timeout, skew := tc.timeout, tc.skew
		if timeout == 0 {
			timeout = 30 * time.Second
		}
		if skew == 0 {
			skew = time.Minute
		}
		require.GreaterOrEqual(t, got, timeout+skew, "%+v", tc)
	}

	require.NoError(t, checkMargin(10*time.Minute, "--key-ttl 10m", 5*time.Minute, "--timeout 5m", time.Minute, "fix"))
	err := checkMargin(5*time.Minute+30*time.Second, "--key-ttl 5m30s", 5*time.Minute, "--timeout 5m", time.Minute, "use a longer --key-ttl")
	require.EqualError(t, err, "--timeout 5m plus the 1m clock-skew allowance leaves no time to resend inside --key-ttl 5m30s: "+
		"resends stop 6m before the key expires; use a longer --key-ttl")
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, ExitUsage, ee.code)
	// Exactly the TTL leaves nothing either.
	require.Error(t, checkMargin(6*time.Minute, "--key-ttl 6m", 5*time.Minute, "--timeout 5m", time.Minute, "fix"))
	// 1 % of a long TTL outweighs a small skew, and the message says so.
	err = checkMargin(24*time.Hour, "the 24h key TTL of stripe", 23*time.Hour+50*time.Minute, "--timeout 23h50m", time.Minute, "fix")
	require.ErrorContains(t, err, "the 14m24s clock-skew allowance (1% of the key TTL, more than --clock-skew 1m)")
}

func TestAttemptsPerOperation(t *testing.T) {
	t.Parallel()
	ap := newAttemptsPerOp()
	require.Equal(t, "1: 0, 2: 0, 3-5: 0, 6+: 0", ap.text())
	for _, op := range []ledger.Operation{
		{ID: "b", Kind: "charge", References: []string{"o2"}, Attempts: 1, Status: ledger.StatusSucceeded},
		{ID: "a", Kind: "charge", References: []string{"o1"}, Attempts: 2, Status: ledger.StatusSucceeded},
		{ID: "d", Kind: "refund", References: []string{"o1", "1"}, Attempts: 33, Status: ledger.StatusManualReview},
		{ID: "c", Kind: "refund", References: []string{"o2", "1"}, Attempts: 33, Status: ledger.StatusSucceeded},
		{ID: "e", Kind: "charge", References: []string{"o3"}, Attempts: 5, Status: ledger.StatusFailed},
		{ID: "f", Kind: "charge", References: []string{"o4"}, Attempts: 3, Status: ledger.StatusSucceeded},
		{ID: "g", Kind: "charge", References: []string{"o5"}, Attempts: 6, Status: ledger.StatusSucceeded},
		{ID: "h", Kind: "charge", References: []string{"o6"}, Attempts: 0, Status: ledger.StatusPending},
	} {
		ap.add(op)
	}
	require.Equal(t, 33, ap.Max)
	require.Equal(t, &maxOpJSON{ID: "c", Kind: "refund", References: []string{"o2", "1"}, Status: "succeeded"}, ap.MaxOperation, "ties go to the lowest id")
	require.Equal(t, map[string]int{"0": 1, "1": 1, "2": 1, "3-5": 2, "6+": 3}, ap.Distribution)
	require.Equal(t, "0: 1, 1: 1, 2: 1, 3-5: 2, 6+: 3", ap.text())
	for n, want := range map[int]string{0: "0", 1: "1", 2: "2", 3: "3-5", 5: "3-5", 6: "6+", 1000: "6+"} {
		require.Equal(t, want, attemptBucket(n), n)
	}
}

func TestMoneyAndSuggest(t *testing.T) {
	t.Parallel()
	require.Equal(t, "0.05", money(5))
	require.Equal(t, "1,234.56", money(123456))
	require.Equal(t, "-1,000,000.00", money(-100000000))
	require.Equal(t, "match", agree(3, 3))
	require.Equal(t, "differ by 0.02", agree(1, 3))
	require.Equal(t, "3%", pct(0.2*0.15))
	require.Equal(t, "charge", suggest("chrage"))
	require.Equal(t, "review", suggest("reveiw"))
	require.Equal(t, "", suggest("xyzzy"))
}

func TestProgressOnATerminal(t *testing.T) {
	t.Parallel()
	var buf testkit.SyncBuffer
	p := &progress{w: &buf, tty: true}
	p.start("calling", 10)
	p.add(5)
	p.draw()
	p.done("called 10")
	p.start("reconciling", 0)
	p.status("3 operations open", time.Now().Add(time.Second))
	p.draw()
	p.done("")
	p.stop()
	out := buf.String()
	require.Contains(t, out, "\r\033[Kcalling      [===============>              ] 5/10")
	require.Contains(t, out, "called 10 (")
	require.Contains(t, out, "3 operations open, next check in ")

	var plain testkit.SyncBuffer
	q := newProgress(&plain)
	require.False(t, q.tty, "a buffer is no terminal")
	q.start("calling", 3)
	q.add(3)
	q.done("done")
	require.Regexp(t, `^done \(\d`, plain.String())
}

// The progress display honours TERM=dumb (plain lines, no redrawing) and
// NO_COLOR (redrawn without escape sequences).
func TestProgressEnvironment(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	var buf testkit.SyncBuffer
	dumb := (&App{Env: env("TERM", "dumb")}).newProgress(&buf)
	require.False(t, dumb.tty, "TERM=dumb is no terminal to redraw on")
	dumb.start("reconcile", 0)
	dumb.report("after pass 1: claimed 2", time.Time{})
	dumb.done("")
	require.Equal(t, "payonce: after pass 1: claimed 2\n", buf.String())

	var nc testkit.SyncBuffer
	p := (&App{Env: env("NO_COLOR", "1")}).newProgress(&nc)
	require.True(t, p.plainRedraw)
	p.tty = true // as on a terminal
	p.start("reconcile", 0)
	p.report("after pass 1: claimed 12, settled 10", time.Time{})
	p.draw()
	p.report("short", time.Time{})
	p.draw()
	p.done("")
	out := nc.String()
	require.NotContains(t, out, "\033", "NO_COLOR: no escape sequences")
	require.Contains(t, out, "\rreconcile")
	// The shorter line is padded over the longer one it replaces.
	require.Regexp(t, `short +\r`, out)

	var color testkit.SyncBuffer
	q := (&App{Env: env()}).newProgress(&color)
	require.False(t, q.plainRedraw)
	q.tty = true
	q.start("reconcile", 0)
	q.draw()
	q.done("")
	require.Contains(t, color.String(), "\r\033[K")
}

// callExit: a ledger lost before a request could leave is
// ExitLedgerUnavailable; the same loss after it may have left (the library
// wraps it in ErrOutcomeUnknown) is ExitUnknown; a provider's network
// error or a refused statement is neither.
func TestCallExitLedgerUnavailable(t *testing.T) {
	t.Parallel()
	connErr := &pgconn.ConnectError{}
	reset := fmt.Errorf("ledgerpg: finish: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET})
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"connect", fmt.Errorf("ledgerpg: begin: %w", connErr), ExitLedgerUnavailable},
		{"reset", reset, ExitLedgerUnavailable},
		{"eof", fmt.Errorf("ledgerpg: begin: %w", io.ErrUnexpectedEOF), ExitLedgerUnavailable},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, ExitLedgerUnavailable},
		{"connection failure", &pgconn.PgError{Code: "08006"}, ExitLedgerUnavailable},
		{"after sending", fmt.Errorf("%w: recording failed: %w", payonce.ErrOutcomeUnknown, reset), ExitUnknown},
		{"refused statement", &pgconn.PgError{Code: "23514"}, ExitError},
		{"provider network", &url.Error{Op: "Post", URL: "https://api.stripe.com", Err: syscall.ECONNREFUSED}, ExitError},
		{"other", errors.New("boom"), ExitError},
	} {
		code, _ := callExit(tc.err)
		require.Equal(t, tc.code, code, tc.name)
	}
}
