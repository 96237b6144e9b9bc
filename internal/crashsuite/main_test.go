package crashsuite

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/payonce/payonce/mocks"
)

// The test binary plays four roles. Run by `go test` it is the driver
// (TestCrashSuite and the crash tests). Re-executed by a test with envMode
// set, it is a child process instead: the fake Stripe ("fake"), one worker
// ("worker"), or a crash test's charging process ("charge"), configured by
// the JSON in envConfig.
const (
	envMode   = "PAYONCE_CRASHSUITE_MODE"
	envConfig = "PAYONCE_CRASHSUITE_CONFIG"

	modeFake    = "fake"
	modeWorker  = "worker"
	modeCharger = "charge"
)

// Lines children print on stdout for the driver.
const (
	markerFakeReady     = "CRASHSUITE_FAKE_READY"     // + base URL + API key
	markerWorkerUp      = "CRASHSUITE_WORKER_UP"      // the worker's client and reconciler run
	markerWorkerCharged = "CRASHSUITE_WORKER_CHARGED" // its charges are made; refunds next
	markerWorkerDone    = "CRASHSUITE_WORKER_DONE"    // + JSON workerStats: its work list is done
	// markerCallRetry: a call failed without an outcome (its ledger write
	// failed, PostgreSQL being down) and is made again.
	markerCallRetry = "CRASHSUITE_CALL_RETRY"
	// markerWorkerWebhooks + URL: the worker's webhook receiver listens.
	markerWorkerWebhooks = "CRASHSUITE_WORKER_WEBHOOKS"
	// markerWebhookEvent + event id + "new" or "duplicate": a receiver
	// recorded an event (printed after the commit, before the reply).
	markerWebhookEvent = "CRASHSUITE_WEBHOOK_EVENT"
	// markerRefundSkipped + refund operation id + the charge's status: the
	// worker did not make an order's refund because the charge had not
	// succeeded within ChargeWait (declined, in review, or still pending).
	markerRefundSkipped = "CRASHSUITE_REFUND_SKIPPED"
)

// Exit codes of children. They avoid 1 and 2 (the test binary's own) and 66
// (the race detector's).
const (
	exitOK    = 0
	exitSetup = 16
	exitRun   = 17
)

// TestMain runs the driver's tests, or a child's role when envMode is set.
func TestMain(m *testing.M) {
	switch mode := os.Getenv(envMode); mode {
	case "":
		os.Exit(m.Run())
	case modeFake, modeWorker, modeCharger:
		var cfg childConfig
		if err := json.Unmarshal([]byte(os.Getenv(envConfig)), &cfg); err != nil {
			fmt.Fprintf(os.Stderr, "crashsuite %s: reading %s: %v\n", mode, envConfig, err)
			os.Exit(exitSetup)
		}
		switch mode {
		case modeFake:
			os.Exit(runFake(cfg))
		case modeWorker:
			os.Exit(runWorker(cfg))
		}
		os.Exit(runCharger(cfg))
	default:
		fmt.Fprintf(os.Stderr, "crashsuite: unknown %s=%q (want %s, %s or %s)\n", envMode, mode, modeFake, modeWorker, modeCharger)
		os.Exit(exitSetup)
	}
}

// childConfig is everything a child needs, passed as JSON (durations in
// nanoseconds).
type childConfig struct {
	Work workConfig `json:"work"`
	// Provider names the fake and the adapter (crashProvider); empty is
	// stripe.
	Provider string `json:"provider"`

	// Fake Stripe.
	FakeSeed      int64         `json:"fake_seed"`
	FaultRates    faultRates    `json:"fault_rates"`
	FaultGETs     bool          `json:"fault_gets"`
	HangFor       time.Duration `json:"hang_for"`
	SlowFor       time.Duration `json:"slow_for"`
	RetryAfter    time.Duration `json:"retry_after"`
	KeyTTL        time.Duration `json:"key_ttl"`
	FakeSearchLag time.Duration `json:"fake_search_lag"`
	// Webhooks is how the fake delivers its events (to the driver's
	// front, see webhookFront); its Secret is also what the workers'
	// receivers verify the signatures with. Client is set by the fake.
	Webhooks mocks.WebhookDelivery `json:"webhooks"`

	// Worker and charger: the fake and the ledger (PGURL and Schema, or
	// the charger's SQLite file).
	Index          int           `json:"index"`
	FakeURL        string        `json:"fake_url"`
	APIKey         string        `json:"api_key"`
	PGURL          string        `json:"pg_url"`
	Schema         string        `json:"schema"`
	Concurrency    int           `json:"concurrency"`
	AttemptTimeout time.Duration `json:"attempt_timeout"`
	SafetyMargin   time.Duration `json:"safety_margin"`
	ClockSkew      time.Duration `json:"clock_skew"`
	SearchLag      time.Duration `json:"search_lag"`
	CheckInterval  time.Duration `json:"check_interval"`
	LeaseDuration  time.Duration `json:"lease_duration"`
	ReconcileEvery time.Duration `json:"reconcile_every"`
	// ChargeWait bounds how long a worker waits for an order's charge to
	// settle before deciding about its refund.
	ChargeWait time.Duration `json:"charge_wait"`
	// The orders of a worker's share arrive evenly over Spread from Epoch
	// (see arrivals), as traffic would, rather than all at once.
	Epoch  time.Time     `json:"epoch"`
	Spread time.Duration `json:"spread"`

	// Charger (charger_test.go): the order it charges, its SQLite ledger,
	// whether its transport blocks instead of sending, and whether it
	// waits for a go line on stdin.
	Order          string `json:"order"`
	SQLite         string `json:"sqlite"`
	BlockTransport bool   `json:"block_transport"`
	WaitGo         bool   `json:"wait_go"`
}

// faultRates is mocks.FaultRates keyed by the fault's name, for JSON.
type faultRates map[string]float64
