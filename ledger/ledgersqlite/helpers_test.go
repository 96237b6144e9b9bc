package ledgersqlite_test

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const leaseFor = 5 * time.Minute

// dbPath returns a fresh database file path for one test.
func dbPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "ledger.db")
}

// openAt opens and migrates a store on path, closed when the test ends.
func openAt(t testing.TB, path string, opts ...ledgersqlite.Option) *ledgersqlite.Store {
	t.Helper()
	s, err := ledgersqlite.Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Migrate(t.Context()))
	return s
}

// openStore opens a migrated store on a file of its own.
func openStore(t testing.TB) *ledgersqlite.Store {
	t.Helper()
	return openAt(t, dbPath(t))
}

// rawDB opens a second, independent *sql.DB on path, as another process would.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func newOp(id string) ledger.NewOperation {
	req := fmt.Appendf(nil, `{"amount":1000,"currency":"EUR","order":%q}`, id)
	sum := sha256.Sum256(req)
	return ledger.NewOperation{
		ID:          id,
		Key:         id,
		Provider:    "stripe",
		Kind:        "charge",
		References:  []string{"order", id},
		Fingerprint: hex.EncodeToString(sum[:]),
		Request:     req,
		KeyTTL:      24 * time.Hour,
	}
}

func begin(op ledger.NewOperation, owner string, now time.Time, start bool) ledger.BeginParams {
	return ledger.BeginParams{Op: op, Owner: owner, Now: now, LeaseUntil: now.Add(leaseFor), StartAttempt: start}
}

func succeed(id, owner string, now time.Time, attempt int) ledger.FinishParams {
	return ledger.FinishParams{
		ID: id, Owner: owner, Now: now,
		From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt:     &ledger.AttemptOutcome{Number: attempt, Class: ledger.OutcomeSuccess, HTTPStatus: 200},
		ProviderRef: "pi_" + id,
		Result:      []byte(`{"status":"succeeded"}`),
	}
}
