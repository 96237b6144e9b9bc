package crashsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/providers/stripe"
)

// The "charge" child of the crash tests (crash_test.go): one Charge against
// the parent's fake Stripe, on a ledger the parent can open too (an SQLite
// file or a PostgreSQL schema), then one JSON line and one exit code. The
// parent kills it with SIGKILL at a chosen moment.

// Lines a charging child prints on stdout besides its JSON result.
const (
	markerSending     = "CRASHSUITE_SENDING" // + method, path, idempotency key
	markerChargeReady = "CRASHSUITE_CHARGE_READY"
)

// Exit codes of a charging child besides exitOK and exitSetup, one per
// outcome class (see classOf).
const (
	exitDeclined    = 10
	exitInProgress  = 11
	exitUnknown     = 12
	exitUnavailable = 13
	exitReview      = 14
	exitError       = 15
)

// chargeExit is the exit code of each class; any other class is exitError.
var chargeExit = map[string]int{
	"succeeded": exitOK, "declined": exitDeclined, "in_progress": exitInProgress,
	"unknown": exitUnknown, "unavailable": exitUnavailable, "review": exitReview,
}

const (
	crashAmount = 1999
	// crashAttemptTimeout is long: a child must still be waiting for its
	// answer when the parent kills it.
	crashAttemptTimeout = time.Minute
	// crashLease is the child's lease; the restarted service moves its clock
	// past it to take the operation over.
	crashLease = 3 * time.Minute
)

// chargeResult is the JSON line a charging child prints when its Charge
// returns.
type chargeResult struct {
	Status      string `json:"status"`
	Class       string `json:"class"`
	Error       string `json:"error,omitempty"`
	OperationID string `json:"operation_id,omitempty"`
	Key         string `json:"key,omitempty"`
	ProviderRef string `json:"provider_ref,omitempty"`
	Attempts    int    `json:"attempts"`
	Replayed    bool   `json:"replayed,omitempty"`
}

func crashCharge(order string) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: crashAmount, Currency: currency, PaymentMethod: "pm_card_visa"}
}

// runCharger is the "charge" child: cfg.Order charged once, on the real
// clock, through cfg.FakeURL, on the ledger in cfg.SQLite or cfg.PGURL and
// cfg.Schema. With cfg.BlockTransport the request is announced
// (markerSending) and never sent; with cfg.WaitGo the child prints
// markerChargeReady once its client is built and waits for a line on stdin
// before charging, so that several children can be released at once.
func runCharger(cfg childConfig) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	setupFailed := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "crashsuite charger: "+format+"\n", args...)
		return exitSetup
	}

	var store ledger.Store
	switch {
	case cfg.SQLite != "":
		s, err := ledgersqlite.Open(cfg.SQLite, ledgersqlite.Config{})
		if err != nil {
			return setupFailed("opening the SQLite ledger: %v", err)
		}
		defer s.Close()
		store = s
	case cfg.PGURL != "":
		pool, err := pgxpool.New(ctx, cfg.PGURL)
		if err != nil {
			return setupFailed("opening the PostgreSQL pool: %v", err)
		}
		defer pool.Close()
		s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: cfg.Schema})
		if err != nil {
			return setupFailed("opening the PostgreSQL ledger: %v", err)
		}
		store = s
	default:
		return setupFailed("no ledger: set sqlite or pg_url")
	}
	// A service migrates at start-up; the schema is current, so this is
	// a no-op (safe from several processes at once).
	if err := store.Migrate(ctx); err != nil {
		return setupFailed("migrating: %v", err)
	}

	psp, err := stripe.New(stripe.Config{APIKey: cfg.APIKey, BaseURL: cfg.FakeURL})
	if err != nil {
		return setupFailed("stripe adapter: %v", err)
	}
	var rt http.RoundTripper = &http.Transport{DisableKeepAlives: true}
	if cfg.BlockTransport {
		rt = blockingTransport{}
	}
	client, err := payonce.New(payonce.Config{
		Provider: psp, Store: store,
		HTTPClient:     &http.Client{Transport: rt},
		AttemptTimeout: crashAttemptTimeout,
		LeaseDuration:  crashLease,
		Retry:          payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	})
	if err != nil {
		return setupFailed("client: %v", err)
	}

	if cfg.WaitGo {
		fmt.Println(markerChargeReady)
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return setupFailed("waiting for the go line on stdin: %v", err)
		}
	}

	res, err := client.Charge(ctx, crashCharge(cfg.Order))
	class := classOf(err)
	code, ok := chargeExit[class]
	if !ok {
		code = exitError
	}
	out := chargeResult{
		Status: string(res.Status), Class: class, OperationID: res.OperationID, Key: res.Key,
		ProviderRef: res.ProviderRef, Attempts: res.Attempts, Replayed: res.Replayed,
	}
	if err != nil {
		out.Error = err.Error()
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
	return code
}

// blockingTransport announces each request on stdout and then never sends
// it: the child is stuck between journaling an attempt and sending it.
type blockingTransport struct{}

func (blockingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	fmt.Printf("%s %s %s %s\n", markerSending, req.Method, req.URL.Path, req.Header.Get("Idempotency-Key"))
	for {
		// Forever, deaf to the request's context: only SIGKILL ends this.
		time.Sleep(time.Hour)
	}
}
