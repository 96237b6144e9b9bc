package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// kindStats counts the operations of one kind as the ledger holds them.
type kindStats struct {
	Operations int `json:"operations"`
	Attempts   int `json:"attempts"`
	// Retries counts attempts after the first of each operation.
	Retries int `json:"retries"`
	// Lookups counts status lookups recorded as ledger events.
	Lookups   int `json:"lookups"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	InReview  int `json:"in_review"`
	Unsettled int `json:"unsettled"`
	// WebhookEvents counts webhook events recorded on the operations
	// (ledger.EventWebhook audit entries, duplicates excluded).
	WebhookEvents int `json:"webhook_events"`
	// SettledBy counts the succeeded and failed operations by what
	// settled them, read from their audit entries; the three add up to
	// Succeeded + Failed.
	SettledBy settledBy `json:"settled_by"`
}

// settledBy counts operations by what settled them.
type settledBy struct {
	// Call: the call's own answer (a first answer, or a same-key resend).
	Call int `json:"call"`
	// Lookup: a status lookup, by the call itself or by the reconciler
	// (after a webhook nudge too).
	Lookup int `json:"lookup"`
	// Webhook: a provider event recorded by the webhook receiver.
	Webhook int `json:"webhook"`
}

func (k *kindStats) add(o kindStats) {
	k.Operations += o.Operations
	k.Attempts += o.Attempts
	k.Retries += o.Retries
	k.Lookups += o.Lookups
	k.Succeeded += o.Succeeded
	k.Failed += o.Failed
	k.InReview += o.InReview
	k.Unsettled += o.Unsettled
	k.WebhookEvents += o.WebhookEvents
	k.SettledBy.Call += o.SettledBy.Call
	k.SettledBy.Lookup += o.SettledBy.Lookup
	k.SettledBy.Webhook += o.SettledBy.Webhook
}

// settler names what settled a succeeded or failed operation, from its
// audit entries: "webhook" when an EventWebhook entry has the disposition
// settled (ledgerdriver.ApplyWebhook), "lookup" when a status lookup found the
// outcome (the EventLookup entry lookupEvent writes, "state=succeeded" or
// "state=failed" without a contradiction, is recorded in the transition
// it decides), else "call". It returns "" for an operation not settled.
// An operation is settled once, so at most one of them applies.
func settler(op ledger.Operation, events []ledger.Event) (string, error) {
	if op.Status != ledger.StatusSucceeded && op.Status != ledger.StatusFailed {
		return "", nil
	}
	by := "call"
	for _, e := range events {
		switch e.Kind {
		case ledger.EventWebhook:
			var wd ledger.WebhookDetail
			if err := json.Unmarshal([]byte(e.Detail), &wd); err != nil {
				return "", fmt.Errorf("reading webhook entry %d of %s: %w", e.Seq, op.ID, err)
			}
			if wd.Disposition == ledger.WebhookSettled {
				return "webhook", nil
			}
		case ledger.EventLookup:
			found := strings.HasPrefix(e.Detail, "state="+string(payonce.LookupSucceeded)) ||
				strings.HasPrefix(e.Detail, "state="+string(payonce.LookupFailed))
			if found && !strings.Contains(e.Detail, " contradiction=") {
				by = "lookup"
			}
		}
	}
	return by, nil
}

// attemptBuckets are the ranges of attempts per operation the report
// counts, in order.
var attemptBuckets = []struct {
	name     string
	min, max int // inclusive; max 0: no upper bound
}{{"0", 0, 0}, {"1", 1, 1}, {"2", 2, 2}, {"3-5", 3, 5}, {"6+", 6, 0}}

// attemptBucket names the bucket of n attempts.
func attemptBucket(n int) string {
	for _, b := range attemptBuckets[1:] {
		if n >= b.min && (b.max == 0 || n <= b.max) {
			return b.name
		}
	}
	return attemptBuckets[0].name
}

// attemptsPerOp is the distribution of attempts over operations.
type attemptsPerOp struct {
	// Max is the most attempts one operation made; MaxOperation is that
	// operation (the lowest id among those that made Max).
	Max          int            `json:"max"`
	MaxOperation *maxOpJSON     `json:"max_operation"`
	Distribution map[string]int `json:"distribution"`
}

type maxOpJSON struct {
	ID         string   `json:"id"`
	Kind       string   `json:"kind"`
	References []string `json:"references"`
	Status     string   `json:"status"`
}

func newAttemptsPerOp() attemptsPerOp {
	d := map[string]int{}
	for _, b := range attemptBuckets {
		d[b.name] = 0
	}
	return attemptsPerOp{Distribution: d}
}

func (a *attemptsPerOp) add(op ledger.Operation) {
	a.Distribution[attemptBucket(op.Attempts)]++
	if a.MaxOperation == nil || op.Attempts > a.Max || op.Attempts == a.Max && op.ID < a.MaxOperation.ID {
		a.Max = op.Attempts
		a.MaxOperation = &maxOpJSON{ID: op.ID, Kind: op.Kind, References: op.References, Status: string(op.Status)}
	}
}

// text renders the distribution: "1: 180, 2: 12, 3-5: 4, 6+: 1"; the 0
// bucket only when it is not empty.
func (a attemptsPerOp) text() string {
	var parts []string
	for _, b := range attemptBuckets {
		if n := a.Distribution[b.name]; n > 0 || b.name != "0" {
			parts = append(parts, fmt.Sprintf("%s: %d", b.name, n))
		}
	}
	return strings.Join(parts, ", ")
}

// demoReport is what the demo prints; with --json, as one object.
type demoReport struct {
	Settings struct {
		Provider         string             `json:"provider"`
		LookupLag        string             `json:"lookup_lag_name"`
		Orders           int                `json:"orders"`
		Refunds          int                `json:"refunds"`
		Concurrency      int                `json:"concurrency"`
		Seed             int64              `json:"seed"`
		FaultRate        float64            `json:"fault_rate"`
		FaultMix         map[string]float64 `json:"fault_mix"`
		KeyTTL           string             `json:"key_ttl"`
		FakeSearchLag    string             `json:"fake_search_lag"`
		AdapterSearchLag string             `json:"adapter_search_lag"`
		AttemptTimeout   string             `json:"attempt_timeout"`
		HangFor          string             `json:"hang_for"`
		SlowFor          string             `json:"slow_for"`
		RetryAfter       string             `json:"retry_after"`
		CheckInterval    string             `json:"check_interval"`
		ClockSkew        string             `json:"clock_skew"`
		SafetyMargin     string             `json:"safety_margin"`
		MaxAttempts      int                `json:"max_attempts_per_call"`
		BreakerFailures  uint32             `json:"breaker_failures"`
		BreakerOpenFor   string             `json:"breaker_open_for"`
		Ledger           string             `json:"ledger"`
		TemporaryLedger  bool               `json:"temporary_ledger"`
		FakeURL          string             `json:"fake_url"`
		Webhooks         bool               `json:"webhooks"`
		WebhookDelay     string             `json:"webhook_delay"`
		WebhookDuplicate float64            `json:"webhook_duplicate_rate"`
		WebhookReorder   float64            `json:"webhook_reorder_rate"`
		WebhookFail      float64            `json:"webhook_fail_rate"`
	} `json:"settings"`
	Charges kindStats `json:"charges"`
	Refunds kindStats `json:"refunds"`
	Total   kindStats `json:"total"`
	// AttemptsPerOperation is how many attempts single operations needed:
	// the most any one made, which one, and how many needed how many.
	AttemptsPerOperation attemptsPerOp `json:"attempts_per_operation"`
	// Webhooks counts the fake's webhook deliveries and what the receiver
	// did with them.
	Webhooks webhookCounts `json:"webhooks"`
	// StoredErrors is how long the operations in review for a stored error
	// took to get there.
	StoredErrors storedErrorTimes `json:"stored_errors"`
	// ProviderReplays counts answers the fake replayed for a repeated key.
	ProviderReplays  int            `json:"provider_replays"`
	ProviderKeyInUse int            `json:"provider_key_in_use"`
	ProviderPOSTs    int            `json:"provider_posts"`
	Faults           map[string]int `json:"faults"`
	FaultsInjected   int            `json:"faults_injected"`
	Reconciler       struct {
		Passes  int `json:"passes"`
		Claimed int `json:"claimed"`
		Settled int `json:"settled"`
	} `json:"reconciler"`
	Money struct {
		Currency         string `json:"currency"`
		LedgerCharged    int64  `json:"ledger_charged"`
		ProviderCharged  int64  `json:"provider_charged"`
		LedgerRefunded   int64  `json:"ledger_refunded"`
		ProviderRefunded int64  `json:"provider_refunded"`
	} `json:"money"`
	// DoubleCharges counts references the fake charged more than once.
	DoubleCharges int `json:"double_charges"`
	DoubleRefunds int `json:"double_refunds"`
	// Duplicates names them.
	Duplicates []string `json:"duplicates"`
	// MovedInReview lists money the provider moved for operations that are
	// in review: what the operator will find when resolving them.
	MovedInReview []string `json:"moved_in_review"`
	// Mismatches lists where the ledger and the provider disagree outside
	// review.
	Mismatches []string `json:"mismatches"`
	// CallErrors lists calls that failed to act (a ledger write, a bug),
	// as opposed to outcomes such as a decline.
	CallErrors []string `json:"call_errors"`
	// Audit is the audit of the fake after the run.
	Audit          demoAuditReport `json:"audit"`
	ElapsedSeconds float64         `json:"elapsed_seconds"`
	OK             bool            `json:"ok"`
}

// report reads the ledger and the fake's truth, with the audit's report.
func (d *demo) report(ctx context.Context, elapsed time.Duration, aud demoAuditReport) (*demoReport, error) {
	s := d.s
	r := &demoReport{Audit: aud, Duplicates: []string{}, MovedInReview: []string{}, Mismatches: []string{}, Faults: map[string]int{}}
	st := &r.Settings
	p := s.Provider
	st.Provider, st.LookupLag = p.name, p.lagName
	st.Orders, st.Refunds, st.Concurrency, st.Seed, st.FaultRate = s.Orders, s.Refunds, s.Concurrency, s.Seed, s.FaultRate
	st.FaultMix = map[string]float64{}
	for _, m := range p.faultMix {
		st.FaultMix[m.kind.String()] = m.share * s.FaultRate
	}
	st.KeyTTL, st.FakeSearchLag, st.AdapterSearchLag = fmtDuration(s.KeyTTL), s.FakeSearchLag.String(), s.AdapterSearchLag.String()
	st.AttemptTimeout, st.HangFor, st.SlowFor, st.RetryAfter = s.AttemptTimeout.String(), s.HangFor.String(), s.SlowFor.String(), s.RetryAfter.String()
	st.CheckInterval, st.ClockSkew, st.SafetyMargin = s.CheckInterval.String(), s.ClockSkew.String(), s.SafetyMargin.String()
	st.MaxAttempts, st.BreakerFailures, st.BreakerOpenFor = s.Retry.MaxAttempts, s.Breaker.ConsecutiveFailures, s.Breaker.OpenFor.String()
	st.Ledger, st.TemporaryLedger, st.FakeURL = s.Ledger, s.TemporaryLedger, s.FakeURL
	st.Webhooks = s.Webhooks
	if s.Webhooks {
		st.WebhookDelay, st.WebhookDuplicate, st.WebhookReorder, st.WebhookFail = s.Hooks.Delay.String(), s.Hooks.DuplicateRate, s.Hooks.ReorderRate, s.Hooks.FailRate
	}
	r.Reconciler.Passes, r.Reconciler.Claimed, r.Reconciler.Settled = d.passes, d.claimed, d.settled

	ops, err := d.listAll(ctx, ledger.ListFilter{Provider: p.name})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]ledger.Operation, len(ops))
	r.Money.Currency = p.currency
	r.AttemptsPerOperation = newAttemptsPerOp()
	for _, op := range ops {
		byID[op.ID] = op
		r.AttemptsPerOperation.add(op)
		k := kindStats{Operations: 1, Attempts: op.Attempts, Retries: max(op.Attempts-1, 0)}
		events, err := d.ledger.store.Events(ctx, op.ID)
		if err != nil {
			return nil, fmt.Errorf("reading the events of %s: %w", op.ID, err)
		}
		for _, e := range events {
			switch e.Kind {
			case ledger.EventLookup:
				k.Lookups++
			case ledger.EventWebhook:
				k.WebhookEvents++
			}
		}
		by, err := settler(op, events)
		if err != nil {
			return nil, err
		}
		switch by {
		case "call":
			k.SettledBy.Call++
		case "lookup":
			k.SettledBy.Lookup++
		case "webhook":
			k.SettledBy.Webhook++
		}
		switch op.Status {
		case ledger.StatusSucceeded:
			k.Succeeded++
		case ledger.StatusFailed:
			k.Failed++
		case ledger.StatusManualReview:
			k.InReview++
		default:
			k.Unsettled++
		}
		var amount int64
		if req, err := payonce.ParseRequest(op.Request); err == nil {
			amount = req.Amount
		}
		switch payonce.Kind(op.Kind) {
		case payonce.KindCharge:
			r.Charges.add(k)
			if op.Status == ledger.StatusSucceeded {
				r.Money.LedgerCharged += amount
			}
		case payonce.KindRefund:
			r.Refunds.add(k)
			if op.Status == ledger.StatusSucceeded {
				r.Money.LedgerRefunded += amount
			}
		}
		r.Total.add(k)
	}

	if r.StoredErrors, err = storedErrorStats(ctx, d.ledger.store, ops); err != nil {
		return nil, err
	}
	t := d.fake.Truth()
	r.Webhooks = d.recv.webhookCounts(d.fake.WebhookStats())
	r.ProviderReplays, r.ProviderKeyInUse = t.Replays, t.KeyInUse
	for route, n := range t.Requests {
		if strings.HasPrefix(route, "POST ") {
			r.ProviderPOSTs += n
		}
	}
	for k, n := range t.Faults {
		r.Faults[k.String()] = n
		r.FaultsInjected += n
	}
	r.Money.ProviderCharged = t.TotalCharged(p.currency)
	r.Money.ProviderRefunded = t.TotalRefunded(p.currency)
	for id, n := range p.charges(t) {
		if n > 1 {
			r.DoubleCharges++
			r.Duplicates = append(r.Duplicates, fmt.Sprintf("charged %d times: %s", n, describeOp(byID, id)))
		}
	}
	for id, n := range p.refunds(t) {
		if n > 1 {
			r.DoubleRefunds++
			r.Duplicates = append(r.Duplicates, fmt.Sprintf("refunded %d times: %s", n, describeOp(byID, id)))
		}
	}
	sort.Strings(r.Duplicates)

	// What the provider did, against what the ledger says.
	moved := map[string]string{} // operation id -> provider object
	for _, pm := range t.Payments {
		if pm.Authorized {
			moved[p.chargeOp(pm)] = pm.ID
		}
	}
	for _, rf := range t.Refunds {
		if rf.Status == "succeeded" {
			moved[p.refundOp(rf)] = rf.ID
		}
	}
	for id, obj := range moved {
		op, ok := byID[id]
		switch {
		case !ok:
			r.Mismatches = append(r.Mismatches, fmt.Sprintf("%s belongs to no operation of the ledger", obj))
		case op.Status == ledger.StatusManualReview:
			r.MovedInReview = append(r.MovedInReview, fmt.Sprintf("%s moved money for %s", obj, describeOp(byID, id)))
		case op.Status != ledger.StatusSucceeded || op.ProviderRef != obj:
			r.Mismatches = append(r.Mismatches, fmt.Sprintf("%s moved money, the ledger says %s (ref %q) for %s", obj, op.Status, op.ProviderRef, describeOp(byID, id)))
		}
	}
	for id, op := range byID {
		if op.Status == ledger.StatusSucceeded && moved[id] == "" && (op.Kind == string(payonce.KindCharge) || op.Kind == string(payonce.KindRefund)) {
			r.Mismatches = append(r.Mismatches, fmt.Sprintf("the ledger says %s succeeded (ref %s), the provider moved no money for it", describeOp(byID, id), op.ProviderRef))
		}
	}
	sort.Strings(r.MovedInReview)
	sort.Strings(r.Mismatches)
	r.CallErrors = append([]string{}, d.callErrs...)
	r.ElapsedSeconds = elapsed.Seconds()
	r.OK = r.DoubleCharges == 0 && r.DoubleRefunds == 0 && r.Total.Unsettled == 0 && r.Total.Operations > 0 && r.Audit.differs() == 0
	return r, nil
}

func describeOp(byID map[string]ledger.Operation, id string) string {
	op, ok := byID[id]
	if !ok {
		return "operation " + id
	}
	return fmt.Sprintf("%s %s (operation %s)", op.Kind, strings.Join(op.References, "/"), id)
}

// print writes the human summary.
func (r *demoReport) print(w io.Writer) {
	s := r.Settings
	fmt.Fprintf(w, "payonce demo: %d orders, %d refunds, concurrency %d, seed %d\n", s.Orders, s.Refunds, s.Concurrency, s.Seed)
	p, _ := findDemoProvider(s.Provider)
	var mix []string
	for _, m := range p.faultMix {
		mix = append(mix, fmt.Sprintf("%s %s", m.kind, pct(s.FaultMix[m.kind.String()])))
	}
	title := p.title
	fmt.Fprintf(w, "fake %s %s fails %s of the requests that move money: %s\n", title, s.FakeURL, pct(s.FaultRate), strings.Join(mix, ", "))
	lag := fmt.Sprintf("%s %s (adapter)", s.LookupLag, s.AdapterSearchLag)
	if s.FakeSearchLag != "0s" {
		lag = fmt.Sprintf("%s %s (fake) / %s (adapter)", s.LookupLag, s.FakeSearchLag, s.AdapterSearchLag)
	}
	fmt.Fprintf(w, "settings: key TTL %s (fake and adapter), %s, attempt timeout %s,\n"+
		"          hang %s, slow %s, Retry-After %s, check interval %s, clock skew %s, safety margin %s, %d attempts per call,\n"+
		"          breaker opens after %d failures for %s\n",
		s.KeyTTL, lag, s.AttemptTimeout, s.HangFor, s.SlowFor, s.RetryAfter,
		s.CheckInterval, s.ClockSkew, s.SafetyMargin, s.MaxAttempts, s.BreakerFailures, s.BreakerOpenFor)
	temp := ""
	if s.TemporaryLedger {
		temp = " (temporary, deleted on exit)"
	}
	fmt.Fprintf(w, "ledger: %s%s\n\n", s.Ledger, temp)

	fmt.Fprintf(w, "%-20s %9s %9s %9s\n", "", "charges", "refunds", "total")
	row := func(name string, get func(kindStats) int) {
		fmt.Fprintf(w, "%-20s %9d %9d %9d\n", name, get(r.Charges), get(r.Refunds), get(r.Total))
	}
	row("operations", func(k kindStats) int { return k.Operations })
	row("attempts", func(k kindStats) int { return k.Attempts })
	row("retries", func(k kindStats) int { return k.Retries })
	row("status lookups", func(k kindStats) int { return k.Lookups })
	row("succeeded", func(k kindStats) int { return k.Succeeded })
	row("failed (declined)", func(k kindStats) int { return k.Failed })
	row("in manual review", func(k kindStats) int { return k.InReview })
	row("unsettled", func(k kindStats) int { return k.Unsettled })
	row("settled by the call", func(k kindStats) int { return k.SettledBy.Call })
	row("  by a lookup", func(k kindStats) int { return k.SettledBy.Lookup })
	row("  by a webhook", func(k kindStats) int { return k.SettledBy.Webhook })
	if s.Webhooks {
		row("webhook events", func(k kindStats) int { return k.WebhookEvents })
	}
	fmt.Fprintln(w)
	if ap := r.AttemptsPerOperation; ap.MaxOperation != nil {
		m := ap.MaxOperation
		fmt.Fprintf(w, "attempts per operation: at most %d, by %s %s (operation %s, %s)\n", ap.Max, m.Kind, strings.Join(m.References, "/"), m.ID, m.Status)
		fmt.Fprintf(w, "operations by attempts made: %s\n\n", ap.text())
	}

	var faults []string
	for k, n := range r.Faults {
		faults = append(faults, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(faults)
	fmt.Fprintf(w, "faults injected: %d (%s)\n", r.FaultsInjected, strings.Join(faults, ", "))
	fmt.Fprintf(w, "provider: %d POSTs, %d answers replayed for a repeated idempotency key, %d refused as key in use\n",
		r.ProviderPOSTs, r.ProviderReplays, r.ProviderKeyInUse)
	fmt.Fprintf(w, "reconciler: %d passes claimed %d operations and settled %d\n", r.Reconciler.Passes, r.Reconciler.Claimed, r.Reconciler.Settled)
	r.StoredErrors.print(w)
	r.Webhooks.print(w, s.WebhookDelay, s.WebhookDuplicate, s.WebhookReorder, s.WebhookFail)
	fmt.Fprintln(w)

	fmt.Fprintf(w, "%-20s %14s %14s\n", "money ("+r.Money.Currency+")", "ledger", "provider")
	fmt.Fprintf(w, "%-20s %14s %14s   %s\n", "charged", money(r.Money.LedgerCharged), money(r.Money.ProviderCharged), agree(r.Money.LedgerCharged, r.Money.ProviderCharged))
	fmt.Fprintf(w, "%-20s %14s %14s   %s\n", "refunded", money(r.Money.LedgerRefunded), money(r.Money.ProviderRefunded), agree(r.Money.LedgerRefunded, r.Money.ProviderRefunded))
	fmt.Fprintln(w)

	fmt.Fprintf(w, "references charged twice: %d\n", r.DoubleCharges)
	fmt.Fprintf(w, "references refunded twice: %d\n", r.DoubleRefunds)
	for _, d := range r.Duplicates {
		fmt.Fprintf(w, "  %s\n", d)
	}
	if len(r.MovedInReview) > 0 {
		fmt.Fprintf(w, "money moved for %d operations in review (an operator resolves them as succeeded):\n", len(r.MovedInReview))
		for _, m := range r.MovedInReview {
			fmt.Fprintf(w, "  %s\n", m)
		}
	}
	if len(r.Mismatches) > 0 {
		fmt.Fprintf(w, "ledger and provider disagree on %d operations:\n", len(r.Mismatches))
		for _, m := range r.Mismatches {
			fmt.Fprintf(w, "  %s\n", m)
		}
	}
	if len(r.CallErrors) > 0 {
		fmt.Fprintf(w, "calls that failed to act:\n")
		for _, e := range r.CallErrors {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	r.Audit.print(w, title)
	if r.Total.InReview > 0 {
		hint := "\"payonce review list\" with the same --ledger shows them"
		if s.TemporaryLedger {
			hint = "run with --ledger to keep the ledger and see them with \"payonce review list\""
		}
		fmt.Fprintf(w, "%d operations are in manual review: the outcome unknown when their key window passed, or a stored error the lookups found nothing for (%s)\n", r.Total.InReview, hint)
	}
	fmt.Fprintf(w, "finished in %.1fs\n", r.ElapsedSeconds)
}

// print writes the webhook lines of the summary.
func (c webhookCounts) print(w io.Writer, delay string, dup, reorder, fail float64) {
	if !c.Enabled {
		fmt.Fprintln(w, "webhooks: off (--webhooks=false): operations settle by their calls and status lookups only")
		return
	}
	fmt.Fprintf(w, "webhooks: the fake sends each event %s late to %s, %s twice, %s out of order, %s of attempts fail\n",
		delay, c.URL, pct(dup), pct(reorder), pct(fail))
	fmt.Fprintf(w, "  fake: %d events, %d sent twice, %d failed attempts retried, %d given up, %d not delivered at exit\n",
		c.Sent, c.SentTwice, c.FailedAttempts, c.GaveUp, c.Dropped)
	rejected := ""
	if c.Rejected > 0 {
		var by []string
		for status, n := range c.RejectedBy {
			by = append(by, fmt.Sprintf("%d answered %s", n, status))
		}
		sort.Strings(by)
		rejected = " (" + strings.Join(by, ", ") + ")"
	}
	fmt.Fprintf(w, "  received: %d deliveries, %d accepted, %d rejected%s; %d events, %d recorded, %d duplicates (acknowledged, nothing changed)\n",
		c.Deliveries, c.Accepted, c.Rejected, rejected, c.Events, c.Recorded, c.Duplicates)
	var disp []string
	for _, d := range ledger.WebhookDispositions {
		if n := c.Dispositions[string(d)]; n > 0 {
			disp = append(disp, fmt.Sprintf("%s %d", d, n))
		}
	}
	if len(disp) == 0 {
		disp = []string{"none"}
	}
	fmt.Fprintf(w, "  what the recorded events did: %s\n", strings.Join(disp, ", "))
	if c.Dispositions[string(ledger.WebhookUnmatched)] > 0 {
		// Events also speak of objects the demo never made an operation
		// for (a payment event names the cancel or capture it rules out).
		fmt.Fprintln(w, "  (unmatched: a target the event names that no operation of payonce's is, e.g. the cancel a payment event rules out)")
	}
}

func pct(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%"
}

// money renders minor units of a two-decimal currency: 123456 -> "1,234.56".
func money(minor int64) string {
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	units := strconv.FormatInt(minor/100, 10)
	var b strings.Builder
	for i, c := range units {
		if i > 0 && (len(units)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return fmt.Sprintf("%s%s.%02d", sign, b.String(), minor%100)
}

func agree(a, b int64) string {
	if a == b {
		return "match"
	}
	return "differ by " + money(b-a)
}
