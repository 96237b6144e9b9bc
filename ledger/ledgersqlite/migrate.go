package ledgersqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"time"
)

//go:embed migrations/*.up.sql
var migrationFS embed.FS

// migration is one embedded schema change, applied at most once.
type migration struct {
	Version int
	Name    string
	SQL     string
}

var migrationName = regexp.MustCompile(`^(\d{3,})_([a-z0-9_]+)\.up\.sql$`)

// migrations returns the embedded migrations in version order. Names are
// NNN_name.up.sql, the same scheme as the PostgreSQL store.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q is not named NNN_name.up.sql", e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migration version %d used twice (%s, %s)", v, prev, e.Name())
		}
		seen[v] = e.Name()
		body, err := fs.ReadFile(migrationFS, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{Version: v, Name: m[2], SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Migrate applies the embedded migrations not yet recorded in
// payonce_schema_migrations, in version order, all in one IMMEDIATE
// transaction: two processes migrating at once take turns and the second
// finds nothing to do; a failed migration leaves the schema as it was. It is
// a no-op when the schema is current, and refuses a database migrated by a
// newer build (its schema may break assumptions this code relies on).
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fail("migrate", err)
	}
	return s.migrate(ctx, ms)
}

// migrate applies the migrations of ms (in version order) not yet applied;
// the last one of ms is the newest version it accepts in the database.
// Tests give it a prefix of migrations() to build an older schema.
func (s *Store) migrate(ctx context.Context, ms []migration) error {
	latest := ms[len(ms)-1].Version
	err := s.write(ctx, func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS payonce_schema_migrations (
			version    INTEGER NOT NULL PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`); err != nil {
			return err
		}
		versions, err := collect(ctx, c, func(sc scanner) (int, error) {
			var v int
			err := sc.Scan(&v)
			return v, err
		}, `SELECT version FROM payonce_schema_migrations`)
		if err != nil {
			return err
		}
		applied := map[int]bool{}
		for _, v := range versions {
			if v > latest {
				return fmt.Errorf("database schema is at version %d, this build knows up to %d: upgrade payonce", v, latest)
			}
			applied[v] = true
		}
		for _, m := range ms {
			if applied[m.Version] {
				continue
			}
			if _, err := c.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %03d_%s: %w", m.Version, m.Name, err)
			}
			// applied_at is informational, so the system clock is fine here.
			if _, err := c.ExecContext(ctx, `INSERT INTO payonce_schema_migrations (version, name, applied_at)
				VALUES (?, ?, ?)`, m.Version, m.Name, time.Now().UTC().UnixMicro()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fail("migrate", err)
	}
	return nil
}

// SchemaVersion returns the highest migration version applied to the
// database, or 0 when Migrate has never run.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.read(ctx, func(c *sql.Conn) error {
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema
			WHERE type = 'table' AND name = 'payonce_schema_migrations'`).Scan(&n); err != nil || n == 0 {
			return err
		}
		return c.QueryRowContext(ctx, `SELECT MAX(version) FROM payonce_schema_migrations`).Scan(&v)
	})
	if err != nil {
		return 0, fail("schema version", err)
	}
	return int(v.Int64), nil
}
