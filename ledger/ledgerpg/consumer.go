package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/feedconsumer"
)

// Consumer applies the settlement feed to the service's own tables: a
// handler called with each entry inside a transaction that also moves the
// consumer's cursor (table payonce_feed_consumers, migration 11), so that
// the effect and the mark commit together. Across crashes, restarts and
// replicas every entry takes effect exactly once: a page whose
// transaction did not commit is applied again, and a page whose
// transaction committed is never applied again. Create it with
// NewConsumer; run one per process (replicas of one service pass the same
// name and share the cursor).
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
// start of the feed the first time it runs, then kept in the database).
// handle is called for each entry, in feed order, with the transaction in
// which the cursor moves: write the entry's effect through tx (never
// through another connection, whose writes would commit apart from the
// cursor), and do not commit or roll tx back. The transaction runs under
// READ COMMITTED with synchronous_commit on; it holds the consumer's
// cursor row, so keep it short (no calls to other services in it).
//
// A consumer that is no longer run keeps its row, and its line in
// Stats.Consumers with a growing lag, until an operator deletes it
// (DELETE FROM payonce_feed_consumers WHERE name = '...'). Renaming a
// consumer starts the new name at the beginning of the feed.
//
// Errors: a *ledger.ValidationError for a nil store or handle, a name that
// is not 1 to ledger.MaxConsumerNameLen letters, digits, '.', '_' or '-',
// or options out of range.
func NewConsumer(store *Store, name string, handle func(ctx context.Context, tx pgx.Tx, e ledger.FeedEntry) error, opts ledger.ConsumerOptions) (*Consumer, error) {
	if store == nil {
		return nil, &ledger.ValidationError{Field: "store", Problem: "must not be nil: pass the *ledgerpg.Store whose feed to consume"}
	}
	if handle == nil {
		return nil, &ledger.ValidationError{Field: "handle", Problem: "must not be nil: pass the function that applies an entry in the transaction"}
	}
	if err := feedconsumer.ValidateName(name); err != nil {
		return nil, err
	}
	table := pgx.Identifier{store.schema, "payonce_feed_consumers"}.Sanitize()
	get := `SELECT cursor FROM ` + table + ` WHERE name = $1`
	register := `INSERT INTO ` + table + ` (name, cursor, updated_at) VALUES ($1, '', $2) ON CONFLICT (name) DO NOTHING`
	// The compare-and-set, first in the transaction: see migration 011.
	advance := `UPDATE ` + table + ` SET cursor = $3, cursor_at = $4, updated_at = $5 WHERE name = $1 AND cursor = $2`
	// apply1 is one page's transaction: the compare-and-set, then the
	// handler for each entry.
	apply1 := func(ctx context.Context, tx pgx.Tx, old ledger.FeedCursor, last ledger.FeedEntry, apply []ledger.FeedEntry, now time.Time) error {
		tag, err := tx.Exec(ctx, advance, name, string(old), string(last.Cursor), last.At, now)
		if err != nil {
			return translate("feed consumer "+name, err)
		}
		if tag.RowsAffected() != 1 {
			return feedconsumer.ErrMoved
		}
		for _, e := range apply {
			if err := handle(ctx, tx, e); err != nil {
				return fmt.Errorf("ledgerpg: feed consumer %q: handler refused entry %s (operation %s, to %s): %w", name, e.Cursor, e.OperationID, e.To, err)
			}
		}
		return nil
	}
	loop, err := feedconsumer.New(name, opts, feedconsumer.Binding{
		Cursor: func(ctx context.Context, now time.Time) (ledger.FeedCursor, error) {
			var c string
			err := store.pool.QueryRow(ctx, get, name).Scan(&c)
			if errors.Is(err, pgx.ErrNoRows) {
				_, err = store.pool.Exec(ctx, register, name, now)
			}
			if err != nil {
				return "", translate("feed consumer "+name, err)
			}
			return ledger.FeedCursor(c), nil
		},
		Feed: store.Feed,
		Apply: func(ctx context.Context, old ledger.FeedCursor, page, apply []ledger.FeedEntry, now time.Time) error {
			last := page[len(page)-1]
			var inner error // fn's own error, already worded
			err := pgx.BeginTxFunc(ctx, store.pool, durableTx, func(tx pgx.Tx) error {
				inner = apply1(ctx, tx, old, last, apply, now)
				return inner
			})
			if err != nil && inner == nil {
				return translate("feed consumer "+name, err) // BEGIN or COMMIT
			}
			return err
		},
		Signal: &store.feedSignal,
	})
	if err != nil {
		return nil, err
	}
	return &Consumer{loop: loop}, nil
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
//
// A nudge may come before the entry can be read: Feed hands an entry out
// only once every transaction of the cluster older than it has ended (its
// gap rule), so an entry behind a long transaction waits for the poll
// after that transaction ends.
func (c *Consumer) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// Nudge makes a waiting Run read the feed now (e.g. after a commit of a
// caller's transaction holding CreateOrGetTx). It never blocks.
func (c *Consumer) Nudge() { c.loop.Nudge() }
