package ledgersqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/feedconsumer"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
)

// Compile-time proof that *Store implements ledger.Store.
var _ ledger.Store = (*Store)(nil)

// DefaultBusyTimeout is how long a connection waits for a lock held by
// another process sharing the database file before failing with SQLITE_BUSY.
// Inside one Store writers never wait on each other in SQLite: they queue on
// the Store's own lock first.
const DefaultBusyTimeout = 5 * time.Second

// defaultMaxOpenConns bounds the pool Open creates: enough for concurrent
// readers under WAL; writers use one connection at a time.
const defaultMaxOpenConns = 8

// Store is a ledger.Store on an SQLite database file; create it with Open or
// New. It is safe for concurrent use by many goroutines, and several
// processes may share one file (each with its own Store): write transactions
// are serialized inside the Store and start with BEGIN IMMEDIATE, so they
// never fail with SQLITE_BUSY because of each other (another process's
// writer is waited for, up to the busy timeout).
type Store struct {
	db     *sql.DB
	ownsDB bool

	// writeSem serializes write transactions within this Store (a one-slot
	// semaphore rather than a sync.Mutex so a waiter can give up when its
	// context ends). SQLite allows one writer per file anyway; queueing here
	// instead of in SQLite's busy handler means goroutines of one process
	// never see SQLITE_BUSY.
	writeSem chan struct{}

	// busyTimeoutMS, when non-zero, is set as busy_timeout on every
	// connection while the Store uses it, when the Store did not open the
	// pool itself (New): the caller's DSN may lack a busy timeout.
	busyTimeoutMS int64
	// busyTimeoutSQL sets busyTimeoutMS, built once in New.
	busyTimeoutSQL string

	// feedSignal nudges this process's feed consumers (Consumer) after a
	// write that may have added a feed entry.
	feedSignal feedconsumer.Signal

	// commits counts the COMMITs this Store issued (for tests and benchmarks).
	commits atomic.Int64

	// revs holds the Store's copies of its last writes, on which Finish
	// writes without reading the row first (revision.go).
	revs sqlstore.Copies[revision]
	// fastFinishes counts the Finishes written on a copy (for tests).
	fastFinishes atomic.Int64
	// longWayOnly turns the writes on a copy off, so that tests can
	// compare them with the long way.
	longWayOnly bool

	synchronous Synchronous
	// lazyOutcomes commits Finish with synchronous=NORMAL; see
	// Config.DurableOutcomes.
	lazyOutcomes bool
}

// Synchronous is SQLite's PRAGMA synchronous setting for the Store's writes.
type Synchronous string

const (
	// SynchronousFull (the default) syncs the write-ahead log on every
	// commit: a committed attempt survives a power loss. Rule 2 says an
	// attempt is durable before its request is sent, so this is the safe
	// setting.
	SynchronousFull Synchronous = "FULL"
	// SynchronousNormal syncs only at checkpoints: commits are faster and
	// survive a crash of the process, but the last commits may be lost on a
	// power loss or OS crash, after which the service could send a request
	// whose attempt the ledger no longer shows. Use it only where the host
	// cannot lose power (or the risk is accepted).
	SynchronousNormal Synchronous = "NORMAL"
)

// Config configures Open and New. The zero value is valid and gives the
// defaults: DefaultBusyTimeout, SynchronousFull and lazily durable outcomes.
// There is no Logger (unlike ledgerpg.Config): the store has no warnings to
// report; every problem is returned as an error.
type Config struct {
	// BusyTimeout is how long a connection waits for a lock held by another
	// process before giving up. Zero means DefaultBusyTimeout; values below
	// one millisecond (negative ones included) are raised to one
	// millisecond. It cannot be switched off: with no wait at all, every
	// write would fail with SQLITE_BUSY whenever another process sharing the
	// file held the write lock even for a moment.
	BusyTimeout time.Duration
	// Synchronous sets PRAGMA synchronous for the Store's writes. Empty means
	// SynchronousFull; see SynchronousNormal for the trade-off. OFF is not
	// offered: rule 2 needs a started attempt on disk before its request is
	// sent, which synchronous=OFF never guarantees.
	Synchronous Synchronous
	// DurableOutcomes makes Finish sync to disk like every other write. By
	// default, with SynchronousFull, Finish commits with synchronous=NORMAL:
	// the attempt journal is always synced before a request is sent, while
	// an outcome lost to a power cut is recovered by a status lookup (see
	// ledger.Store.Finish). That saves one fsync per operation on the
	// caller's latency path; the outcome reaches the disk with the next
	// synced commit.
	DurableOutcomes bool
}

// withDefaults returns cfg with its zero fields set to the defaults, or an
// error for a setting the store does not accept.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.BusyTimeout == 0 {
		cfg.BusyTimeout = DefaultBusyTimeout
	}
	if cfg.BusyTimeout < time.Millisecond {
		cfg.BusyTimeout = time.Millisecond
	}
	if cfg.Synchronous == "" {
		cfg.Synchronous = SynchronousFull
	}
	switch cfg.Synchronous {
	case SynchronousFull, SynchronousNormal:
	default:
		return cfg, &ledger.ValidationError{Field: "Synchronous", Problem: fmt.Sprintf("must be FULL or NORMAL, got %q", cfg.Synchronous)}
	}
	return cfg, nil
}

// Open opens (creating if needed) the SQLite database file at path with the
// settings the ledger relies on: WAL journal (readers do not block the
// writer), a busy timeout for other processes, foreign keys on, and
// synchronous=FULL unless cfg says otherwise. It does not create the
// schema: call Migrate. Close closes the database.
func Open(path string, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("ledgersqlite: open: %w", err)
	}
	if path == "" {
		return nil, fmt.Errorf("ledgersqlite: open: %w", &ledger.ValidationError{Field: "path", Problem: "must name a database file"})
	}
	dsn, err := fileDSN(path, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledgersqlite: open %s: %w", path, err)
	}
	connector, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("ledgersqlite: open %s: %w", path, err)
	}
	// The pool is the Store's own: its connections keep their prepared
	// statements (see cachingConn).
	db := sql.OpenDB(cachingConnector{inner: connector})
	db.SetMaxOpenConns(defaultMaxOpenConns)
	db.SetMaxIdleConns(defaultMaxOpenConns)
	// One connection first: it switches the file to WAL before a pool of
	// connections races to do the same.
	var mode string
	if err := db.QueryRowContext(context.Background(), "PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledgersqlite: open %s: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		db.Close()
		return nil, fmt.Errorf("ledgersqlite: open %s: journal mode is %q, want wal (is the file on a filesystem without shared memory?)", path, mode)
	}
	// synchronous is set by the DSN on every connection and kept there
	// while idle (see conn): a lazy Finish lowers it on its connection for
	// its own transaction only.
	return &Store{db: db, ownsDB: true, writeSem: make(chan struct{}, 1),
		synchronous: cfg.Synchronous, lazyOutcomes: !cfg.DurableOutcomes}, nil
}

// fileDSN builds a modernc.org/sqlite URI for path. Every connection of the
// pool runs these pragmas when it is opened, busy_timeout first:
//   - busy_timeout: another process holding the write lock is waited for;
//   - foreign_keys: attempts cannot outlive their operation;
//   - journal_mode=WAL: reads never wait for the writer and vice versa;
//   - synchronous=FULL (default): under WAL, NORMAL may lose the last
//     commits on power loss, and rule 2 needs a started attempt to be on disk
//     before its request leaves, or a restarted service would not know it
//     may have been sent.
func fileDSN(path string, cfg Config) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	abs = filepath.ToSlash(abs)
	if !strings.HasPrefix(abs, "/") {
		abs = "/" + abs // Windows drive letters: file:/C:/...
	}
	u := url.URL{Scheme: "file", Path: abs}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+string(cfg.Synchronous)+")")
	return u.String() + "?" + q.Encode(), nil
}

// New returns a Store on a database the caller opened with the
// modernc.org/sqlite driver (driver name "sqlite"). The caller keeps
// ownership: Close does not close db. While the Store uses a connection it
// sets busy_timeout on it (and synchronous on the connections it writes
// with), since the caller's DSN may not, and it puts back what it changed
// before the connection returns to the pool: the caller's own transactions
// on db (its CreateOrGetTx transaction, its business data) run with the
// settings the caller chose. It does not change the journal mode, so open
// the file in WAL mode (PRAGMA journal_mode=WAL) to let reads run while a
// write is in progress. db must allow at least one open connection beyond
// those the caller holds. The Store's statements are not kept prepared on
// the caller's connections (see cachingConn): they run as with Open, only
// parsed again each time. Call Migrate to create the schema.
func New(db *sql.DB, cfg Config) (*Store, error) {
	if db == nil {
		return nil, fmt.Errorf("ledgersqlite: new: %w", &ledger.ValidationError{Field: "db", Problem: "must not be nil"})
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("ledgersqlite: new: %w", err)
	}
	return &Store{
		db:             db,
		writeSem:       make(chan struct{}, 1),
		busyTimeoutMS:  cfg.BusyTimeout.Milliseconds(),
		busyTimeoutSQL: pragmaSet("busy_timeout", cfg.BusyTimeout.Milliseconds()),
		synchronous:    cfg.Synchronous,
		lazyOutcomes:   !cfg.DurableOutcomes,
	}, nil
}

// Close closes the database if Open opened it; with New it does nothing (the
// caller owns the *sql.DB).
func (s *Store) Close() error {
	if !s.ownsDB {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("ledgersqlite: close: %w", err)
	}
	return nil
}

// synchronousLevels are PRAGMA synchronous's values as it reads them back.
var synchronousLevels = map[Synchronous]int64{SynchronousNormal: 1, SynchronousFull: 2}

// conn takes a connection from the pool, ready for a read (level 0) or a
// write committed at PRAGMA synchronous level (see writeLevel): the busy
// timeout (New) and, for a write, synchronous at that level. Its release
// puts back every setting conn changed and returns the connection to the
// pool; call it on every path (defer it) once the connection is outside
// any transaction.
//
// Why settings are put back: the pool is shared with the caller under New.
// A connection left with synchronous=NORMAL by a lazy Finish (or with the
// Store's level instead of the caller's EXTRA) would run the caller's own
// transactions (its CreateOrGetTx transaction, its business data) with less
// durability than the caller configured.
//
// Under Open the pool is the Store's own and every connection of it is at
// the Store's level while idle: the DSN sets it when the connection opens,
// and release puts back any change (or discards the connection). conn then
// knows the level without asking, and a write at the Store's level runs no
// PRAGMA at all. Under New the caller may have changed it, so it is read.
func (s *Store) conn(ctx context.Context, level int64) (*leasedConn, error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	l := &leasedConn{Conn: c, ctx: ctx}
	if s.busyTimeoutMS > 0 {
		err = l.set("busy_timeout", -1, s.busyTimeoutMS, s.busyTimeoutSQL)
	}
	if err == nil && level != 0 {
		have := int64(-1)
		if s.ownsDB {
			have = synchronousLevels[s.synchronous]
		}
		err = l.set("synchronous", have, level, pragmaSet("synchronous", level))
	}
	if err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// writeLevel is the PRAGMA synchronous level of a write: the Store's, or
// NORMAL for a lazy one when the Store's level is FULL.
func (s *Store) writeLevel(lazy bool) int64 {
	if lazy && s.synchronous == SynchronousFull {
		return synchronousLevels[SynchronousNormal]
	}
	return synchronousLevels[s.synchronous]
}

// leasedConn is a connection conn took from the pool, with the statements
// that put back what conn changed on it.
type leasedConn struct {
	*sql.Conn
	ctx     context.Context
	restore [2]string // at most busy_timeout and synchronous
	n       int
}

// set makes pragma want on the connection with setSQL; have is its current
// value, or -1 to read it.
func (l *leasedConn) set(pragma string, have, want int64, setSQL string) error {
	if have < 0 {
		if err := l.QueryRowContext(l.ctx, "PRAGMA "+pragma).Scan(&have); err != nil {
			return err
		}
	}
	if have == want {
		return nil
	}
	if _, err := l.ExecContext(l.ctx, setSQL); err != nil {
		return err
	}
	l.restore[l.n] = pragmaSet(pragma, have)
	l.n++
	return nil
}

// release puts back every setting conn changed and returns the connection
// to the pool.
func (l *leasedConn) release() {
	if l.n > 0 {
		ctx := context.WithoutCancel(l.ctx)
		for i := l.n - 1; i >= 0; i-- {
			if _, err := l.ExecContext(ctx, l.restore[i]); err != nil {
				// Never hand the pool a connection with settings its owner
				// did not choose: discard it.
				_ = l.Raw(func(any) error { return driver.ErrBadConn })
				break
			}
		}
	}
	_ = l.Close()
}

// pragmaSet is the statement setting pragma to v. The ones a lazy Finish
// runs are constants, and New builds its busy_timeout statement once, so
// the hot path builds no SQL text.
func pragmaSet(pragma string, v int64) string {
	if pragma == "synchronous" {
		switch v {
		case 1:
			return "PRAGMA synchronous = 1"
		case 2:
			return "PRAGMA synchronous = 2"
		}
	}
	return fmt.Sprintf("PRAGMA %s = %d", pragma, v)
}

// quietTx returns the querier for the statements of a write transaction on
// c, after its BEGIN IMMEDIATE: each statement runs only while ctx is live
// (once ctx has ended, the next statement fails with ctx's error, and the
// transaction is rolled back, as before), but the driver is handed ctx
// without its cancellation.
//
// Why: for a cancellable context the driver starts a goroutine per
// statement to interrupt it, and database/sql one per row set, several
// allocations and a goroutine for each statement of the fast path. Inside
// the transaction nothing waits (the write lock is held; under WAL reads
// never wait), and these statements read or write a few rows by key, so
// there is nothing to interrupt. The waits (BEGIN IMMEDIATE, for the lock;
// the connection from the pool) keep ctx.
//
// The ctx argument of its methods is ignored: every statement of the
// transaction runs under the transaction's ctx.
func quietTx(ctx context.Context, c *sql.Conn) querier {
	return &txQuerier{c: c, ctx: ctx, quiet: context.WithoutCancel(ctx)}
}

type txQuerier struct {
	c          *sql.Conn
	ctx, quiet context.Context
}

func (t *txQuerier) use() context.Context {
	if t.ctx.Err() != nil {
		return t.ctx // the driver fails the statement with ctx's error
	}
	return t.quiet
}

func (t *txQuerier) QueryRowContext(_ context.Context, query string, args ...any) *sql.Row {
	return t.c.QueryRowContext(t.use(), query, args...)
}

func (t *txQuerier) QueryContext(_ context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.c.QueryContext(t.use(), query, args...)
}

func (t *txQuerier) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	return t.c.ExecContext(t.use(), query, args...)
}

// read runs fn on one connection of the pool. Under WAL, reads run
// concurrently with each other and with the one writer.
func (s *Store) read(ctx context.Context, fn func(c *sql.Conn) error) error {
	l, err := s.conn(ctx, 0)
	if err != nil {
		return err
	}
	defer l.release()
	return fn(l.Conn)
}

// write runs fn in one write transaction and commits it, or rolls it back
// when fn returns an error (so every method is atomic).
//
// Why BEGIN IMMEDIATE on a dedicated connection: a deferred transaction that
// reads and then writes must upgrade its lock, and under WAL that upgrade
// fails with SQLITE_BUSY at once (no busy handler can help) when another
// connection committed in between. Taking the write lock at BEGIN means the
// only wait is at BEGIN, where busy_timeout applies, and the rows read inside
// are the rows written.
func (s *Store) write(ctx context.Context, fn func(c *sql.Conn) error) error {
	return s.writeTx(ctx, false, fn)
}

// writeTx is write; lazy commits with synchronous=NORMAL (durable at the
// next FULL commit, which flushes the whole WAL up to it) when the Store
// keeps full durability for everything else. See Config.DurableOutcomes.
func (s *Store) writeTx(ctx context.Context, lazy bool, fn func(c *sql.Conn) error) error {
	return s.writeAt(ctx, s.writeLevel(lazy), fn)
}

// writeAt is write, committed at PRAGMA synchronous level (1 NORMAL, 2
// FULL) whatever the Store's own.
func (s *Store) writeAt(ctx context.Context, level int64, fn func(c *sql.Conn) error) error {
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeSem }()

	l, err := s.conn(ctx, level)
	if err != nil {
		return err
	}
	c := l.Conn
	// Deferred first, so it runs last: the settings are put back once the
	// transaction has ended (committed, or rolled back by the defer below).
	defer l.release()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	// database/sql does not know about this transaction: make sure the
	// connection never goes back to the pool inside it, even on a panic.
	committed := false
	defer func() {
		if !committed {
			rollback(ctx, c)
		}
	}()
	if err := fn(c); err != nil {
		return err
	}
	// Once the work is done, commit even if ctx has just ended: abandoning
	// it now would only turn a finished write into a spurious failure.
	if _, err := c.ExecContext(context.WithoutCancel(ctx), "COMMIT"); err != nil {
		return err
	}
	committed = true
	s.commits.Add(1)
	return nil
}

// rollback ends the transaction on c. If that fails (an interrupted statement
// may already have ended it, or the connection is broken), the connection is
// discarded rather than returned to the pool in an unknown state.
func rollback(ctx context.Context, c *sql.Conn) {
	if _, err := c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// fail wraps an error leaving method op, translating driver errors that have
// a ledger meaning. Errors already carrying a ledger sentinel pass through
// with the prefix.
func fail(op string, err error) error {
	if isKeyConflict(err) {
		return fmt.Errorf("ledgersqlite: %s: %w (%v)", op, ledger.ErrKeyConflict, err)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("ledgersqlite: %s: %w", op, ledger.ErrNotFound)
	}
	return fmt.Errorf("ledgersqlite: %s: %w", op, err)
}

// isKeyConflict reports a unique violation on payonce_operations.key:
// another operation holds the key.
func isKeyConflict(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return strings.Contains(se.Error(), "payonce_operations.key")
	}
	return false
}
