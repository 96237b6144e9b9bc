package cli_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// demoWebhookReport is the webhook half of the demo's JSON report.
type demoWebhookReport struct {
	Settings struct {
		Provider string `json:"provider"`
		Webhooks bool   `json:"webhooks"`
	} `json:"settings"`
	Charges, Refunds, Total demoKind
	Webhooks                demoWebhooks `json:"webhooks"`
	DoubleCharges           int          `json:"double_charges"`
	DoubleRefunds           int          `json:"double_refunds"`
	Audit                   demoAudit    `json:"audit"`
}

// demoWebhooks is the report's "webhooks" object: its counts by JSON
// name, and what each recorded event did.
type demoWebhooks struct {
	Enabled      bool
	URL          string
	Dispositions map[string]int
	counts       map[string]int
}

func (w *demoWebhooks) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	w.counts = map[string]int{}
	for k, v := range raw {
		var err error
		switch k {
		case "enabled":
			err = json.Unmarshal(v, &w.Enabled)
		case "url":
			err = json.Unmarshal(v, &w.URL)
		case "dispositions":
			err = json.Unmarshal(v, &w.Dispositions)
		case "rejected_by_status":
		default:
			var n int
			err = json.Unmarshal(v, &n)
			w.counts[k] = n
		}
		if err != nil {
			return fmt.Errorf("webhooks.%s: %w", k, err)
		}
	}
	return nil
}

// n is the count named k. A name the report does not have panics, so that
// a renamed field cannot pass as a zero count.
func (w demoWebhooks) n(k string) int {
	v, ok := w.counts[k]
	if !ok {
		panic("the demo report has no webhooks." + k)
	}
	return v
}

type demoKind struct {
	Operations    int `json:"operations"`
	Succeeded     int `json:"succeeded"`
	Failed        int `json:"failed"`
	WebhookEvents int `json:"webhook_events"`
	SettledBy     struct {
		Call    int `json:"call"`
		Lookup  int `json:"lookup"`
		Webhook int `json:"webhook"`
	} `json:"settled_by"`
}

// runDemoWebhooks runs the demo with --json, checks it as every demo is
// checked (no money moved twice, the ledger agreeing with the fake) and
// that its settled-by counts add up, and returns the report.
func runDemoWebhooks(t *testing.T, orders, refunds int, args ...string) demoWebhookReport {
	t.Helper()
	r := runBinary(t, nil, append([]string{"demo", "--json", "--orders", strconv.Itoa(orders), "--refunds", strconv.Itoa(refunds)}, args...)...)
	checkDemo(t, r, orders, refunds)
	var rep demoWebhookReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), "%s", r)
	require.Zero(t, rep.DoubleCharges, "%s", r)
	require.Zero(t, rep.DoubleRefunds, "%s", r)
	for name, k := range map[string]demoKind{"charges": rep.Charges, "refunds": rep.Refunds, "total": rep.Total} {
		// Every settled operation was settled by exactly one thing.
		require.Equal(t, k.Succeeded+k.Failed, k.SettledBy.Call+k.SettledBy.Lookup+k.SettledBy.Webhook, "%s: %s", name, r)
	}
	require.Equal(t, rep.Charges.SettledBy.Webhook+rep.Refunds.SettledBy.Webhook, rep.Total.SettledBy.Webhook)
	require.Len(t, rep.Webhooks.Dispositions, len(ledger.WebhookDispositions), "every disposition is reported, zero or not: %s", r)
	t.Logf("%s: settled by call %d, lookup %d, webhook %d; webhooks %+v", rep.Settings.Provider,
		rep.Total.SettledBy.Call, rep.Total.SettledBy.Lookup, rep.Total.SettledBy.Webhook, rep.Webhooks)
	return rep
}

// checkWebhookCounts checks that the receiver's counts agree with the
// fake's and with the ledger's audit entries.
func checkWebhookCounts(t *testing.T, rep demoWebhookReport) {
	t.Helper()
	w := rep.Webhooks
	require.True(t, rep.Settings.Webhooks)
	require.True(t, w.Enabled)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+/webhooks/`+rep.Settings.Provider+`$`, w.URL)
	require.Positive(t, w.n("sent"), "the fake sent events")
	// The faults were on: some deliveries twice, some attempts failed.
	require.Positive(t, w.n("sent_twice"), "%+v", w)
	require.Positive(t, w.n("failed_attempts"), "%+v", w)
	require.Zero(t, w.n("gave_up"), "%+v", w)
	require.Zero(t, w.n("dropped"), "%+v", w)
	// Every delivery was acknowledged, and every duplicate was recognised
	// as one: each event recorded once.
	require.Zero(t, w.n("rejected"), "%+v", w)
	require.Equal(t, w.n("deliveries"), w.n("accepted"))
	require.Equal(t, w.n("sent")+w.n("sent_twice"), w.n("deliveries"), "one delivery per event and per copy (one event per delivery): %+v", w)
	require.Equal(t, w.n("recorded")+w.n("duplicates"), w.n("events"))
	require.Equal(t, w.n("sent"), w.n("recorded"), "each event recorded once: %+v", w)
	require.Equal(t, w.n("sent_twice"), w.n("duplicates"), "each second copy acknowledged as a duplicate: %+v", w)
	// What the receiver was told the events settled is what the ledger's
	// audit entries say settled operations.
	require.Equal(t, w.Dispositions["settled"], rep.Total.SettledBy.Webhook, "%+v", w)
	require.Positive(t, rep.Total.WebhookEvents, "%+v", rep.Total)
}

// With webhooks (the default) against Checkout.com, whose refunds are
// answered "accepted" and settle by their webhook or a lookup: none twice,
// and the counts consistent. (TestDemoAdyen is where operations must be
// settled by webhook: Adyen has no lookup.)
func TestDemoWebhooksCheckout(t *testing.T) {
	t.Parallel()
	rep := runDemoWebhooks(t, 60, 20, "--provider", "checkout")
	checkWebhookCounts(t, rep)
	// Whether a refund's webhook or the call's own lookup settles it first
	// is a race (the machine's load decides); either way every event about
	// an operation settled or confirmed it.
	require.Positive(t, rep.Webhooks.Dispositions["settled"]+rep.Webhooks.Dispositions["confirmed"], "%+v", rep.Webhooks)
}

// With webhooks against Stripe and YooKassa: the same consistency. YooKassa
// signs nothing, so its notifications only ever make an operation due for
// a lookup, never settle it.
func TestDemoWebhooksStripeYooKassa(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"stripe", "yookassa"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			rep := runDemoWebhooks(t, 60, 20, "--provider", p, "--key-ttl", "6s")
			checkWebhookCounts(t, rep)
			if p == "yookassa" {
				require.Zero(t, rep.Total.SettledBy.Webhook, "%+v", rep.Total)
				require.Zero(t, rep.Webhooks.Dispositions["confirmed"]+rep.Webhooks.Dispositions["settled"], "%+v", rep.Webhooks)
			}
		})
	}
}

// --webhooks=false: the lookup-only path, with nothing received.
func TestDemoWebhooksOff(t *testing.T) {
	t.Parallel()
	rep := runDemoWebhooks(t, 40, 10, "--provider", "checkout", "--webhooks=false")
	require.False(t, rep.Settings.Webhooks)
	w := rep.Webhooks
	require.False(t, w.Enabled)
	require.Zero(t, w.n("sent")+w.n("deliveries")+w.n("events")+w.n("recorded"), "%+v", w)
	require.Zero(t, rep.Total.SettledBy.Webhook)
	require.Zero(t, rep.Total.WebhookEvents)
	// Checkout.com's accepted refunds are settled by lookups instead.
	require.Positive(t, rep.Refunds.SettledBy.Lookup, "%+v", rep.Refunds)

	h := runBinary(t, nil, "demo", "--orders", "10", "--refunds", "3", "--concurrency", "4", "--key-ttl", "4s", "--webhooks=false")
	require.Equal(t, 0, h.code, "%s", h)
	require.Contains(t, h.stdout, "webhooks: off (--webhooks=false)")
	require.NotContains(t, h.stdout, "received:")
}

// The human summary with webhooks: the settled-by rows and the webhook
// lines.
func TestDemoWebhooksHuman(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "demo", "--provider", "checkout", "--orders", "20", "--refunds", "5", "--concurrency", "4", "--seed", "7")
	require.Equal(t, 0, r.code, "%s", r)
	for _, w := range []string{
		"settled by the call", "  by a lookup", "  by a webhook", "webhook events",
		"webhooks: the fake sends each event 200ms late to http://127.0.0.1:", "10% twice, 10% out of order, 10% of attempts fail",
		"  fake: ", "  received: ", " duplicates (acknowledged, nothing changed)", "  what the recorded events did: ",
		"references charged twice: 0",
	} {
		require.Contains(t, r.stdout, w, "%s", r)
	}
	require.Contains(t, r.stderr, "webhooks: ")
	help := runBinary(t, nil, "demo", "-h")
	require.Equal(t, 0, help.code)
	require.Contains(t, help.stdout, "--webhooks")
}

// --provider adyen: Adyen has no status lookup, so what the calls did not
// settle is settled by webhook, its "received" refunds all of them, with
// nothing charged or refunded twice under the delivery faults.
func TestDemoAdyen(t *testing.T) {
	t.Parallel()
	rep := runDemoWebhooks(t, 60, 20, "--provider", "adyen", "--key-ttl", "6s")
	checkWebhookCounts(t, rep)
	require.Zero(t, rep.Total.SettledBy.Lookup, "Adyen's lookup never finds anything: %+v", rep.Total)
	rf := rep.Refunds
	require.Positive(t, rf.SettledBy.Webhook, "%+v", rf)
	require.Equal(t, rf.Succeeded+rf.Failed, rf.SettledBy.Webhook, "every settled refund was settled by its webhook: %+v", rf)
	// Adyen is audited from a settlement report the merchant downloads:
	// the demo says why it does not audit instead.
	require.False(t, rep.Audit.Ran, "%+v", rep.Audit)
	require.Contains(t, rep.Audit.Skipped, "report")

	off := runBinary(t, nil, "demo", "--provider", "adyen", "--webhooks=false")
	require.Equal(t, 2, off.code, "%s", off)
	require.Contains(t, off.stderr, "--provider adyen needs webhooks")
}
