package crashsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// errNoAudit: the provider's adapter cannot audit (no payonce.Auditor).
var errNoAudit = errors.New("the adapter cannot audit")

// auditSummary is the audit's part of the summary line.
type auditSummary struct {
	ran                                       bool
	objects, operations, unattributed, differ int
	counts                                    map[ledger.FindingClass]int
}

func (a auditSummary) line() string {
	if !a.ran {
		return "audit{not_run}"
	}
	var parts []string
	for _, c := range ledger.FindingClasses {
		parts = append(parts, fmt.Sprintf("%s=%d", c, a.counts[c]))
	}
	sort.Strings(parts)
	return fmt.Sprintf("audit{objects=%d operations=%d unattributed=%d differences=%d {%s}}",
		a.objects, a.operations, a.unattributed, a.differ, strings.Join(parts, " "))
}

// auditTimeout bounds each of the audit's listing requests, its read
// retries included. The fake fails about a fifth of the GETs too
// (FaultGETs: hangs of HangFor, slow answers of SlowFor, 429s, 502s,
// dropped answers), and a listing that fails halfway compares nothing;
// the audit only reads, so it can wait for as long as a page takes
// instead of the workers' 300 ms attempt timeout, and retry a read many
// times (auditReadRetries): 0.2^9 of a page failing for good.
const (
	auditTimeout     = 15 * time.Second
	auditReadRetries = 8
)

// auditClient is a payonce.Client on store and p's fake at url (creds:
// the fake's ready line), as the workers build theirs (the adapter with
// the suite's key TTL and search lag, the clock-skew allowance), for an
// audit: it never charges.
func auditClient(p crashProvider, store ledger.Store, url, creds string) (*payonce.Client, error) {
	psp, err := p.adapter(childConfig{Provider: p.name, APIKey: creds, FakeURL: url, KeyTTL: keyTTL, SearchLag: searchLag})
	if err != nil {
		return nil, fmt.Errorf("%s adapter: %w", p.name, err)
	}
	if _, ok := psp.(payonce.Auditor); !ok {
		return nil, errNoAudit
	}
	return payonce.New(payonce.Config{
		Provider: psp, Store: store,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		HTTPClient:     &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		AttemptTimeout: auditTimeout,
		ClockSkew:      clockSkew,
		Retry:          payonce.RetryPolicy{BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond, LookupRetries: auditReadRetries},
		// A run of the fake's faults must not open the breaker on the
		// audit's reads: they are retried instead.
		Breaker: payonce.BreakerSettings{ConsecutiveFailures: 100, OpenFor: 100 * time.Millisecond},
		Owner:   "crashsuite-audit",
	})
}

// auditFake audits the fake Stripe at url against store over [from, to)
// with Client.Audit (findings recorded in the ledger) and adds every
// difference to bad, as "audit: <class>". The run's fake saw no request
// but the workers', so exactly-once means no difference: an operation left
// in review whose object failed or never existed is none (the audit judges
// only what took effect), and one whose object succeeded would be
// status_differs, which the suite's wait for the reconcilers' read-only
// lookups settles before (see TestCrashSuite). An error of the audit
// itself (the listing or the ledger failing) is returned: the audit did
// not compare everything.
func auditFake(ctx context.Context, p crashProvider, store ledger.Store, url, creds string, from, to time.Time, bad *violations) (auditSummary, error) {
	if p.auditSkip != "" {
		return auditSummary{}, nil
	}
	client, err := auditClient(p, store, url, creds)
	if errors.Is(err, errNoAudit) {
		// Nothing to compare with: the summary says audit{not_run}.
		return auditSummary{}, nil
	}
	if err != nil {
		return auditSummary{}, err
	}
	sum := auditSummary{counts: map[ledger.FindingClass]int{}}
	rep, err := client.Audit(ctx, payonce.AuditParams{From: from, To: to,
		OnDifference: func(d payonce.AuditDifference) {
			bad.add("audit: "+string(d.Class), "%s operation %s ref %q: ledger %q, provider %q: %s",
				d.Kind, d.OperationID, d.ProviderRef, d.LedgerStatus, d.ProviderState, d.Detail)
		}})
	if err != nil {
		return sum, fmt.Errorf("auditing the fake: %w", err)
	}
	sum.ran = true
	sum.objects, sum.operations, sum.unattributed = rep.Objects, rep.Operations, rep.Unattributed
	for c, n := range rep.Counts {
		sum.counts[c] = n
		sum.differ += n
	}
	return sum, nil
}
