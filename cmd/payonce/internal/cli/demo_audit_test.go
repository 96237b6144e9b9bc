package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// runDemoSeam runs the demo in this process with seam and returns its exit
// code, stdout and stderr.
func runDemoSeam(t *testing.T, seam demoSeam, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	a := &App{Env: func(string) string { return "" }, Stdout: &out, Stderr: &errb, Providers: DefaultRegistry()}
	code := a.report(runDemoWith(ctx, a, args, seam))
	return code, out.String(), errb.String()
}

// A PaymentIntent that carries payonce's metadata for an operation the
// ledger never had (an orphan: another integration reusing payonce's keys,
// a ledger restored from an old backup) appears at the fake after the run:
// the demo's audit finds it as unknown_to_ledger, records it in the demo's
// ledger, lists it, and the demo fails.
func TestDemoAuditFindsOrphan(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ledger.db")
	orphanOp := "00000000-0000-5000-8000-0000000000aa"
	var orphan string
	seam := demoSeam{beforeAudit: func(h fakeHandler) error {
		sh, ok := h.(*mocks.StripeHandler)
		if !ok {
			return fmt.Errorf("the demo's fake is a %T", h)
		}
		var err error
		orphan, err = sh.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 4200, Currency: "usd", Metadata: map[string]string{
			stripe.MetaOperation: orphanOp, stripe.MetaKey: orphanOp, stripe.MetaKind: string(payonce.KindCharge)}})
		return err
	}}
	code, stdout, stderr := runDemoSeam(t, seam, "--json", "--orders", "20", "--refunds", "5", "--concurrency", "4", "--key-ttl", "4s",
		"--ledger", "sqlite:"+db)
	require.Equal(t, ExitError, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.NotEmpty(t, orphan, "the seam ran")
	require.Contains(t, stderr, "the audit of the fake found differences: 1 (unknown_to_ledger: charge operation "+orphanOp+" ("+orphan+")")
	var rep demoReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), "%s", stdout)
	require.False(t, rep.OK)
	a := rep.Audit
	require.True(t, a.Ran, "%+v", a)
	require.True(t, a.Findings)
	require.Equal(t, map[string]int{"unknown_to_ledger": 1, "status_differs": 0, "duplicated": 0, "contradicted": 0, "missing_at_provider": 0}, a.Differences)
	require.Len(t, a.Listed, 1)
	require.Contains(t, a.Listed[0], orphan)
	require.Equal(t, rep.Total.Operations, a.Operations, "every operation of the run is in the period")
	require.Zero(t, a.Unattributed)
	// Nothing else went wrong: the orphan alone fails the run.
	require.Zero(t, rep.DoubleCharges+rep.DoubleRefunds+rep.Total.Unsettled)

	// The finding is in the demo's ledger, for "payonce audit findings".
	l, err := openSQLite(db, openExisting)
	require.NoError(t, err)
	defer l.Close()
	fs, err := l.store.ListFindings(context.Background(), ledger.FindingFilter{Provider: "stripe"})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.Equal(t, ledger.FindingUnknownToLedger, fs[0].Class)
	require.Equal(t, orphanOp, fs[0].OperationID)
	require.Equal(t, orphan, fs[0].ProviderRef)

	// The human report says it on the audit's line and lists it.
	code, stdout, stderr = runDemoSeam(t, seam, "--orders", "10", "--refunds", "3", "--concurrency", "4", "--key-ttl", "4s")
	require.Equal(t, ExitError, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "audit of the fake Stripe: ")
	require.Contains(t, stdout, " 1 differences (unknown_to_ledger 1, status_differs 0, duplicated 0, contradicted 0, missing_at_provider 0), 0 unattributed\n")
	require.Contains(t, stdout, "\n  unknown_to_ledger: charge operation "+orphanOp+" ("+orphan+"): ledger no record, provider succeeded")
	require.Contains(t, stdout, `"payonce audit findings"`)
}

// A seam that fails stops the demo with its error, after the report,
// which says that the audit failed; a clean state (the seam injecting
// nothing) passes.
func TestDemoAuditSeam(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runDemoSeam(t, demoSeam{beforeAudit: func(fakeHandler) error { return fmt.Errorf("seam failed") }},
		"--orders", "5", "--refunds", "1", "--concurrency", "2", "--key-ttl", "4s")
	require.Equal(t, ExitError, code)
	require.Contains(t, stderr, "seam failed")
	require.Contains(t, stdout, "audit of the fake: not run (failed: seam failed)\n", "the report is printed, saying the audit failed")

	called := false
	code, stdout, stderr = runDemoSeam(t, demoSeam{beforeAudit: func(fakeHandler) error { called = true; return nil }},
		"--orders", "5", "--refunds", "1", "--concurrency", "2", "--key-ttl", "4s")
	require.Equal(t, ExitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.True(t, called)
	require.Contains(t, stdout, " 0 differences (unknown_to_ledger 0, ")
}

// Which adapters the demo audits: those that list without a report, or
// look up; not one that needs a downloaded report, nor one that cannot.
func TestDemoAuditable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		psp  payonce.Provider
		ok   bool
		want string
	}{
		{auditorOf(payonce.AuditInfo{}), false, "neither lists nor looks up"},
		{auditorOf(payonce.AuditInfo{ByLookup: true}), true, ""},
		{listerOf(payonce.AuditInfo{}), true, ""},
		{listerOf(payonce.AuditInfo{NeedsReport: true}), false, "report"},
		{plainProvider{}, false, "cannot audit"},
	} {
		ok, why := demoAuditable(tc.psp)
		require.Equal(t, tc.ok, ok, "%T %+v", tc.psp, tc.psp)
		require.Contains(t, why, tc.want)
	}
	var b strings.Builder
	demoAuditReport{Skipped: "audited from a report"}.print(&b, "Adyen")
	require.Equal(t, "audit of the fake: not run (audited from a report)\n", b.String())
}

// plainProvider is a Provider that cannot audit; auditorOf one that says
// info; listerOf one that also lists.
type plainProvider struct{ payonce.Provider }

type infoAuditor struct {
	plainProvider
	info payonce.AuditInfo
}

func (a infoAuditor) AuditInfo() payonce.AuditInfo { return a.info }

func auditorOf(info payonce.AuditInfo) payonce.Provider { return infoAuditor{info: info} }

type infoLister struct{ infoAuditor }

func (infoLister) ListObjects(context.Context, payonce.HTTPDoer, payonce.AuditQuery, func(payonce.AuditObject) error) error {
	return nil
}

func listerOf(info payonce.AuditInfo) payonce.Provider { return infoLister{infoAuditor{info: info}} }
