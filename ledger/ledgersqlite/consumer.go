package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/feedconsumer"
)

// Consumer applies the settlement feed to the service's own tables: a
// handler called with each entry inside a transaction that also moves the
// consumer's cursor (table payonce_feed_consumers, migration 11), so that
// the effect and the mark commit together. Across crashes, restarts and
// processes sharing the file every entry takes effect exactly once: a page
// whose transaction did not commit is applied again, and a page whose
// transaction committed is never applied again. Create it with
// NewConsumer; run one per process (processes of one service pass the
// same name and share the cursor).
//
// The consumer passes every entry, whatever its status: pending (an
// operation created, or sent back out of review by an operator's resend),
// succeeded, failed and manual_review. The handler decides what each means
// for its order; see "The settlement feed" in package ledger for why a
// consumer must not follow only the settled statuses.
//
// A handler error rolls the whole page back, and the page is tried again
// after a backoff (logged to ConsumerOptions.Logger). An entry that the
// handler always refuses therefore blocks the consumer, by design: the
// entries after it are not applied before it, and it is never skipped. Fix
// the handler (or the data it needs) and the consumer moves on.
type Consumer struct {
	loop *feedconsumer.Loop
}

// NewConsumer returns the consumer name of store's feed (created at the
// start of the feed the first time it runs, then kept in the database
// file). handle is called for each entry, in feed order, with the
// transaction in which the cursor moves: write the entry's effect through
// tx, and do not commit or roll tx back. The transaction holds the file's
// write lock (and the Store's, so the Store's own writes wait for it):
// keep it short, and do not call the Store's own writes from handle: they
// would wait for this transaction, which waits for handle. It commits at
// the Store's synchronous level.
//
// A consumer that is no longer run keeps its row, and its line in
// Stats.Consumers with a growing lag, until an operator deletes it
// (DELETE FROM payonce_feed_consumers WHERE name = '...'). Renaming a
// consumer starts the new name at the beginning of the feed.
//
// Errors: a *ledger.ValidationError for a nil store or handle, a name that
// is not 1 to ledger.MaxConsumerNameLen letters, digits, '.', '_' or '-',
// or options out of range.
func NewConsumer(store *Store, name string, handle func(ctx context.Context, tx *sql.Tx, e ledger.FeedEntry) error, opts ledger.ConsumerOptions) (*Consumer, error) {
	if store == nil {
		return nil, &ledger.ValidationError{Field: "store", Problem: "must not be nil: pass the *ledgersqlite.Store whose feed to consume"}
	}
	if handle == nil {
		return nil, &ledger.ValidationError{Field: "handle", Problem: "must not be nil: pass the function that applies an entry in the transaction"}
	}
	if err := feedconsumer.ValidateName(name); err != nil {
		return nil, err
	}
	op := "feed consumer " + name
	loop, err := feedconsumer.New(name, opts, feedconsumer.Binding{
		Cursor: func(ctx context.Context, now time.Time) (ledger.FeedCursor, error) {
			var c string
			err := store.read(ctx, func(conn *sql.Conn) error {
				return conn.QueryRowContext(ctx, `SELECT cursor FROM payonce_feed_consumers WHERE name = ?1`, name).Scan(&c)
			})
			if errors.Is(err, sql.ErrNoRows) {
				err = store.write(ctx, func(conn *sql.Conn) error {
					_, err := conn.ExecContext(ctx, `INSERT INTO payonce_feed_consumers (name, cursor, updated_at) VALUES (?1, '', ?2)
						ON CONFLICT (name) DO NOTHING`, name, micros(now))
					return err
				})
			}
			if err != nil {
				return "", fail(op, err)
			}
			return ledger.FeedCursor(c), nil
		},
		Feed: store.Feed,
		Apply: func(ctx context.Context, old ledger.FeedCursor, page, apply []ledger.FeedEntry, now time.Time) error {
			return store.applyPage(ctx, name, old, page[len(page)-1], apply, now, handle)
		},
		Signal: &store.feedSignal,
	})
	if err != nil {
		return nil, err
	}
	return &Consumer{loop: loop}, nil
}

// applyPage is one page's transaction: the compare-and-set of the cursor
// (its first statement, a write, so the transaction takes the file's write
// lock before it reads anything: no lock upgrade to fail with SQLITE_BUSY),
// then the handler for each entry, then COMMIT. It queues on the Store's
// write semaphore like every write of the Store, and uses a *sql.Tx (not
// the Store's BEGIN IMMEDIATE) because that is what the handler is given.
func (s *Store) applyPage(ctx context.Context, name string, old ledger.FeedCursor, last ledger.FeedEntry, apply []ledger.FeedEntry, now time.Time,
	handle func(ctx context.Context, tx *sql.Tx, e ledger.FeedEntry) error) error {
	op := "feed consumer " + name
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return fail(op, ctx.Err())
	}
	defer func() { <-s.writeSem }()
	l, err := s.conn(ctx, s.writeLevel(false))
	if err != nil {
		return fail(op, err)
	}
	defer l.release()
	tx, err := l.Conn.BeginTx(ctx, nil)
	if err != nil {
		return fail(op, err)
	}
	defer func() { _ = tx.Rollback() }() // after a COMMIT: sql.ErrTxDone, ignored
	res, err := tx.ExecContext(ctx, `UPDATE payonce_feed_consumers SET cursor = ?3, cursor_at = ?4, updated_at = ?5
		WHERE name = ?1 AND cursor = ?2`, name, string(old), string(last.Cursor), micros(last.At), micros(now))
	if err != nil {
		return fail(op, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if err != nil {
			return fail(op, err)
		}
		return feedconsumer.ErrMoved
	}
	for _, e := range apply {
		if err := handle(ctx, tx, e); err != nil {
			return fmt.Errorf("ledgersqlite: feed consumer %q: handler refused entry %s (operation %s, to %s): %w", name, e.Cursor, e.OperationID, e.To, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(op, err)
	}
	s.commits.Add(1)
	return nil
}

// Name is the consumer's name.
func (c *Consumer) Name() string { return c.loop.Name() }

// Run applies the feed until ctx ends: a page at a time, then it waits for
// ConsumerOptions.Poll or a nudge (Nudge, or a write of this process's
// Store that may have added an entry: Begin, CreateOrGet, StartAttempt,
// Finish, Resolve, RecordWebhook). When ctx ends it makes a final pass,
// bounded by ConsumerOptions.FinalPass, so that what committed up to then
// is applied, and returns nil, or the final pass's error. Failures before
// that are logged and retried, never returned. One Run at a time per
// Consumer.
func (c *Consumer) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// Nudge makes a waiting Run read the feed now (e.g. after a commit of a
// caller's transaction holding CreateOrGetTx). It never blocks.
func (c *Consumer) Nudge() { c.loop.Nudge() }
