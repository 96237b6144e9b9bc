package ledgersqlite

import (
	"context"
	"database/sql/driver"
	"errors"
)

// The statement cache of the pool Open creates. Every statement the Store
// runs (the same few texts over and over: BEGIN IMMEDIATE, the operation's
// read and write, the attempt's insert, COMMIT, ...) used to be parsed and
// planned by SQLite on every call, which was about a third of the CPU of a
// write. cachingConn keeps each text prepared on its connection and runs it
// again with new arguments.
//
// Why per connection, inside the driver connection: a prepared SQLite
// statement belongs to one connection and must be finalized before that
// connection closes. database/sql offers no prepared statement for a
// *sql.Conn (only *sql.DB, and *sql.Tx, which cannot begin with BEGIN
// IMMEDIATE on the caller's pool), and it closes connections on its own
// (a broken one, one the Store discards). Living in the connection, the
// cache is finalized exactly when the connection closes, and it is used
// only by the goroutine that holds the connection (database/sql hands a
// connection to one user at a time), so it needs no lock.
//
// With New the pool is the caller's: its connections are not ours to wrap,
// and statements run unprepared there, as before.

// maxCachedStmts bounds the statements kept per connection. The Store's
// fixed texts are far fewer; texts built per call (List's filters, a
// migration script) beyond the bound run unprepared rather than grow the
// cache.
const maxCachedStmts = 64

// cachingConnector opens connections through the modernc.org/sqlite
// connector and wraps each in a cachingConn.
type cachingConnector struct{ inner driver.Connector }

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn)
}

func (c cachingConnector) Driver() driver.Driver { return c.inner.Driver() }

// sqliteConn is what cachingConn needs of a modernc.org/sqlite connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
	driver.Pinger
}

// cachedStmt is one prepared text; busy while rows read from it are open.
type cachedStmt struct {
	exec  driver.StmtExecContext
	query driver.StmtQueryContext
	close func() error
	busy  bool
}

type cachingConn struct {
	inner sqliteConn
	stmts map[string]*cachedStmt
}

func newCachingConn(conn driver.Conn) (driver.Conn, error) {
	inner, ok := conn.(sqliteConn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("ledgersqlite: the sqlite driver's connection lacks the methods the statement cache needs")
	}
	return &cachingConn{inner: inner, stmts: make(map[string]*cachedStmt)}, nil
}

// stmt returns the cached statement for query, preparing it on first use,
// or nil when query is to run unprepared: the cache is full, or the cached
// statement is in use by rows still open (running it again would reset it
// under them).
func (c *cachingConn) stmt(ctx context.Context, query string) (*cachedStmt, error) {
	if st, ok := c.stmts[query]; ok {
		if st.busy {
			return nil, nil
		}
		return st, nil
	}
	if len(c.stmts) >= maxCachedStmts {
		return nil, nil
	}
	ds, err := c.inner.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	exec, okExec := ds.(driver.StmtExecContext)
	q, okQuery := ds.(driver.StmtQueryContext)
	if !okExec || !okQuery {
		_ = ds.Close()
		return nil, nil
	}
	st := &cachedStmt{exec: exec, query: q, close: ds.Close}
	c.stmts[query] = st
	return st, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return c.inner.ExecContext(ctx, query, args)
	}
	// The driver resets the statement after running it, on error too, so
	// it is ready for the next call.
	return st.exec.ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	st, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return c.inner.QueryContext(ctx, query, args)
	}
	rows, err := st.query.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	st.busy = true
	return &cachedRows{Rows: rows, st: st}, nil
}

// cachedRows marks its statement free again once closed (the driver resets
// a cached statement when its rows close).
type cachedRows struct {
	driver.Rows
	st *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.st.busy = false
	return err
}

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) {
	return c.inner.PrepareContext(context.Background(), query)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.inner.PrepareContext(ctx, query)
}

// Begin is required by driver.Conn; database/sql calls BeginTx.
func (c *cachingConn) Begin() (driver.Tx, error) {
	return c.inner.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.inner.BeginTx(ctx, opts)
}

func (c *cachingConn) ResetSession(ctx context.Context) error { return c.inner.ResetSession(ctx) }

func (c *cachingConn) IsValid() bool { return c.inner.IsValid() }

func (c *cachingConn) Ping(ctx context.Context) error { return c.inner.Ping(ctx) }

// Close finalizes the cached statements, then closes the connection: SQLite
// keeps a connection with unfinalized statements open (a "zombie") until
// they are finalized.
func (c *cachingConn) Close() error {
	var first error
	for q, st := range c.stmts {
		if err := st.close(); err != nil && first == nil {
			first = err
		}
		delete(c.stmts, q)
	}
	if err := c.inner.Close(); err != nil {
		return err
	}
	return first
}
