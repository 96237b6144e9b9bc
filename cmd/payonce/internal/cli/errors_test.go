package cli_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const testKey = "sk_test_DoNotPrintMe0123456789"

// Every error a person can act on exits 2 and names what to fix.
func TestActionableErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	migrated := "sqlite:" + filepath.Join(dir, "ok.db")
	r := runMain(t, nil, "migrate", "--ledger", migrated)
	require.Equal(t, 0, r.code, "%s", r)
	env := map[string]string{"PAYONCE_LEDGER": migrated, "STRIPE_API_KEY": testKey}
	charge := []string{"charge", "--order", "o1", "--amount", "100", "--currency", "USD"}

	requireUsageErrors(t, []usageCase{
		{"unknown command", nil, []string{"chrage"}, []string{`unknown command "chrage"`, `did you mean "charge"`, "payonce help"}},
		{"unknown subcommand", env, []string{"ops", "delete"}, []string{`unknown ops subcommand "delete"`}},
		{"no subcommand", env, []string{"review"}, []string{"review needs a subcommand"}},
		{"unknown provider", env, append(charge, "--provider", "worldpay"), []string{`unknown provider "worldpay"`, "known providers are adyen, checkout, paypal, stripe, yookassa"}},
		{"unknown provider from env", with(env, "PAYONCE_PROVIDER", "worldpay"), charge, []string{`unknown provider "worldpay"`}},
		{"missing credential", map[string]string{"PAYONCE_LEDGER": migrated}, charge, []string{"STRIPE_API_KEY", "environment"}},
		{"bad base URL", env, append(charge, "--base-url", "ftp://example"), []string{"BaseURL", "https://"}},
		{"amount with decimals", env, []string{"charge", "--order", "o1", "--amount", "19.99", "--currency", "USD"}, []string{"--amount", "1999"}},
		{"amount not a number", env, []string{"charge", "--order", "o1", "--amount", "ten", "--currency", "USD"}, []string{"--amount", "not an integer"}},
		{"amount zero", env, []string{"charge", "--order", "o1", "--amount", "0", "--currency", "USD"}, []string{"--amount must be greater than 0"}},
		{"amount negative", env, []string{"refund", "--order", "o1", "--amount", "-5", "--currency", "USD"}, []string{"--amount must be greater than 0"}},
		{"amount missing", env, []string{"charge", "--order", "o1", "--currency", "USD"}, []string{"--amount is required"}},
		{"bad currency", env, []string{"charge", "--order", "o1", "--amount", "100", "--currency", "USDX"}, []string{"--currency", "ISO 4217"}},
		{"currency missing", env, []string{"charge", "--order", "o1", "--amount", "100"}, []string{"--currency is required"}},
		{"currency needed with amount", env, []string{"capture", "--order", "o1", "--amount", "100"}, []string{"--currency is required"}},
		{"order missing", env, []string{"refund"}, []string{"--order is required"}},
		{"refund seq", env, []string{"refund", "--order", "o1", "--refund-seq", "0"}, []string{"--refund-seq must be 1 or more"}},
		{"unknown status", env, []string{"ops", "list", "--status", "done"}, []string{`--status "done"`, "succeeded"}},
		{"unknown kind", env, []string{"ops", "list", "--kind", "payout"}, []string{`--kind "payout"`}},
		{"bad limit", env, []string{"review", "list", "--limit", "0"}, []string{"--limit"}},
		{"unknown flag", env, []string{"charge", "--amout", "1"}, []string{"-amout", "payonce charge -h"}},
		{"bad duration", env, []string{"cleanup", "--retention", "forever"}, []string{"forever", "30d"}},
		{"extra argument", env, []string{"ops", "list", "extra"}, []string{`unexpected argument "extra"`}},
		{"show without id", env, []string{"ops", "show"}, []string{"needs ID"}},
		{"exclusive modes", env, []string{"reconcile", "--once", "--until-idle"}, []string{"exclude each other"}},
		{"ledger scheme", env, []string{"ops", "list", "--ledger", "mysql://root@db/payonce"}, []string{`unsupported scheme "mysql"`, "postgres://"}},
		{"ledger sqlite without path", env, []string{"ops", "list", "--ledger", "sqlite:"}, []string{"names no file"}},
		{"ledger URL does not parse", env, []string{"ops", "list", "--ledger", "postgres://alice:s3cretpw@db:notaport/x"}, []string{"cannot parse the PostgreSQL URL"}},
		{"exclusive settle modes", env, []string{"reconcile", "--until-idle", "--until-settled"}, []string{"--until-idle and --until-settled exclude each other"}},
		{"settle timeout without until-settled", env, []string{"reconcile", "--until-idle", "--settle-timeout", "1m"}, []string{"--settle-timeout applies only with --until-settled"}},
		{"metrics with once", env, []string{"reconcile", "--once", "--metrics-addr", "127.0.0.1:0"}, []string{"--metrics-addr applies only to the loop"}},
		{"metrics addr without port", env, []string{"reconcile", "--metrics-addr", "127.0.0.1"}, []string{"--metrics-addr", "HOST:PORT", "127.0.0.1:9464"}},
		{"metrics addr bad port", env, []string{"reconcile", "--metrics-addr", "127.0.0.1:http"}, []string{"--metrics-addr", "not a number from 0 to 65535"}},
		{"metrics addr port too big", env, []string{"reconcile", "--metrics-addr", "127.0.0.1:70000"}, []string{"not a number from 0 to 65535"}},
		{"webhook metrics addr", with(env, "STRIPE_WEBHOOK_SECRET", "whsec_x"), []string{"webhooks", "serve", "--addr", "127.0.0.1:8080", "--metrics-addr", "nowhere"},
			[]string{"--metrics-addr", "HOST:PORT"}},
		{"webhook metrics on the webhook listener", with(env, "STRIPE_WEBHOOK_SECRET", "whsec_x"),
			[]string{"webhooks", "serve", "--addr", "127.0.0.1:8080", "--metrics-addr", "127.0.0.1:8080"}, []string{"--metrics-addr must differ from --addr"}},
		{"no ledger file", map[string]string{"STRIPE_API_KEY": testKey}, []string{"ops", "list", "--ledger", filepath.Join(dir, "missing.db")}, []string{"no ledger at", "payonce migrate"}},
		{"ledger not migrated", nil, []string{"review", "list", "--ledger", "sqlite:" + emptyFile(t, dir)}, []string{"no payonce tables", "payonce migrate"}},
		{"ledger directory missing", nil, []string{"migrate", "--ledger", filepath.Join(dir, "nope", "x.db")}, []string{"does not exist"}},
		{"bad demo size", env, []string{"demo", "--orders", "0"}, []string{"--orders must be"}},
		{"audit without from", env, []string{"audit"}, []string{"--from is required", "RFC 3339", "-24h"}},
		{"audit bad from", env, []string{"audit", "--from", "yesterday"}, []string{`--from "yesterday"`, "RFC 3339", "-7d"}},
		{"audit bad to", env, []string{"audit", "--from", "-2h", "--to", "2026-13-01"}, []string{`--to "2026-13-01"`}},
		{"audit empty period", env, []string{"audit", "--from", "-1h", "--to", "-2h"}, []string{"is not before --to", "[--from, --to)"}},
		{"audit max", env, []string{"audit", "--from", "-1h", "--max", "0"}, []string{"--max must be 1 or more"}},
		{"audit report missing", env, []string{"audit", "--provider", "adyen", "--from", "-1h", "--report", filepath.Join(dir, "nope.csv")}, []string{"--report", "nope.csv"}},
		{"audit missing credential", map[string]string{"PAYONCE_LEDGER": migrated}, []string{"audit", "--from", "-1h"}, []string{"STRIPE_API_KEY"}},
		{"audit ack without id", env, []string{"audit", "ack", "--actor", "ann", "--note", "n"}, []string{"--id is required"}},
		{"audit ack bad id", env, []string{"audit", "ack", "--id", "x7", "--actor", "ann", "--note", "n"}, []string{`--id "x7" is not a finding id`}},
		{"audit ack without actor", env, []string{"audit", "ack", "--id", "1", "--note", "n"}, []string{"--actor is required"}},
		{"audit ack without note", env, []string{"audit", "ack", "--id", "1", "--actor", "ann"}, []string{"--note is required"}},
		{"audit findings bad class", env, []string{"audit", "findings", "--class", "weird"}, []string{`--class "weird"`, "unknown_to_ledger, status_differs"}},
		{"audit findings bad limit", env, []string{"audit", "findings", "--limit", "0"}, []string{"--limit"}},
	}, func(t *testing.T, tc usageCase) result {
		r := runMain(t, tc.env, tc.args...)
		require.NotContains(t, r.stdout+r.stderr, testKey)
		require.NotContains(t, r.stdout+r.stderr, "s3cretpw", "a password was printed")
		return r
	})
}

// emptyFile creates an SQLite database without payonce's tables.
func emptyFile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "empty.db")
	db, err := sql.Open("sqlite", p)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE TABLE IF NOT EXISTS other (x INTEGER)")
	require.NoError(t, err)
	return p
}

// The errors are the same from the real binary, with the real environment.
func TestErrorsFromTheBinary(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "nosuch")
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, `unknown command "nosuch"`)

	// An unreachable database is not a usage error: it has its own code.
	for _, cmd := range [][]string{{"ops", "list"}, {"stats"}, {"reconcile", "--until-idle"}} {
		r = runBinary(t, map[string]string{"PAYONCE_LEDGER": "postgres://u:pw-not-shown@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"}, cmd...)
		require.Equal(t, 8, r.code, "%s", r)
		require.Contains(t, r.stderr, "ledger unavailable")
		require.Contains(t, r.stderr, "is PostgreSQL running at 127.0.0.1:1?")
		require.NotContains(t, r.stderr, "pw-not-shown")
	}

	tg := sqliteTarget(t)
	m := runBinary(t, tg.env(), "migrate")
	require.Equal(t, 0, m.code, "%s", m)
	r = runBinary(t, tg.env(), "charge", "--order", "o", "--amount", "1", "--currency", "USD")
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "STRIPE_API_KEY")

	r = runBinary(t, nil)
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "Commands:")
}

func TestHelp(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "help")
	require.Equal(t, 0, r.code, "%s", r)
	for _, c := range []string{"demo", "migrate", "charge", "capture", "cancel", "refund", "reconcile", "ops", "review", "cleanup", "audit", "Exit codes", "11  the audit found differences", "STRIPE_API_KEY",
		"YOOKASSA_SHOP_ID", "YOOKASSA_SECRET_KEY", "CHECKOUT_SECRET_KEY"} {
		require.Contains(t, r.stdout, c)
	}
	for _, args := range [][]string{{"charge", "-h"}, {"help", "charge"}, {"charge", "--help"}} {
		r := runBinary(t, nil, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r)
		for _, w := range []string{"Usage:", "--order ID", "--amount", "--ledger", "Exit codes", "4  outcome unknown", "7  provider unavailable", "8  ledger unavailable", "9  not settled",
			"10  charge not settled", "11  the audit found differences"} {
			require.Contains(t, r.stdout, w, "%v", args)
		}
	}
	for _, args := range [][]string{{"demo", "-h"}, {"migrate", "-h"}, {"capture", "-h"}, {"cancel", "-h"}, {"refund", "-h"},
		{"reconcile", "-h"}, {"ops", "-h"}, {"ops", "list", "-h"}, {"ops", "show", "-h"}, {"review", "--help"},
		{"review", "list", "-h"}, {"review", "resolve", "-h"}, {"cleanup", "-h"},
		{"audit", "-h"}, {"audit", "findings", "-h"}, {"audit", "ack", "-h"}, {"help", "audit"}, {"help", "ops", "list"}, {"-h"}} {
		r := runMain(t, nil, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r)
		require.Contains(t, r.stdout, "Usage", "%v", args)
	}
	r = runMain(t, nil, "help", "nosuch")
	require.Equal(t, 2, r.code, "%s", r)
}

func TestPostgresSchemaErrors(t *testing.T) {
	t.Parallel()
	tg := pgTarget(t)
	// A database of its own: a name accepted by mistake creates nothing in
	// the shared one.
	db := newDatabase(t)
	for _, bad := range []string{"pg_ledger", strings.Repeat("s", 64), "tab\there"} {
		r := runBinary(t, nil, "migrate", "--ledger", db, "--schema", bad)
		require.Equal(t, 2, r.code, "%q: %s", bad, r)
		require.Contains(t, r.stderr, fmt.Sprintf("--schema %q", bad), "%s", r)
	}
	r := runBinary(t, tg.env(), "ops", "list")
	require.Equal(t, 2, r.code, "%s", r)
	require.Contains(t, r.stderr, "no payonce tables")
	require.Contains(t, r.stderr, "payonce migrate")
}
