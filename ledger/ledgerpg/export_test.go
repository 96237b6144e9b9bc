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
