package ledgersqlite

import (
	"context"
	"database/sql"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Commits returns the number of COMMITs s has issued, for tests and
// benchmarks in package ledgersqlite_test.
func Commits(s *Store) int64 { return s.commits.Load() }

// FastFinishes returns the number of Finishes s wrote on its copy of the
// row (revision.go), without reading the row first.
func FastFinishes(s *Store) int64 { return s.fastFinishes.Load() }

// SetLongWayOnly turns s's writes on a copy off: every Finish then reads
// the row inside its write transaction first.
func SetLongWayOnly(s *Store) { s.longWayOnly = true }

// DB exposes the pool of s to tests.
func DB(s *Store) *sql.DB { return s.db }

// MigrateTo applies the embedded migrations up to version only, as a build
// of that schema version would have, so that tests can upgrade from it.
func MigrateTo(ctx context.Context, s *Store, version int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var keep []migration
	for _, m := range ms {
		if m.Version <= version {
			keep = append(keep, m)
		}
	}
	return s.migrate(ctx, keep)
}

// WriteSynchronous runs an empty write transaction the way the Store's
// durable writes run and reports the connection's PRAGMA synchronous inside
// it (2 = FULL, 1 = NORMAL).
func WriteSynchronous(ctx context.Context, s *Store) (int, error) {
	var level int
	err := s.write(ctx, func(c *sql.Conn) error {
		return c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&level)
	})
	return level, err
}

// StatsSQL is the statement Stats runs.
func StatsSQL(includeSettled bool) string {
	if includeSettled {
		return statsSettledQuery
	}
	return statsQuery
}

// QuietTx is quietTx, for tests.
func QuietTx(ctx context.Context, c *sql.Conn) interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
} {
	return quietTx(ctx, c)
}

// FeedSyncSynchronous runs an empty write transaction the way Feed's sync
// runs and reports the connection's PRAGMA synchronous inside it.
func FeedSyncSynchronous(ctx context.Context, s *Store) (int, error) {
	var level int
	err := s.writeAt(ctx, feedSyncLevel, func(c *sql.Conn) error {
		return c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&level)
	})
	return level, err
}

// ReviewSQL is the statement ListReview runs for f, with its arguments.
func ReviewSQL(f ledger.ReviewFilter) (string, []any) {
	return listSQL(reviewWhere(f), "review_at, id", ReviewLimitOf(f))
}

// ListSQL is the statement List runs for f on s, with its arguments (after
// its probes of the provider reference index); ok false when List would
// not run one.
func ListSQL(ctx context.Context, s *Store, f ledger.ListFilter) (q string, args []any, ok bool, err error) {
	err = s.read(ctx, func(c *sql.Conn) error {
		w, found, err := listWhere(ctx, c, f)
		q, args = listSQL(w, "id", 100)
		ok = found
		return err
	})
	return q, args, ok, err
}

// InboxStatsSQL is the statement of Stats.Inbox.
var InboxStatsSQL = inboxStatsQuery

// ReviewLimitOf is ledgerdriver.ReviewLimit.
func ReviewLimitOf(f ledger.ReviewFilter) int { return ledgerdriver.ReviewLimit(f) }
