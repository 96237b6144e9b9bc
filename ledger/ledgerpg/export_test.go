package ledgerpg

// KeepMigrationsUpTo makes s know only the migrations up to version, as a
// build of that schema version would, so that tests can upgrade from it.
func KeepMigrationsUpTo(s *Store, version int) {
	var keep []Migration
	for _, m := range s.migrations {
		if m.Version <= version {
			keep = append(keep, m)
		}
	}
	s.migrations = keep
}

// SetFsyncQuery makes Migrate read the server's fsync setting with query
// (e.g. "SELECT 'off'"), so that tests can see the warning without a
// server running with fsync off.
func SetFsyncQuery(s *Store, query string) { s.fsyncQuery = query }

// SetProbe makes every write transaction of s run query (returning one text
// value) just before its COMMIT and hand the value to fn with the method's
// name.
func SetProbe(s *Store, query string, fn func(method, value string)) {
	s.probeSQL, s.onProbe = query, fn
}

// AfterCleanupBatch makes Cleanup call fn inside each batch transaction,
// after its deletes and tombstones are written and before its COMMIT.
func AfterCleanupBatch(s *Store, fn func()) { s.afterCleanupBatch = fn }

// StatsSQL is the statement Stats runs on s.
func StatsSQL(s *Store, includeSettled bool) string {
	if includeSettled {
		return s.q.statsSettled
	}
	return s.q.stats
}

// SetLongWayOnly turns s's one-statement writes off: every write then reads
// its row under the lock first.
func SetLongWayOnly(s *Store) { s.longWayOnly = true }
