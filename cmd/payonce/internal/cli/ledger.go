package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// DefaultLedger is the ledger used when neither --ledger nor PAYONCE_LEDGER
// is set.
const DefaultLedger = "sqlite:payonce.db"

// connectTimeout bounds reaching PostgreSQL when a command starts.
const connectTimeout = 10 * time.Second

// ledgerFlags are the flags that choose the ledger.
type ledgerFlags struct {
	f           *cmdFlags
	dsn, schema string
}

// addLedgerFlags defines --ledger and --schema, and --json (help
// jsonUsage) into asJSON: every command that opens the ledger has the three,
// but a server, which prints no report, passes a nil asJSON.
func addLedgerFlags(f *cmdFlags, asJSON *bool, jsonUsage string) *ledgerFlags {
	if asJSON != nil {
		f.BoolVar(asJSON, "json", false, jsonUsage)
	}
	lf := &ledgerFlags{f: f}
	f.StringVar(&lf.dsn, "ledger", DefaultLedger,
		"the ledger `DSN`: postgres://... (PostgreSQL), sqlite:PATH or a file path (SQLite);\nor PAYONCE_LEDGER")
	f.StringVar(&lf.schema, "schema", "public", "PostgreSQL schema `NAME` of the ledger's tables; or PAYONCE_SCHEMA")
	return lf
}

// resolve applies the environment to the flags not given.
func (lf *ledgerFlags) resolve(a *App) (dsn, schema string) {
	dsn, schema = lf.dsn, lf.schema
	if !lf.f.wasSet("ledger") {
		if v := a.Env("PAYONCE_LEDGER"); v != "" {
			dsn = v
		}
	}
	if !lf.f.wasSet("schema") {
		if v := a.Env("PAYONCE_SCHEMA"); v != "" {
			schema = v
		}
	}
	return dsn, schema
}

// ledgerSpec is a parsed --ledger value.
type ledgerSpec struct {
	postgres bool
	url      string // PostgreSQL URL
	path     string // SQLite file
}

// parseLedger reads a --ledger value. Errors are usage errors and never
// contain a password.
func parseLedger(s string) (ledgerSpec, error) {
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return ledgerSpec{postgres: true, url: s}, nil
	case strings.HasPrefix(lower, "sqlite:"):
		p := s[len("sqlite:"):]
		p = strings.TrimPrefix(p, "//") // sqlite:///abs/path and sqlite://rel/path
		if p == "" {
			return ledgerSpec{}, usageErrorf("--ledger %q names no file: use sqlite:PATH, e.g. sqlite:payonce.db", s)
		}
		return ledgerSpec{path: p}, nil
	case s == "":
		return ledgerSpec{}, usageErrorf("--ledger is empty: use a postgres:// URL, sqlite:PATH or a file path")
	}
	if i := strings.Index(s, "://"); i > 0 {
		return ledgerSpec{}, usageErrorf("--ledger: unsupported scheme %q: use postgres://user@host:5432/db, sqlite:PATH or a file path",
			s[:i])
	}
	return ledgerSpec{path: s}, nil
}

// redactURL hides the password of a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a PostgreSQL URL that does not parse)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// ledgerConn is an open ledger and what closes it.
type ledgerConn struct {
	store ledger.Store
	desc  string // for messages, password redacted
	pg    *ledgerpg.Store
	pool  *pgxpool.Pool
	lite  *ledgersqlite.Store
	path  string
}

func (l *ledgerConn) Close() {
	if l.lite != nil {
		_ = l.lite.Close()
	}
	if l.pool != nil {
		l.pool.Close()
	}
}

// openMode says what opening a ledger may do.
type openMode int

const (
	// openExisting requires a migrated ledger and never creates a file.
	openExisting openMode = iota
	// openCreate creates the SQLite file if needed (migrate, demo).
	openCreate
)

// openLedger opens the ledger the flags and environment choose.
func (a *App) openLedger(ctx context.Context, lf *ledgerFlags, mode openMode) (*ledgerConn, error) {
	dsn, schema := lf.resolve(a)
	spec, err := parseLedger(dsn)
	if err != nil {
		return nil, err
	}
	var l *ledgerConn
	if spec.postgres {
		l, err = openPostgres(ctx, spec.url, schema)
	} else {
		l, err = openSQLite(spec.path, mode)
	}
	if err != nil {
		return nil, err
	}
	if mode == openExisting {
		if err := l.checkSchema(ctx); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

func openPostgres(ctx context.Context, rawURL, schema string) (*ledgerConn, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgconn redacts the password in its parse errors.
		return nil, usageErrorf("--ledger: cannot parse the PostgreSQL URL: %v", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	hostPort := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	desc := redactURL(rawURL)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, usageErrorf("--ledger %s: %v", desc, err)
	}
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		if ledgerUnavailable(err) {
			return nil, unavailableErrorf("ledger unavailable: cannot reach the database %s: %v (is PostgreSQL running at %s?); nothing was sent or changed",
				desc, err, hostPort)
		}
		// The server answered and refused: a wrong user, password or
		// database name, which only the configuration can fix.
		return nil, usageErrorf("cannot use the ledger database %s: %v: check the user, password and database name in --ledger", desc, err)
	}
	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	if err != nil {
		pool.Close()
		return nil, usageErrorf("--schema %q: %v", schema, err)
	}
	return &ledgerConn{store: store, desc: desc + " (schema " + schema + ")", pg: store, pool: pool}, nil
}

func openSQLite(path string, mode openMode) (*ledgerConn, error) {
	desc := "sqlite:" + path
	if mode == openExisting {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, usageErrorf("no ledger at %s: create it with \"payonce migrate --ledger %s\", or point --ledger (or PAYONCE_LEDGER) at your ledger", path, desc)
		}
	}
	if dir := filepath.Dir(path); mode == openCreate {
		if _, err := os.Stat(dir); err != nil {
			return nil, usageErrorf("--ledger %s: the directory %s does not exist", desc, dir)
		}
	}
	store, err := ledgersqlite.Open(path, ledgersqlite.Config{})
	if err != nil {
		return nil, usageErrorf("cannot open the SQLite ledger %s: %v", desc, err)
	}
	return &ledgerConn{store: store, desc: desc, lite: store, path: path}, nil
}

// ledgerUnavailable reports whether err says that the ledger's database
// could not be reached or went away: no connection, a connection that broke
// or timed out, a server shutting down or not yet accepting connections.
// Such an error is a passing condition of the infrastructure, not a mistake
// in the command line: it gets its own exit code (ExitLedgerUnavailable), so
// that a job retries later instead of an operator hunting for a bad flag.
// A refused statement or a wrong password is not unavailability.
//
// Only PostgreSQL's driver errors and network errors are recognised; the
// caller decides what the call may have sent (see callExit: an outcome that
// may have reached the provider is ExitUnknown first).
func ledgerUnavailable(err error) bool {
	var urlErr *url.Error
	if err == nil || errors.As(err, &urlErr) {
		// An HTTP request's error: the provider's network, not the
		// ledger's (a *url.Error is a net.Error too).
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// SQLSTATE class 08 is "connection exception"; 57P01 to 57P03 are
		// admin_shutdown, crash_shutdown and cannot_connect_now (the
		// server is starting or stopping). Every other code is an answer.
		// https://www.postgresql.org/docs/current/errcodes-appendix.html
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.Timeout(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// unavailableErrorf is an error of a ledger that cannot be reached:
// ExitLedgerUnavailable.
func unavailableErrorf(format string, args ...any) error {
	return &exitError{code: ExitLedgerUnavailable, err: fmt.Errorf(format, args...)}
}

// schemaVersion returns the highest migration applied and the highest this
// build knows (0 when unknown).
func (l *ledgerConn) schemaVersion(ctx context.Context) (have, want int, err error) {
	if l.lite != nil {
		have, err = l.lite.SchemaVersion(ctx)
		return have, 0, err
	}
	ms := l.pg.Migrations()
	want = ms[len(ms)-1].Version
	// The schema name is an identifier: quoted, so that a reserved word
	// (user, order) or a mixed-case name means exactly that schema.
	table := pgx.Identifier{l.pg.Schema(), "payonce_schema_migrations"}.Sanitize()
	var exists bool
	if err := l.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		return 0, want, err
	}
	if !exists {
		return 0, want, nil
	}
	err = l.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+table).Scan(&have)
	return have, want, err
}

// checkSchema refuses a ledger that was never migrated or is behind.
func (l *ledgerConn) checkSchema(ctx context.Context) error {
	have, want, err := l.schemaVersion(ctx)
	if err != nil {
		if l.pg != nil && ledgerUnavailable(err) {
			return unavailableErrorf("reading the schema version of the ledger %s: %w", l.desc, err)
		}
		return fmt.Errorf("reading the schema version of the ledger %s: %w", l.desc, err)
	}
	switch {
	case have == 0:
		return usageErrorf("the ledger %s has no payonce tables yet: run \"payonce migrate\" with the same --ledger first", l.desc)
	case want > 0 && have < want:
		return usageErrorf("the ledger %s is at schema version %d, this payonce needs %d: run \"payonce migrate\"", l.desc, have, want)
	case want > 0 && have > want:
		return usageErrorf("the ledger %s is at schema version %d, newer than this payonce knows (%d): upgrade payonce", l.desc, have, want)
	}
	return nil
}

// appliedMigration is one migration applied by migrate.
type appliedMigration struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
}

// migrate brings the schema up to date and returns what it applied and the
// resulting version.
func (l *ledgerConn) migrate(ctx context.Context) ([]appliedMigration, int, error) {
	if l.pg != nil {
		ms, err := l.pg.MigrateReport(ctx)
		if err != nil {
			return nil, 0, err
		}
		out := make([]appliedMigration, len(ms))
		for i, m := range ms {
			out[i] = appliedMigration{Version: m.Version, Name: m.Name}
		}
		all := l.pg.Migrations()
		return out, all[len(all)-1].Version, nil
	}
	before, err := l.lite.SchemaVersion(ctx)
	if err != nil {
		return nil, 0, err
	}
	if err := l.lite.Migrate(ctx); err != nil {
		return nil, 0, err
	}
	after, err := l.lite.SchemaVersion(ctx)
	if err != nil {
		return nil, 0, err
	}
	if after == before {
		return nil, after, nil
	}
	// ledgersqlite.Migrate does not say what it applied: read the names
	// it recorded.
	applied, err := sqliteMigrationsAfter(ctx, l.path, before)
	if err != nil {
		return nil, after, err
	}
	return applied, after, nil
}

// sqliteMigrationsAfter reads the migrations recorded after version v.
func sqliteMigrationsAfter(ctx context.Context, path string, v int) ([]appliedMigration, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	abs = filepath.ToSlash(abs)
	if !strings.HasPrefix(abs, "/") {
		abs = "/" + abs
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "_pragma=busy_timeout(5000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT version, name FROM payonce_schema_migrations WHERE version > ? ORDER BY version", v)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []appliedMigration
	for rows.Next() {
		var m appliedMigration
		if err := rows.Scan(&m.Version, &m.Name); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
