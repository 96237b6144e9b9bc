package ledgersqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/ledger/ledgertest"
)

const leaseFor = 5 * time.Minute

// dbPath returns a fresh database file path for one test.
func dbPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "ledger.db")
}

// openAt opens and migrates a store on path, closed when the test ends.
func openAt(t testing.TB, path string, cfg ...ledgersqlite.Config) *ledgersqlite.Store {
	t.Helper()
	s := openUnmigrated(t, path, cfg...)
	require.NoError(t, s.Migrate(t.Context()))
	return s
}

// openUnmigrated opens a store on path without migrating it, closed when
// the test ends.
func openUnmigrated(t testing.TB, path string, cfg ...ledgersqlite.Config) *ledgersqlite.Store {
	t.Helper()
	var c ledgersqlite.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	s, err := ledgersqlite.Open(path, c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
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

// countRows counts the rows of table through db.
func countRows(t testing.TB, db *sql.DB, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM "+table).Scan(&n))
	return n
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

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newOp is the conformance suite's valid NewOperation for id (at generation
// 0).
var newOp = ledgertest.NewOp
