package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/feedconsumer"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
)

// Config configures a Store. The zero value is valid.
type Config struct {
	// Schema is the PostgreSQL schema holding the payonce_ tables. Defaults
	// to "public". Any name of 1 to 63 printable ASCII characters that does
	// not start with "pg_" (reserved by PostgreSQL) is allowed: the store
	// always quotes it, so a reserved word ("user", "order") or a mixed-case
	// name ("Pay Once") means exactly that schema. In psql, quote such a
	// name as the store does: SET search_path TO "Pay Once".
	Schema string
	// DurableOutcomes makes Finish wait for its commit to reach disk like
	// every other write. By default Finish commits with
	// synchronous_commit=off: the attempt journal is always durable before
	// a request is sent, while an outcome lost in a database crash is
	// recovered by a status lookup (see ledger.Store.Finish). That saves
	// one disk flush per operation on the caller's latency path.
	DurableOutcomes bool
	// Logger receives the store's warnings (e.g. a server running with
	// fsync off, reported once by Migrate). Defaults to discarding them.
	Logger *slog.Logger
}

// Store is the PostgreSQL ledger.Store. It is safe for concurrent use by
// many goroutines and, through the database, by many processes sharing one
// schema.
type Store struct {
	pool       *pgxpool.Pool
	schema     string
	q          queries
	migrations []Migration
	// lazyOutcomes commits Finish with synchronous_commit=off.
	lazyOutcomes bool
	logger       *slog.Logger
	// fsyncWarned makes the fsync=off warning appear once per Store.
	fsyncWarned sync.Once
	// revs are the store's last writes, for the one-statement writes
	// (revision.go).
	revs sqlstore.Copies[revision]
	// prepareFirst: the pool's connections cache prepared statements
	// (pgx's default mode), so oneTrip prepares its statements before it
	// measures the lease. Read once: the connection's Config() is a copy
	// (four allocations) on every call.
	prepareFirst bool
	// feedSignal nudges this process's feed consumers (Consumer) after a
	// write that may have added a feed entry.
	feedSignal feedconsumer.Signal

	// Test hooks (export_test.go); nil or empty in production.
	//
	// fsyncQuery replaces the query reading the server's fsync setting.
	fsyncQuery string
	// probeSQL, when set, runs inside every transaction that writes, just
	// before its COMMIT, and onProbe receives the method and the single text
	// value it returned.
	probeSQL string
	onProbe  func(method, value string)
	// afterCleanupBatch runs inside each Cleanup batch transaction after its
	// deletes and tombstones are written, before its COMMIT.
	afterCleanupBatch func()
	// longWayOnly turns the one-statement writes off, so that tests can
	// compare what both ways write.
	longWayOnly bool
}

var _ ledger.Store = (*Store)(nil)

// New returns a Store using pool (owned by the caller, who closes it) and the
// tables of cfg.Schema. It does not touch the database: call Migrate before
// first use.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, &ledger.ValidationError{Field: "pool", Problem: "must not be nil: open one with pgxpool.New"}
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if err := checkSchemaName(cfg.Schema); err != nil {
		return nil, err
	}
	migrations, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{pool: pool, schema: cfg.Schema, q: newQueries(cfg.Schema, !cfg.DurableOutcomes), migrations: migrations,
		lazyOutcomes: !cfg.DurableOutcomes, logger: logger,
		prepareFirst: pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement}, nil
}

// Schema is the schema the store's tables live in.
func (s *Store) Schema() string { return s.schema }

// checkSchemaName accepts the names PostgreSQL lets a user create and keeps
// byte for byte. Every statement quotes the name (queries.schema,
// pgx.Identifier), so reserved words and mixed case are fine; a name longer
// than 63 bytes would be truncated by the server into another schema than
// the one the store reports, and non-ASCII text depends on the server's
// encoding.
func checkSchemaName(name string) error {
	ok := len(name) <= 63 && utf8.ValidString(name) && !strings.HasPrefix(name, "pg_")
	for _, c := range name {
		ok = ok && c >= ' ' && c <= '~'
	}
	if !ok {
		return &ledger.ValidationError{
			Field:   "Config.Schema",
			Problem: fmt.Sprintf("%q is not allowed: use 1 to 63 printable ASCII characters, not starting with pg_ (reserved by PostgreSQL)", name),
		}
	}
	return nil
}

// Every transaction the store opens runs under READ COMMITTED, whatever the
// server's default_transaction_isolation: its correctness arguments (a
// statement after a row lock or a conflicting insert sees what the other
// transaction committed; tombstones are checked in a later statement than
// the insert) hold at that level.
const beginTx = "BEGIN ISOLATION LEVEL READ COMMITTED"

// syncOn makes the transaction's commit wait for its WAL flush (and for
// synchronous standbys, when configured), whatever the role's or database's
// synchronous_commit default is: rule 2 needs the attempt journal durable
// before the request is sent, and a default of off (or local, remote_write)
// would let a crash or a failover forget an attempt that was sent.
// remote_apply, stronger than on, is kept.
const syncOn = `SELECT set_config('synchronous_commit',
	CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true)`

// syncOff is the lazily durable Finish's setting (Config.DurableOutcomes).
const syncOff = `SELECT set_config('synchronous_commit', 'off', true)`

// syncOnExpr and syncOffExpr are syncOn and syncOff as expressions, for the
// statements that set their implicit transaction's synchronous_commit
// themselves. A local setting lasts until the transaction ends and is read
// when it commits, so it holds for the statement's own commit and leaves
// the session as it was.
var (
	syncOnExpr  = strings.TrimPrefix(syncOn, "SELECT ")
	syncOffExpr = strings.TrimPrefix(syncOff, "SELECT ")
)

// durableTx opens the store's durable write transactions in one round trip
// (a simple-protocol query of two statements).
var durableTx = pgx.TxOptions{BeginQuery: beginTx + "; " + syncOn}

// durable runs fn in a durable write transaction (READ COMMITTED,
// synchronous_commit at least on) and commits it when fn returns nil.
func (s *Store) durable(ctx context.Context, method string, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, durableTx, func(tx pgx.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if s.probeSQL == "" {
			return nil
		}
		var v string
		if err := tx.QueryRow(ctx, s.probeSQL).Scan(&v); err != nil {
			return err
		}
		s.onProbe(method, v)
		return nil
	})
}

// queueProbe adds the test probe to a batch that commits, before its COMMIT.
func (s *Store) queueProbe(b *pgx.Batch, method string) {
	if s.probeSQL == "" {
		return
	}
	b.Queue(s.probeSQL).QueryRow(func(row pgx.Row) error {
		var v string
		if err := row.Scan(&v); err != nil {
			return err
		}
		s.onProbe(method, v)
		return nil
	})
}

// keyConstraint is the unique constraint on payonce_operations.key (named in
// migrations/001_initial.up.sql).
const keyConstraint = "payonce_operations_key_key"

// eventsKeyConstraint is the primary key of payonce_events (named in
// migrations/002_events.up.sql).
const eventsKeyConstraint = "payonce_events_pkey"

// translate turns driver errors into the ledger's sentinels where one
// applies and adds the method name. Other database errors stay wrapped so
// that callers can still see, e.g., a cancelled context.
func translate(method string, err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505" && pgErr.ConstraintName == keyConstraint:
			return fmt.Errorf("ledgerpg: %s: %w: %s", method, ledger.ErrKeyConflict, pgErr.Detail)
		case pgErr.Code == "22021" || pgErr.Code == "22P05":
			// PostgreSQL text cannot hold NUL bytes or invalid UTF-8;
			// refuse the value rather than store something else.
			return fmt.Errorf("ledgerpg: %s: %w", method, &ledger.ValidationError{
				Field:   "text value",
				Problem: "contains a NUL byte or invalid UTF-8, which PostgreSQL text cannot store: " + pgErr.Message,
			})
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("ledgerpg: %s: %w", method, ledger.ErrNotFound)
	}
	return fmt.Errorf("ledgerpg: %s: %w", method, err)
}

// lock reads the operation and locks its row until the transaction ends.
func (s *Store) lock(ctx context.Context, tx pgx.Tx, id string) (ledger.Operation, error) {
	op, err := scanOp(tx.QueryRow(ctx, s.q.lockOp, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Operation{}, fmt.Errorf("%w: %q", ledger.ErrNotFound, id)
	}
	return op, err
}

// save writes op's changed columns, inserts the attempt when a is set and
// the events evs stamped at, in one round trip. The caller holds op's row
// lock.
func (s *Store) save(ctx context.Context, tx pgx.Tx, op ledger.Operation, a *ledger.Attempt, at time.Time, evs []ledger.NewEvent) error {
	b := &pgx.Batch{}
	b.Queue(s.q.save, saveArgs(op)...)
	if a != nil {
		b.Queue(s.q.insertAttempt, a.OperationID, a.Number, a.Key, a.StartedAt)
	}
	queueEvents(b, &s.q, op.ID, at, evs)
	return tx.SendBatch(ctx, b).Close()
}
