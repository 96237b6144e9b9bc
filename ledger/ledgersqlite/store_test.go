package ledgersqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

func TestOpenUsesWALAndFullSync(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	s := openAt(t, path)

	var mode string
	require.NoError(t, rawDB(t, path).QueryRow("PRAGMA journal_mode").Scan(&mode))
	require.Equal(t, "wal", mode, "journal mode is persistent in the file")

	// Every pooled connection carries the settings, not just the first one.
	ctx := t.Context()
	db := ledgersqlite.DB(s)
	var conns []*sql.Conn
	for range 3 {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		conns = append(conns, c)
		var sync, busy, fk int
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync))
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy))
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk))
		require.Equal(t, 2, sync, "synchronous=FULL")
		require.Equal(t, int(ledgersqlite.DefaultBusyTimeout/time.Millisecond), busy)
		require.Equal(t, 1, fk)
	}
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
}

func TestOpenWithSynchronousNormal(t *testing.T) {
	t.Parallel()
	s := openAt(t, dbPath(t), ledgersqlite.Config{Synchronous: ledgersqlite.SynchronousNormal, BusyTimeout: time.Second})
	var sync, busy int
	require.NoError(t, ledgersqlite.DB(s).QueryRow("PRAGMA synchronous").Scan(&sync))
	require.NoError(t, ledgersqlite.DB(s).QueryRow("PRAGMA busy_timeout").Scan(&busy))
	require.Equal(t, 1, sync)
	require.Equal(t, 1000, busy)
}

func TestOpenRejectsBadArguments(t *testing.T) {
	t.Parallel()
	_, err := ledgersqlite.Open("", ledgersqlite.Config{})
	require.ErrorIs(t, err, ledger.ErrInvalid)
	_, err = ledgersqlite.Open(dbPath(t), ledgersqlite.Config{Synchronous: "OFF"})
	require.ErrorIs(t, err, ledger.ErrInvalid)
	_, err = ledgersqlite.New(nil, ledgersqlite.Config{})
	require.ErrorIs(t, err, ledger.ErrInvalid)
}

func TestOpenPathWithURISpecialCharacters(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/odd ?name#%.db"
	s := openAt(t, path)
	_, err := s.Begin(t.Context(), begin(newOp("op"), "w", t0, false))
	require.NoError(t, err)
	_, err = os.Stat(path)
	require.NoError(t, err, "the file is created under its literal name")
}

func TestDataSurvivesCloseAndReopen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := dbPath(t)
	s, err := ledgersqlite.Open(path, ledgersqlite.Config{})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))

	res, err := s.Begin(ctx, begin(newOp("op-1"), "w", t0, true))
	require.NoError(t, err)
	require.NotNil(t, res.Attempt)
	want, err := s.Finish(ctx, succeed("op-1", "w", t0.Add(time.Second), 1))
	require.NoError(t, err)
	_, wantAtts, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s2 := openAt(t, path)
	got, atts, err := s2.Get(ctx, "op-1")
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, wantAtts, atts)
	require.Len(t, atts, 1)
}

func TestNewWithCallersDB(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := dbPath(t)
	// The caller's DSN sets nothing: no WAL, no busy timeout, no foreign keys.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(2)

	s, err := ledgersqlite.New(db, ledgersqlite.Config{})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))

	res, err := s.Begin(ctx, begin(newOp("op-1"), "w", t0, true))
	require.NoError(t, err)
	require.True(t, res.Created)
	fin := succeed("op-1", "w", t0.Add(time.Second), 1)
	fin.Events = []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: "found"}}
	_, err = s.Finish(ctx, fin)
	require.NoError(t, err)
	evs, err := s.Events(ctx, "op-1")
	require.NoError(t, err)
	require.Len(t, evs, 1)

	// Cleanup removes the attempts and events even though the caller's
	// connections do not enforce ON DELETE CASCADE.
	rep, err := s.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(72 * time.Hour), Retention: 24 * time.Hour, KeyTTL: 24 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted)
	for _, table := range []string{"payonce_attempts", "payonce_events"} {
		require.Zero(t, countRows(t, db, table), table)
	}

	// The store set busy_timeout on the connections while it used them,
	// and put the caller's setting back.
	var busy int
	require.NoError(t, db.QueryRow("PRAGMA busy_timeout").Scan(&busy))
	require.Zero(t, busy, "the caller's busy_timeout is left as the caller set it")

	require.NoError(t, s.Close())
	require.NoError(t, db.PingContext(ctx), "Close leaves the caller's db open")
}

// A write interrupted by its context rolls back and leaves the pool usable.
func TestCanceledWriteChangesNothing(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Begin(ctx, begin(newOp("op-1"), "w", t0, true))
	require.ErrorIs(t, err, context.Canceled)

	_, _, err = s.Get(t.Context(), "op-1")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	_, err = s.Begin(t.Context(), begin(newOp("op-1"), "w", t0, true))
	require.NoError(t, err)
}

func TestErrorsAreTranslated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	_, _, err := s.Get(ctx, "missing")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.ErrorContains(t, err, "ledgersqlite: get")
	var sqlErr interface{ Code() int }
	require.False(t, errors.As(err, &sqlErr), "no driver error behind ErrNotFound")
}

// Values that cannot be read back are reported as ErrCorrupt, not panics,
// and the row stays as it is.
func TestCorruptValues(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := dbPath(t)
	s := openAt(t, path)
	raw := rawDB(t, path)
	for _, id := range []string{"bad-refs", "bad-outcome", "bad-resolution"} {
		_, err := s.Begin(ctx, begin(newOp(id), "w", t0, true))
		require.NoError(t, err)
	}
	_, err := raw.Exec(`UPDATE payonce_operations SET refs = 'not json' WHERE id = 'bad-refs'`)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE payonce_attempts SET outcome = 'teleported' WHERE operation_id = 'bad-outcome'`)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE payonce_operations SET resolved_by = 'x', resolution_outcome = 'maybe' WHERE id = 'bad-resolution'`)
	require.NoError(t, err)

	for _, id := range []string{"bad-refs", "bad-outcome", "bad-resolution"} {
		_, _, err := s.Get(ctx, id)
		require.ErrorIs(t, err, ledger.ErrCorrupt, id)
	}
	_, err = s.Begin(ctx, begin(newOp("bad-refs"), "w", t0, true))
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "bad-outcome", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent},
	})
	require.ErrorIs(t, err, ledger.ErrCorrupt)
}
