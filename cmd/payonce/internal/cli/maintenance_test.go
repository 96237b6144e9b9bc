package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		args := []string{"migrate", "--ledger", tg.ledger}
		if tg.schema != "" {
			args = append(args, "--schema", tg.schema)
		}
		first := runBinary(t, nil, args...)
		require.Equal(t, 0, first.code, "%s", first)
		require.Contains(t, first.stdout, "applied 001_initial")
		require.Contains(t, first.stdout, "applied 002_events")
		require.Contains(t, first.stdout, "now at schema version")
		second := runBinary(t, nil, args...)
		require.Equal(t, 0, second.code, "%s", second)
		require.Contains(t, second.stdout, "up to date")
		require.NotContains(t, second.stdout, "applied")
		js := runBinary(t, nil, append(args, "--json")...)
		require.Equal(t, 0, js.code, "%s", js)
		obj := js.jsonObject(t)
		require.Empty(t, obj["applied"])
		require.GreaterOrEqual(t, obj["schema_version"], float64(2))
	})
}

func TestCleanup(t *testing.T) {
	t.Parallel()
	eachLedger(t, func(t *testing.T, tg target) {
		fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
		r := runBinary(t, env, "charge", "--base-url", fake.URL(), "--order", "order-c", "--amount", "100", "--currency", "USD", "--payment-method", "pm_card_visa")
		require.Equal(t, 0, r.code, "%s", r)

		short := runBinary(t, env, "cleanup", "--retention", "1h")
		require.Equal(t, 2, short.code, "%s", short)
		require.Contains(t, short.stderr, "key TTL")
		require.Contains(t, short.stderr, "24h")

		ok := runBinary(t, env, "cleanup", "--retention", "30d", "--batch", "10")
		require.Equal(t, 0, ok.code, "%s", ok)
		require.Contains(t, ok.stdout, "deleted 0 finished operations")
		require.Contains(t, ok.stdout, "oldest finished operation left")

		js := runBinary(t, env, "cleanup", "--retention", "2d", "--json")
		require.Equal(t, 0, js.code, "%s", js)
		obj := js.jsonObject(t)
		require.EqualValues(t, 0, obj["deleted"])
		require.NotNil(t, obj["oldest_finished_at"])

		missing := runBinary(t, env, "cleanup")
		require.Equal(t, 2, missing.code, "%s", missing)
		require.Contains(t, missing.stderr, "--retention is required")
		require.Contains(t, ok.stdout, "tombstones written 0, purged 0, kept 0")
		require.EqualValues(t, 0, obj["tombstones"])

		tooShort := runBinary(t, env, "cleanup", "--retention", "30d", "--tombstone-retention", "7d")
		require.Equal(t, 2, tooShort.code, "%s", tooShort)
		require.Contains(t, tooShort.stderr, "--tombstone-retention 168h is shorter than --retention 720h")
		kept := runBinary(t, env, "cleanup", "--retention", "30d", "--tombstone-retention", "365d")
		require.Equal(t, 0, kept.code, "%s", kept)
	})
}

// The default reconcile mode runs until SIGINT or SIGTERM and then exits 0.
func TestReconcileLoopStopsOnSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			tg := sqliteTarget(t)
			fake, env := fakeStripe(t, tg, mocks.StripeOptions{})
			b := startBinary(t, env, "reconcile", "--interval", "50ms", "--base-url", fake.URL())
			require.Contains(t, b.first, "reconciling")
			time.Sleep(200 * time.Millisecond) // a few passes
			require.Contains(t, b.stop(t, sig), "reconciler stopped")
		})
	}
}

// The demo with its fake Stripe: no double charge, everything settled or in
// review, the ledger agreeing with the fake.
func TestDemoJSON(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "demo", "--json", "--orders", "60", "--refunds", "20")
	checkDemo(t, r, 60, 20)
	// Stripe lists its objects: the audit ran, and read at least a
	// PaymentIntent per order, none without payonce's metadata.
	var rep struct {
		Audit demoAudit `json:"audit"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.True(t, rep.Audit.Ran, "%s", r)
	require.GreaterOrEqual(t, rep.Audit.Objects, 60, "%s", r)
	require.Zero(t, rep.Audit.Unattributed, "%s", r)
}

func TestDemoPostgres(t *testing.T) {
	t.Parallel()
	tg := pgTarget(t)
	r := runBinary(t, nil, "demo", "--json", "--orders", "30", "--refunds", "10", "--key-ttl", "6s", "--ledger", tg.ledger, "--schema", tg.schema)
	ap := checkDemo(t, r, 30, 10)
	// The ledger is kept: what the demo left in review is there.
	list := runBinary(t, tg.env(), "ops", "list", "--json", "--limit", "1000")
	require.Equal(t, 0, list.code, "%s", list)
	lines := list.jsonLines(t)
	require.Len(t, lines, 40)
	// The report's maximum and distribution are the ledger's.
	most, dist := 0, map[string]int{}
	for _, l := range lines {
		n := int(l["attempts"].(float64))
		most = max(most, n)
		switch {
		case n <= 2:
			dist[fmt.Sprint(n)]++
		case n <= 5:
			dist["3-5"]++
		default:
			dist["6+"]++
		}
	}
	require.Equal(t, most, ap.Max, "%s", r)
	for _, b := range []string{"0", "1", "2", "3-5", "6+"} {
		require.Equal(t, dist[b], ap.Distribution[b], "bucket %s: %s", b, r)
	}
	show := runBinary(t, tg.env(), "ops", "show", ap.MaxOperation.ID, "--json")
	require.Equal(t, 0, show.code, "%s", show)
	op := show.jsonObject(t)["operation"].(map[string]any)
	require.EqualValues(t, ap.Max, op["attempts"])
	require.Equal(t, ap.MaxOperation.Kind, op["kind"])
}

// demoAttempts is the report's attempts_per_operation.
type demoAttempts struct {
	Max          int `json:"max"`
	MaxOperation *struct {
		ID         string   `json:"id"`
		Kind       string   `json:"kind"`
		References []string `json:"references"`
		Status     string   `json:"status"`
	} `json:"max_operation"`
	Distribution map[string]int `json:"distribution"`
}

// demoAudit is the report's audit of the fake.
type demoAudit struct {
	Ran          bool           `json:"ran"`
	Skipped      string         `json:"skipped"`
	ByLookup     bool           `json:"by_lookup"`
	Objects      int            `json:"objects"`
	Operations   int            `json:"operations"`
	Unattributed int            `json:"unattributed"`
	Differences  map[string]int `json:"differences"`
	Listed       []string       `json:"listed"`
}

func checkDemo(t *testing.T, r result, orders, refunds int) demoAttempts {
	t.Helper()
	require.Equal(t, 0, r.code, "%s", r)
	var rep struct {
		Total struct {
			Operations, Attempts, Succeeded, Failed, Unsettled int
			InReview                                           int `json:"in_review"`
		}
		Charges, Refunds struct{ Operations int }
		Money            struct {
			LedgerCharged    int64 `json:"ledger_charged"`
			ProviderCharged  int64 `json:"provider_charged"`
			LedgerRefunded   int64 `json:"ledger_refunded"`
			ProviderRefunded int64 `json:"provider_refunded"`
		}
		DoubleCharges  int `json:"double_charges"`
		DoubleRefunds  int `json:"double_refunds"`
		FaultsInjected int `json:"faults_injected"`
		Mismatches     []string
		CallErrors     []string `json:"call_errors"`
		MovedInReview  []string `json:"moved_in_review"`
		OK             bool
		ElapsedSeconds float64      `json:"elapsed_seconds"`
		Attempts       demoAttempts `json:"attempts_per_operation"`
		Audit          demoAudit    `json:"audit"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	require.NoError(t, dec.Decode(&rep), "%s", r)
	require.False(t, dec.More(), "one JSON object only")
	require.True(t, rep.OK, "%s", r)
	require.Zero(t, rep.DoubleCharges, "%s", r)
	require.Zero(t, rep.DoubleRefunds, "%s", r)
	require.Zero(t, rep.Total.Unsettled, "%s", r)
	require.Equal(t, orders, rep.Charges.Operations)
	require.Equal(t, refunds, rep.Refunds.Operations)
	require.Equal(t, rep.Total.Operations, rep.Total.Succeeded+rep.Total.Failed+rep.Total.InReview)
	require.Positive(t, rep.FaultsInjected, "the fake injected faults")
	require.Empty(t, rep.Mismatches, "%s", r)
	require.Empty(t, rep.CallErrors, "%s", r)
	// The audit of the fake after the run finds nothing: every class
	// reported, each zero, and every operation of the run in its period.
	require.Len(t, rep.Audit.Differences, 5, "%s", r)
	for c, n := range rep.Audit.Differences {
		require.Zero(t, n, "audit: %s: %s", c, r)
	}
	require.Empty(t, rep.Audit.Listed, "%s", r)
	if rep.Audit.Ran {
		require.Equal(t, rep.Total.Operations, rep.Audit.Operations, "%s", r)
		if !rep.Audit.ByLookup {
			require.Positive(t, rep.Audit.Objects, "%s", r)
		}
	} else {
		require.NotEmpty(t, rep.Audit.Skipped, "%s", r)
	}
	if len(rep.MovedInReview) == 0 {
		require.Equal(t, rep.Money.ProviderCharged, rep.Money.LedgerCharged)
		require.Equal(t, rep.Money.ProviderRefunded, rep.Money.LedgerRefunded)
	}
	// The most attempts one operation made, which one, and how many
	// operations made how many.
	ap := rep.Attempts
	require.NotNil(t, ap.MaxOperation, "%s", r)
	require.NotEmpty(t, ap.MaxOperation.ID)
	require.Contains(t, []string{"charge", "refund"}, ap.MaxOperation.Kind)
	require.NotEmpty(t, ap.MaxOperation.References)
	require.Positive(t, ap.Max)
	sum := 0
	for _, b := range []string{"0", "1", "2", "3-5", "6+"} {
		n, ok := ap.Distribution[b]
		require.True(t, ok, "bucket %s missing: %s", b, r)
		sum += n
	}
	require.Len(t, ap.Distribution, 5)
	require.Equal(t, rep.Total.Operations, sum, "every operation is in one bucket")
	bucket := map[bool]string{true: "6+", false: "3-5"}[ap.Max >= 6]
	if ap.Max <= 2 {
		bucket = fmt.Sprint(ap.Max)
	}
	require.Positive(t, ap.Distribution[bucket], "the maximum's bucket is not empty")
	t.Logf("demo: %d operations, %d attempts, %d in review, %.1fs; at most %d attempts (%s %v), %v",
		rep.Total.Operations, rep.Total.Attempts, rep.Total.InReview, rep.ElapsedSeconds, ap.Max, ap.MaxOperation.Kind, ap.MaxOperation.References, ap.Distribution)
	return ap
}

// The human summary of a small demo.
func TestDemoHuman(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "demo", "--orders", "20", "--refunds", "5", "--concurrency", "4", "--seed", "7", "--key-ttl", "4s")
	require.Equal(t, 0, r.code, "%s", r)
	for _, w := range []string{
		"payonce demo: 20 orders, 5 refunds, concurrency 4, seed 7",
		"settings: key TTL 4s (fake and adapter)",
		"(temporary, deleted on exit)",
		"operations", "status lookups", "in manual review", "unsettled",
		"clock skew 1s, safety margin 2s", "attempts per operation: at most ", "operations by attempts made: ", "1: ", "3-5: ", "6+: ",
		"money (USD)", "charged", "refunded",
		"references charged twice: 0", "references refunded twice: 0", "finished in",
		"audit of the fake Stripe: ", " operations, 0 differences (unknown_to_ledger 0, status_differs 0, duplicated 0, contradicted 0, missing_at_provider 0), 0 unattributed",
	} {
		require.Contains(t, r.stdout, w)
	}
	require.Contains(t, r.stderr, "reconciled:")
}
