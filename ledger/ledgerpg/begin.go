package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// maxVanish bounds how often Begin and CreateOrGet start over when the
// operation they collided with was deleted (by Cleanup) before they could
// read it.
const maxVanish = 3

// errVanished: the insert found the ID taken but the row was gone when read.
var errVanished = errors.New("operation deleted concurrently")

// Begin implements ledger.Store. A new operation costs one round trip and
// one commit: the row is inserted already leased, with its first attempt
// when asked, and checked in the same trip (tombstone, lease; see
// beginNew). For an existing one that insert changes nothing, and the row is
// then read under a row lock, checked and updated in one transaction.
func (s *Store) Begin(ctx context.Context, p ledger.BeginParams) (ledger.BeginResult, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	start := time.Now() // the lease check measures the real time from here
	if err := ledgerdriver.ValidateBegin(p); err != nil {
		return ledger.BeginResult{}, err
	}
	for range maxVanish {
		res, done, err := s.beginNew(ctx, p, start)
		if err != nil || done {
			return res, translate("begin", err)
		}
		res, err = s.beginExisting(ctx, p, start)
		if !errors.Is(err, errVanished) {
			return res, translate("begin", err)
		}
	}
	return ledger.BeginResult{}, fmt.Errorf("ledgerpg: begin %q: the operation was deleted concurrently %d times; try again", p.Op.ID, maxVanish)
}

// beginNew inserts the operation in the state Begin leaves a new one in,
// unless its ID (or key) is taken, in one round trip: the insert and the
// check after it (queries.createdGuard), committed together. done is false
// when nothing was inserted (Begin goes on with beginExisting); true with
// the result when the operation was created, or when the check refused the
// insert because the ID has a tombstone (res is the tombstone, unclaimed, or
// a fingerprint mismatch) or because the lease would have lapsed
// (ErrLeaseLost).
//
// The insert can wait: on a caller's open CreateOrGetTx transaction that
// recorded the same ID and then rolls back, on a Cleanup deleting the ID, on
// a lock held on the table. Its commit is pipelined, so the lease check
// runs in the database: the lease's remaining time, measured here (after
// the connection was acquired and the statements prepared, which can wait
// too) when the trip is sent, against the time the transaction has been
// open when the check runs.
func (s *Store) beginNew(ctx context.Context, p ledger.BeginParams, start time.Time) (res ledger.BeginResult, done bool, err error) {
	// A new operation has the caller's fingerprint and no lease: the caller
	// claims it, and ApplyBegin cannot fail.
	res, err = ledgerdriver.ApplyBegin(newOperation(p.Op, ledgerdriver.UTC(p.Now)), p)
	if err != nil {
		return ledger.BeginResult{}, true, err
	}
	res.Created = true
	insert := s.q.insertOp
	if res.Attempt != nil {
		insert = s.q.insertOpWithAttempt
	}
	var (
		inserted bool
		xmin     int64
	)
	err = s.oneTrip(ctx, "begin", true, []string{insert, s.q.createdGuard}, func(b *pgx.Batch) error {
		inserted, xmin = false, 0
		remaining := p.LeaseUntil.Sub(p.Now) - time.Since(start)
		if remaining <= 0 {
			return sqlstore.LeaseGranted(p.Op.ID, p.Now, p.LeaseUntil, start)
		}
		if a := res.Attempt; a == nil {
			b.Queue(s.q.insertOp, opArgs(res.Op)...).Exec(func(tag pgconn.CommandTag) error {
				inserted = tag.RowsAffected() == 1
				return nil
			})
		} else {
			args := append(opArgs(res.Op), a.Number, a.Key, ts(a.StartedAt))
			b.Queue(s.q.insertOpWithAttempt, args...).QueryRow(func(row pgx.Row) error {
				var n int
				err := row.Scan(&n, &xmin)
				inserted = n == 1
				return err
			})
		}
		b.Queue(s.q.createdGuard, p.Op.ID, remaining.Microseconds()).QueryRow(func(row pgx.Row) error {
			var (
				sync string
				ok   int
			)
			return row.Scan(&sync, &ok)
		})
		return nil
	})
	switch {
	case isGuardFailure(err):
		return s.refused(ctx, p, start)
	case err != nil:
		return ledger.BeginResult{}, true, err
	case !inserted:
		return ledger.BeginResult{}, false, nil
	}
	if res.Attempt != nil {
		// Finish records this attempt's outcome in one statement.
		s.revs.Put(res.Op.ID, revision{op: asStored(res.Op), att: attemptAsStored(*res.Attempt), xmin: uint32(xmin)})
	}
	return res, true, nil
}

// refused is beginNew after its trip was refused by createdGuard: nothing
// was written, and one read tells whether a tombstone or the lease did it.
func (s *Store) refused(ctx context.Context, p ledger.BeginParams, start time.Time) (ledger.BeginResult, bool, error) {
	var ts tombstoneScan
	if err := s.pool.QueryRow(ctx, s.q.refusedInsert, p.Op.ID).Scan(ts.dest()...); err != nil {
		return ledger.BeginResult{}, true, err
	}
	tomb, found, err := ts.tombstone()
	switch {
	case err != nil:
		return ledger.BeginResult{}, true, err
	case found:
		// Cleanup removed this ID while the insert waited for it: answer
		// with the recorded outcome, as for any terminal operation.
		res, err := ledgerdriver.ApplyBegin(tomb.Operation(), p)
		return res, true, err
	}
	if err := sqlstore.LeaseGranted(p.Op.ID, p.Now, p.LeaseUntil, start); err != nil {
		return ledger.BeginResult{}, true, err
	}
	// Neither holds any longer (a tombstone purged since, say): the ID has
	// no row, and Begin starts over (beginExisting finds it vanished).
	return ledger.BeginResult{}, false, nil
}

// beginExisting is Begin for an ID that is already recorded (or has a
// tombstone).
func (s *Store) beginExisting(ctx context.Context, p ledger.BeginParams, start time.Time) (ledger.BeginResult, error) {
	var res ledger.BeginResult
	err := s.durable(ctx, "begin", func(tx pgx.Tx) error {
		op, err := s.lock(ctx, tx, p.Op.ID)
		if errors.Is(err, ledger.ErrNotFound) {
			// The statements after the lock see a Cleanup the lock
			// waited for: its tombstone answers, as a terminal operation.
			tomb, err := s.whyNotInserted(ctx, tx, p.Op)
			if err != nil {
				return err
			}
			res, err = ledgerdriver.ApplyBegin(tomb, p)
			return err
		}
		if err != nil {
			return err
		}
		res, err = ledgerdriver.ApplyBegin(op, p)
		if err != nil || !res.Claimed {
			return err // a terminal operation: the recorded result answers the caller
		}
		if err := s.save(ctx, tx, res.Op, res.Attempt, time.Time{}, nil); err != nil {
			return err
		}
		// The lock may have waited (a caller's open CreateOrGetTx, another
		// writer) past the end of the lease it grants.
		return sqlstore.LeaseGranted(p.Op.ID, p.Now, p.LeaseUntil, start)
	})
	switch {
	case errors.Is(err, ledger.ErrInProgress):
		return ledger.BeginResult{Op: res.Op}, err
	case err != nil:
		return ledger.BeginResult{}, err
	}
	return res, nil
}

// whyNotInserted explains an insert that did nothing although the ID has no
// operation row: Cleanup removed it (its tombstone is returned), its key
// belongs to another operation (ErrKeyConflict), or the row it collided with
// was deleted since (errVanished: try again).
func (s *Store) whyNotInserted(ctx context.Context, db querier, op ledger.NewOperation) (ledger.Operation, error) {
	var (
		taken bool
		ts    tombstoneScan
	)
	if err := db.QueryRow(ctx, s.q.whyNotInserted, op.ID, op.Key).Scan(append([]any{&taken}, ts.dest()...)...); err != nil {
		return ledger.Operation{}, err
	}
	tomb, found, err := ts.tombstone()
	switch {
	case err != nil:
		return ledger.Operation{}, err
	case found:
		return tomb.Operation(), nil
	case taken:
		return ledger.Operation{}, fmt.Errorf("%w: key %q of new operation %q", ledger.ErrKeyConflict, op.Key, op.ID)
	}
	return ledger.Operation{}, errVanished
}

// oneTrip runs what queue adds (with result callbacks) as one pipeline:
// one round trip, one commit. With explicit (Begin), the pipeline is BEGIN
// ISOLATION LEVEL READ COMMITTED, the statements, COMMIT. Without it (the
// one-statement writes), the single statement is sent alone and is its own
// transaction. Either way the statements set the transaction's
// synchronous_commit themselves (Begin's in createdGuard): one statement
// fewer per trip than a SET of its own. On an error the transaction is rolled back
// (and a connection whose rollback fails is closed rather than returned to
// the pool mid-transaction); an error from queue sends nothing.
//
// With pgx's default statement cache, stmts (what queue will add) are
// prepared on the connection first: a no-op once they are, and otherwise
// the round trip in which pgx would prepare them anyway, but here before
// queue runs, so that a wait in it (parse analysis takes table locks) is
// seen by what queue measures rather than hidden before the transaction.
func (s *Store) oneTrip(ctx context.Context, method string, explicit bool, stmts []string, queue func(*pgx.Batch) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if s.prepareFirst {
		for _, sql := range stmts {
			if _, err := conn.Conn().Prepare(ctx, sql, sql); err != nil {
				return err
			}
		}
	}
	b := &pgx.Batch{}
	if explicit {
		b.Queue(beginTx)
	}
	if err := queue(b); err != nil {
		return err
	}
	s.queueProbe(b, method)
	if explicit {
		b.Queue("COMMIT")
	}
	err = conn.SendBatch(ctx, b).Close() // runs the callbacks in order
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		if _, rbErr := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}
	return err
}

// CreateOrGet implements ledger.Store: CreateOrGetTx in a transaction of
// its own.
func (s *Store) CreateOrGet(ctx context.Context, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	if err := ledgerdriver.ValidateCreate(n, now); err != nil {
		return ledger.Operation{}, false, err
	}
	var (
		got     ledger.Operation
		created bool
	)
	err := s.durable(ctx, "create", func(tx pgx.Tx) error {
		var err error
		got, created, err = s.createOrGet(ctx, tx, n, ledgerdriver.UTC(now))
		return err
	})
	if err != nil {
		return ledger.Operation{}, false, translate("create", err)
	}
	return got, created, nil
}

// CreateOrGetTx is CreateOrGet inside the caller's own transaction: the
// operation is recorded (pending, due at now for background work) if its ID
// is new, or the recorded one is returned unchanged; created reports which.
// Enqueue a payment this way in the transaction that writes the business
// data it pays for (an order, a refund request): both commit together, or,
// when tx is rolled back, neither exists and nothing is ever sent. Nothing
// is sent by this call in any case: background work (ClaimDue) sends the
// operation once tx has committed.
//
// tx must be a transaction on the database holding the store's schema (the
// store names its tables with the schema; the search_path does not matter).
// Until tx ends, the row is invisible to other transactions, and calls on the
// same ID from other transactions (Begin, CreateOrGet, another CreateOrGetTx)
// wait for it: do not make them from the goroutine that holds tx.
//
// An ID that Cleanup removed is not recorded again: its tombstone is
// returned (Operation.Tombstone, created false) and tx is left with nothing
// written by this call, as for an existing operation.
//
// Errors: validation errors (ErrInvalid) before tx is used;
// ErrFingerprintMismatch when the ID is recorded (or tombstoned) with
// another fingerprint and ErrKeyConflict when its key belongs to another
// operation. None of these runs a statement that fails: tx is left as it
// was and stays usable (commit or roll back as the business logic decides).
// Any other error (the database refused a statement, the context ended)
// means tx may be aborted: roll it back. Under REPEATABLE READ or
// SERIALIZABLE, a concurrent transaction recording the same ID may make the
// insert fail with a serialization error (SQLSTATE 40001), and a Cleanup
// that removed the ID after tx's snapshot was taken is refused with an
// error saying so (tx's snapshot cannot see the tombstone that must answer):
// in both cases roll back and retry the whole transaction. The commit's
// durability is tx's (synchronous_commit of its session); nothing is sent
// for the operation before it commits.
func (s *Store) CreateOrGetTx(ctx context.Context, tx pgx.Tx, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	// Early (the caller commits later): the consumer's poll, or its Nudge,
	// finds the entry.
	defer s.feedSignal.Notify()
	if tx == nil {
		return ledger.Operation{}, false, &ledger.ValidationError{Field: "tx", Problem: "must not be nil: pass the caller's pgx.Tx"}
	}
	if err := ledgerdriver.ValidateCreate(n, now); err != nil {
		return ledger.Operation{}, false, err
	}
	got, created, err := s.createOrGet(ctx, tx, n, ledgerdriver.UTC(now))
	if err != nil {
		return ledger.Operation{}, false, translate("create in caller's transaction", err)
	}
	return got, created, nil
}

// newOperation is ledgerdriver.ApplyCreate with the key TTL as the store keeps
// it (see storedTTL).
func newOperation(n ledger.NewOperation, now time.Time) ledger.Operation {
	op := ledgerdriver.ApplyCreate(n, now)
	op.KeyTTL = storedTTL(op.KeyTTL)
	return op
}

// storedTTL is the key TTL as the store keeps it: whole milliseconds,
// rounded down, so the recorded key window never outlasts the provider's
// memory (ledgerdriver.ValidateOperation refuses TTLs under a second).
func storedTTL(d time.Duration) time.Duration {
	return d.Truncate(time.Millisecond)
}

// createOrGet is CreateOrGet on tx. Its statements never fail on a taken ID
// or key (the insert does nothing; the reads explain why), so the errors it
// decides in Go (fingerprint mismatch, key conflict) leave tx usable.
//
// The insert is sent with its tombstone check (queries.createdCheck) in one
// round trip. The check is a later statement: under READ COMMITTED it sees
// a Cleanup the insert waited for (one that deleted the ID and wrote its
// tombstone), and the insert is then undone in tx, so that no live row
// ever coexists with a tombstone.
func (s *Store) createOrGet(ctx context.Context, tx pgx.Tx, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	op := newOperation(n, now)
	for range maxVanish {
		var (
			inserted bool
			visible  int
			ts       tombstoneScan
		)
		b := &pgx.Batch{}
		b.Queue(s.q.insertOp, opArgs(op)...).Exec(func(tag pgconn.CommandTag) error {
			inserted = tag.RowsAffected() == 1
			return nil
		})
		b.Queue(s.q.createdCheck, n.ID).QueryRow(func(row pgx.Row) error {
			return row.Scan(append([]any{&visible}, ts.dest()...)...)
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return ledger.Operation{}, false, err
		}
		tomb, found, err := ts.tombstone()
		if err != nil {
			return ledger.Operation{}, false, err
		}
		if inserted {
			switch {
			case found:
				// The only row of the ID this snapshot sees is ours: the
				// deleted one is gone or invisible with its tombstone.
				if _, err := tx.Exec(ctx, s.q.deleteCreated, n.ID); err != nil {
					return ledger.Operation{}, false, err
				}
				got := tomb.Operation()
				return got, false, ledgerdriver.CheckFingerprint(got, n.Fingerprint)
			case visible > 1:
				return ledger.Operation{}, false, fmt.Errorf("operation %q was removed by a concurrent Cleanup after this transaction's snapshot was taken (REPEATABLE READ or SERIALIZABLE); the snapshot cannot see its tombstone: roll back and retry the transaction", n.ID)
			}
			return op, true, nil
		}
		got, err := s.get(ctx, tx, n.ID)
		if errors.Is(err, ledger.ErrNotFound) {
			got, err = s.whyNotInserted(ctx, tx, n)
			if errors.Is(err, errVanished) {
				continue
			}
		}
		if err == nil {
			err = ledgerdriver.CheckFingerprint(got, n.Fingerprint)
		}
		if err != nil {
			return ledger.Operation{}, false, err
		}
		return got, false, nil
	}
	return ledger.Operation{}, false, fmt.Errorf("operation %q was deleted concurrently %d times; try again", n.ID, maxVanish)
}
