package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/cmd/payonce/internal/cli"
	"github.com/payonce/payonce/mocks"
)

// listing is a provider for the audit tests: it sends nothing (NewRequest,
// Classify and Lookup are never called by an audit) and lists what objects
// holds. plain is the same provider without the Auditor methods.
type listing struct {
	plain
	mu          *sync.Mutex
	objects     *[]payonce.AuditObject
	needsReport bool
}

type plain struct{ name string }

func (p plain) Name() string { return p.name }
func (plain) Info() payonce.ProviderInfo {
	return payonce.ProviderInfo{KeyTTL: 24 * time.Hour, MaxKeyLength: 255}
}
func (plain) NewRequest(context.Context, payonce.SendRequest) (*http.Request, error) {
	panic("an audit sends no payment request")
}
func (plain) Classify(payonce.SendRequest, int, http.Header, []byte) payonce.Outcome {
	panic("an audit sends no payment request")
}
func (plain) Lookup(context.Context, payonce.HTTPDoer, payonce.LookupQuery) (payonce.LookupResult, error) {
	return payonce.LookupResult{}, nil
}

func (l listing) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{Directions: "provider → ledger: test objects by created", NeedsReport: l.needsReport}
}

func (l listing) ListObjects(ctx context.Context, hc payonce.HTTPDoer, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	l.mu.Lock()
	objs := append([]payonce.AuditObject(nil), *l.objects...)
	l.mu.Unlock()
	for _, o := range objs {
		if !o.Created.Before(q.From) && o.Created.Before(q.To) {
			if err := yield(o); err != nil {
				return err
			}
		}
	}
	return nil
}

var _ payonce.AuditLister = listing{}

// An audit end to end through the command line, on both ledgers: the
// provider holds a succeeded charge naming an operation the ledger never
// recorded. --dry-run reports it (exit 11) and records nothing; the audit
// records it; stats counts it; "audit findings" lists it; "audit ack"
// acknowledges it, once; a period with nothing differing exits 0; a
// provider whose adapter cannot audit exits 2.
//
// It needs the audit engine (Client.Audit) and the ledger's findings
// (RecordFindings, ListFindings, AckFinding, Stats.Findings).
func TestAuditCommand(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		var mu sync.Mutex
		var objects []payonce.AuditObject
		reg, err := cli.NewRegistry(
			cli.Adapter{Name: "tiny", EnvVars: []string{"TINY_KEY"}, New: func(cli.AdapterConfig) (payonce.Provider, error) {
				return listing{plain: plain{"tiny"}, mu: &mu, objects: &objects}, nil
			}},
			cli.Adapter{Name: "reported", EnvVars: []string{"TINY_KEY"}, New: func(cli.AdapterConfig) (payonce.Provider, error) {
				return listing{plain: plain{"reported"}, mu: &mu, objects: &objects, needsReport: true}, nil
			}},
			cli.Adapter{Name: "plain", EnvVars: []string{"TINY_KEY"}, New: func(cli.AdapterConfig) (payonce.Provider, error) {
				return plain{"plain"}, nil
			}},
		)
		require.NoError(t, err)
		now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
		env := with(tg.env(), "TINY_KEY", "k")
		run := func(args ...string) result {
			var out, errb bytes.Buffer
			app := &cli.App{Env: func(k string) string { return env[k] }, Stdout: &out, Stderr: &errb, Providers: reg,
				Now: func() time.Time { return now }}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			code := app.Run(ctx, args)
			return result{stdout: out.String(), stderr: errb.String(), code: code}
		}
		require.Equal(t, 0, run("migrate").code)

		mu.Lock()
		objects = []payonce.AuditObject{{Ref: "obj_1", OperationID: "op-never-recorded", Kind: payonce.KindCharge,
			State: payonce.AuditSucceeded, Status: "paid", Amount: 500, Currency: "USD", Created: now.Add(-3 * time.Hour)},
			{Ref: "obj_no_metadata", Kind: payonce.KindCharge, State: payonce.AuditSucceeded, Status: "paid", Amount: 100,
				Currency: "USD", Created: now.Add(-2 * time.Hour)}}
		mu.Unlock()
		audit := []string{"audit", "--provider", "tiny", "--from", "-24h", "--to", "2026-12-04T12:00:00Z"}

		r := run(append(audit, "--dry-run")...)
		require.Equal(t, cli.ExitDiffers, r.code, "%s", r)
		require.Regexp(t, `unknown_to_ledger\s+charge\s+op-never-recorded\s+obj_1\s+-\s+succeeded`, r.stdout)
		require.Contains(t, r.stdout, "--dry-run: nothing recorded")
		f := run("audit", "findings", "--all")
		require.Equal(t, 0, f.code, "%s", f)
		require.Contains(t, f.stdout, "no audit findings", "a dry run records nothing")

		r = run(append(audit, "--json")...)
		require.Equal(t, 11, r.code, "%s", r)
		rep := r.jsonObject(t)
		require.Equal(t, "tiny", rep["provider"])
		require.Equal(t, "2026-12-03T12:00:00Z", rep["from"])
		require.EqualValues(t, 1, rep["counts"].(map[string]any)["unknown_to_ledger"])
		require.EqualValues(t, 2, rep["objects"])
		require.EqualValues(t, 1, rep["unattributed"])
		require.Len(t, rep["differences"], 1, "unattributed objects are counted, not listed, without --unattributed")
		require.Equal(t, true, rep["differs"])
		require.Equal(t, false, rep["dry_run"])

		st := run("stats", "--json")
		require.Equal(t, 0, st.code, "%s", st)
		require.Equal(t, []any{map[string]any{"provider": "tiny", "class": "unknown_to_ledger", "open": float64(1)}}, st.jsonObject(t)["findings"])
		st = run("stats")
		require.Regexp(t, `tiny\s+unknown_to_ledger\s+1`, st.stdout)

		f = run("audit", "findings", "--json", "--provider", "tiny", "--class", "unknown_to_ledger")
		require.Equal(t, 0, f.code, "%s", f)
		lines := f.jsonLines(t)
		require.Len(t, lines, 1)
		require.Equal(t, "op-never-recorded", lines[0]["operation_id"])
		require.Equal(t, "obj_1", lines[0]["provider_ref"])
		require.Nil(t, lines[0]["acked_at"])
		id := lines[0]["id"].(float64)
		f = run("audit", "findings", "--class", "duplicated")
		require.Contains(t, f.stdout, "no open audit findings")

		idText := formatID(id)
		ack := run("audit", "ack", "--id", idText, "--actor", "ann", "--note", "refunded at the provider")
		require.Equal(t, 0, ack.code, "%s", ack)
		require.Contains(t, ack.stdout, "acknowledged by ann")
		again := run("audit", "ack", "--id", idText, "--actor", "bob", "--note", "again")
		require.Equal(t, 0, again.code, "%s", again)
		require.Contains(t, again.stdout, "already acknowledged by ann")
		missing := run("audit", "ack", "--id", "99999", "--actor", "ann", "--note", "x")
		require.Equal(t, 2, missing.code, "%s", missing)
		require.Contains(t, missing.stderr, "no audit finding with id 99999")

		f = run("audit", "findings")
		require.Contains(t, f.stdout, "no open audit findings")
		f = run("audit", "findings", "--all", "--json")
		all := f.jsonLines(t)
		require.Len(t, all, 1)
		require.Equal(t, "ann", all[0]["acked_by"])
		require.Equal(t, "refunded at the provider", all[0]["ack_note"])
		st = run("stats", "--json")
		require.Equal(t, []any{}, st.jsonObject(t)["findings"])

		// Found again: the same finding, not reopened.
		r = run(audit...)
		require.Equal(t, 11, r.code, "%s", r)
		f = run("audit", "findings", "--all", "--json")
		all = f.jsonLines(t)
		require.Len(t, all, 1)
		require.EqualValues(t, 2, all[0]["times"])
		require.Equal(t, "ann", all[0]["acked_by"])

		// --unattributed lists the object without metadata too.
		r = run(append(audit, "--unattributed", "--dry-run")...)
		require.Equal(t, 11, r.code, "%s", r)
		require.Regexp(t, `unattributed\s+charge\s+-\s+obj_no_metadata\s+-\s+succeeded`, r.stdout)
		require.Regexp(t, `unattributed objects\s+1\n`, r.stdout)

		// A period where nothing differs.
		r = run("audit", "--provider", "tiny", "--from", "-1h")
		require.Equal(t, 0, r.code, "%s", r)
		require.Contains(t, r.stdout, "the ledger and the provider agree")

		// A provider audited from a report, without --report: what to do.
		r = run("audit", "--provider", "reported", "--from", "-1h")
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stderr, "--provider reported is audited from a report downloaded from the provider: give it with --report FILE")
		report := filepath.Join(t.TempDir(), "report.csv")
		require.NoError(t, os.WriteFile(report, []byte("header\n"), 0o600))
		r = run("audit", "--provider", "reported", "--from", "-1h", "--report", report)
		require.Equal(t, 0, r.code, "%s", r)

		r = run("audit", "--provider", "plain", "--from", "-1h")
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stderr, "--provider plain: the adapter cannot audit")

		// A report given for a provider audited from its API would be
		// ignored, the operator believing it audited: refused.
		r = run("audit", "--provider", "tiny", "--from", "-1h", "--report", report)
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stderr, "--provider tiny is audited from its API, not from a report: leave out --report")
		require.Empty(t, r.stdout)

		// A period in the future (a mistyped year) would agree: refused.
		r = run("audit", "--provider", "tiny", "--from", "2027-12-04T00:00:00Z", "--to", "2027-12-05T00:00:00Z")
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stderr, "is not in the past")
		require.Empty(t, r.stdout)

		// A negative --after is a bad flag (exit 2), not a failure.
		r = run("audit", "findings", "--after", "-1")
		require.Equal(t, 2, r.code, "%s", r)
		require.Contains(t, r.stderr, "AfterID")
	})
}

func formatID(id float64) string {
	return strconv.FormatInt(int64(id), 10)
}

// The audit of Stripe through the binary, against the Stripe fake: a
// charge made by payonce agrees; a PaymentIntent naming an operation the
// ledger never recorded is unknown_to_ledger (exit 11), and nothing but
// GETs reached the fake during the audit.
func TestAuditStripeFake(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		base := "--base-url=" + fake.URL()
		r := runBinary(t, env, "charge", "--order", "order-audited", "--amount", "1200", "--currency", "USD", "--payment-method", "pm_card_visa", base)
		require.Equal(t, 0, r.code, "%s", r)

		r = runBinary(t, env, "audit", "--provider", "stripe", "--from", "-1h", base)
		require.Equal(t, 0, r.code, "%s", r)
		require.Contains(t, r.stdout, "the ledger and the provider agree")
		require.Regexp(t, `ledger operations read\s+1\n`, r.stdout)

		orphan, err := fake.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 999, Currency: "usd", Created: time.Now().Add(-10 * time.Minute),
			Metadata: map[string]string{"payonce_op": "op-not-in-the-ledger", "payonce_kind": "charge"}})
		require.NoError(t, err)
		posts := nonGETs(fake.Truth())
		r = runBinary(t, env, "audit", "--provider", "stripe", "--from", "-1h", "--json", base)
		require.Equal(t, 11, r.code, "%s", r)
		rep := r.jsonObject(t)
		require.EqualValues(t, 1, rep["counts"].(map[string]any)["unknown_to_ledger"], "%s", r)
		diffs := rep["differences"].([]any)
		require.Len(t, diffs, 1)
		require.Equal(t, orphan, diffs[0].(map[string]any)["provider_ref"])
		require.Equal(t, "op-not-in-the-ledger", diffs[0].(map[string]any)["operation_id"])
		require.Equal(t, posts, nonGETs(fake.Truth()), "the audit only reads")
		require.NotContains(t, r.stdout+r.stderr, fake.APIKey())

		f := runBinary(t, env, "audit", "findings", "--json")
		require.Len(t, f.jsonLines(t), 1)
	})
}

// nonGETs counts the requests other than GET the fake received.
func nonGETs(tr mocks.Truth) int {
	n := 0
	for k, c := range tr.Requests {
		if !strings.HasPrefix(k, "GET ") {
			n += c
		}
	}
	return n
}
