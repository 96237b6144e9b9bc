package ledgersqlite

import "database/sql"

// Commits returns the number of COMMITs s has issued, for tests and
// benchmarks in package ledgersqlite_test.
func Commits(s *Store) int64 { return s.commits.Load() }

// DB exposes the pool of s to tests.
func DB(s *Store) *sql.DB { return s.db }
