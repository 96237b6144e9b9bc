package ledgerpg

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// Migration is one versioned schema change shipped with the package.
type Migration struct {
	// Version orders migrations; versions are applied in ascending order and
	// each exactly once per schema.
	Version int
	// Name is the file name's description, e.g. "initial".
	Name string

	sql string
}

// loadMigrations reads the embedded migrations/NNN_name.up.sql files in
// version order. A malformed name is a packaging bug, reported by New.
func loadMigrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("ledgerpg: reading embedded migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries { // ReadDir sorts by name, and names start with zero-padded versions
		base, ok := strings.CutSuffix(e.Name(), ".up.sql")
		num, name, ok2 := strings.Cut(base, "_")
		version, err := strconv.Atoi(num)
		if !ok || !ok2 || err != nil || version < 1 || name == "" {
			return nil, fmt.Errorf("ledgerpg: embedded migration %q is not named NNN_name.up.sql", e.Name())
		}
		if n := len(out); n > 0 && out[n-1].Version >= version {
			return nil, fmt.Errorf("ledgerpg: embedded migration %q does not follow version %d", e.Name(), out[n-1].Version)
		}
		body, err := fs.ReadFile(migrationFiles, path.Join("migrations", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("ledgerpg: reading embedded migration %q: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: version, Name: name, sql: string(body)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("ledgerpg: no embedded migrations")
	}
	return out, nil
}

// Migrations lists every migration this version of the package knows, in
// the order Migrate applies them. The last one is the current schema version.
func (s *Store) Migrations() []Migration {
	return append([]Migration(nil), s.migrations...)
}

// Migrate brings the schema up to date; see MigrateReport. It implements
// ledger.Store.
func (s *Store) Migrate(ctx context.Context) error {
	_, err := s.MigrateReport(ctx)
	return err
}

// MigrateReport creates the schema if it is missing and applies, in one
// transaction, every migration not yet recorded in payonce_schema_migrations,
// returning the ones it applied (none when the schema was current). Processes
// migrating the same schema at once are serialized by a transaction-scoped
// advisory lock, so each migration runs exactly once; on error nothing is
// applied. It also checks the server's fsync setting and logs a warning
// (once per Store, to Config.Logger) when it is off.
func (s *Store) MigrateReport(ctx context.Context) ([]Migration, error) {
	var applied []Migration
	err := pgx.BeginTxFunc(ctx, s.pool, durableTx, func(tx pgx.Tx) error {
		// Everything below, including CREATE SCHEMA, happens under the lock:
		// two processes racing through "CREATE SCHEMA IF NOT EXISTS" or
		// "CREATE TABLE IF NOT EXISTS" can otherwise both decide to create
		// and one fails on a catalog unique violation.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey(s.schema)); err != nil {
			return fmt.Errorf("taking the migration lock: %w", err)
		}
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", s.schema).Scan(&exists); err != nil {
			return fmt.Errorf("looking up schema: %w", err)
		}
		if !exists { // checked first so that a role without CREATE on the database can use a schema made for it
			if _, err := tx.Exec(ctx, "CREATE SCHEMA "+s.q.schema); err != nil {
				return fmt.Errorf("creating schema %s: %w", s.q.schema, err)
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.q.migrationsTable+` (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("creating the migrations table: %w", err)
		}
		done := map[int]bool{}
		rows, err := tx.Query(ctx, "SELECT version FROM "+s.q.migrationsTable)
		if err != nil {
			return fmt.Errorf("reading applied migrations: %w", err)
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return fmt.Errorf("reading applied migrations: %w", err)
		}
		for _, v := range versions {
			done[v] = true
		}
		for _, m := range s.migrations {
			if done[m.Version] {
				continue
			}
			// No arguments: pgx sends this with the simple protocol, which
			// runs a file of several statements.
			if _, err := tx.Exec(ctx, strings.ReplaceAll(m.sql, "{{schema}}", s.q.schema)); err != nil {
				return fmt.Errorf("applying migration %03d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+s.q.migrationsTable+" (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
				return fmt.Errorf("recording migration %03d_%s: %w", m.Version, m.Name, err)
			}
			applied = append(applied, m)
		}
		return s.checkFsync(ctx, tx)
	})
	if err != nil {
		return nil, fmt.Errorf("ledgerpg: migrate schema %s: %w", s.q.schema, err)
	}
	return applied, nil
}

// checkFsync warns, once per Store, when the server runs with fsync off:
// then no commit is durable, synchronous_commit or not, and an operating
// system crash or power loss can forget attempts that were sent (rule 2).
// The store keeps working: fsync off is a deliberate (test) setup, and
// refusing it would break those.
func (s *Store) checkFsync(ctx context.Context, tx pgx.Tx) error {
	query := "SELECT current_setting('fsync')"
	if s.fsyncQuery != "" {
		query = s.fsyncQuery
	}
	var fsync string
	if err := tx.QueryRow(ctx, query).Scan(&fsync); err != nil {
		return fmt.Errorf("reading the server's fsync setting: %w", err)
	}
	if fsync == "off" {
		s.fsyncWarned.Do(func() {
			s.logger.Warn("ledgerpg: the PostgreSQL server runs with fsync=off: no commit is durable, and a crash of the database host can lose journaled attempts of requests that were sent (payonce rule 2); turn fsync on outside of tests",
				slog.String("schema", s.schema))
		})
	}
	return nil
}

// migrationLockKey derives the advisory lock key from the schema name, so
// that migrations of different schemas do not wait for each other.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("payonce/ledgerpg/migrate:" + schema))
	return int64(h.Sum64())
}
