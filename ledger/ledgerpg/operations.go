package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
)

// maxVanish bounds how often Begin and CreateOrGet start over when the
// operation they collided with was deleted (by Cleanup) before they could
// read it.
const maxVanish = 3

// errVanished: the insert found the ID taken but the row was gone when read.
var errVanished = errors.New("operation deleted concurrently")

// Begin implements ledger.Store. A new operation costs one statement, so
// one round trip and one commit: the row is inserted already leased, with its
// first attempt when asked. For an existing one that insert changes nothing,
// and the row is then read under a row lock, checked and updated in one
// transaction.
func (s *Store) Begin(ctx context.Context, p ledger.BeginParams) (ledger.BeginResult, error) {
	if err := p.Validate(); err != nil {
		return ledger.BeginResult{}, err
	}
	for range maxVanish {
		res, err := s.beginNew(ctx, p)
		if err != nil || res.Created {
			return res, translate("begin", err)
		}
		res, err = s.beginExisting(ctx, p)
		if !errors.Is(err, errVanished) {
			return res, translate("begin", err)
		}
	}
	return ledger.BeginResult{}, fmt.Errorf("ledgerpg: begin %q: the operation was deleted concurrently %d times; try again", p.Op.ID, maxVanish)
}

// beginNew inserts the operation in the state Begin leaves a new one in,
// unless its ID (or key) is taken. Created is false when nothing was inserted.
func (s *Store) beginNew(ctx context.Context, p ledger.BeginParams) (ledger.BeginResult, error) {
	// A new operation has the caller's fingerprint and no lease: the caller
	// claims it, and ApplyBegin cannot fail.
	res, err := ledger.ApplyBegin(newOperation(p.Op, ledger.UTC(p.Now)), p)
	if err != nil {
		return ledger.BeginResult{}, err
	}
	res.Created = true
	if a := res.Attempt; a == nil {
		tag, err := s.pool.Exec(ctx, s.q.insertOp, opArgs(res.Op)...)
		if err != nil || tag.RowsAffected() == 0 {
			return ledger.BeginResult{}, err
		}
	} else {
		var inserted int
		args := append(opArgs(res.Op), a.Number, a.Key, a.StartedAt)
		if err := s.pool.QueryRow(ctx, s.q.insertOpWithAttempt, args...).Scan(&inserted); err != nil || inserted == 0 {
			return ledger.BeginResult{}, err
		}
	}
	return res, nil
}

// beginExisting is Begin for an ID that is already recorded.
func (s *Store) beginExisting(ctx context.Context, p ledger.BeginParams) (ledger.BeginResult, error) {
	var res ledger.BeginResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		op, err := s.lock(ctx, tx, p.Op.ID)
		if errors.Is(err, ledger.ErrNotFound) {
			return s.whyNotInserted(ctx, tx, p.Op)
		}
		if err != nil {
			return err
		}
		res, err = ledger.ApplyBegin(op, p)
		if err != nil || !res.Claimed {
			return err // a terminal operation: the recorded result answers the caller
		}
		return s.save(ctx, tx, res.Op, res.Attempt, time.Time{}, nil)
	})
	switch {
	case errors.Is(err, ledger.ErrInProgress):
		return ledger.BeginResult{Op: res.Op}, err
	case err != nil:
		return ledger.BeginResult{}, err
	}
	return res, nil
}

// whyNotInserted explains an insert that did nothing although the ID is not
// recorded: either its key belongs to another operation, or the row it
// collided with was deleted since.
func (s *Store) whyNotInserted(ctx context.Context, db querier, op ledger.NewOperation) error {
	var taken bool
	if err := db.QueryRow(ctx, s.q.keyTaken, op.Key).Scan(&taken); err != nil {
		return err
	}
	if taken {
		return fmt.Errorf("%w: key %q of new operation %q", ledger.ErrKeyConflict, op.Key, op.ID)
	}
	return errVanished
}

// CreateOrGet implements ledger.Store: CreateOrGetTx in a transaction of
// its own.
func (s *Store) CreateOrGet(ctx context.Context, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	if err := ledger.ValidateCreate(n, now); err != nil {
		return ledger.Operation{}, false, err
	}
	var (
		got     ledger.Operation
		created bool
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		got, created, err = s.createOrGet(ctx, tx, n, ledger.UTC(now))
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
// Errors: validation errors (ErrInvalid) before tx is used;
// ErrFingerprintMismatch when the ID is recorded with another fingerprint
// and ErrKeyConflict when its key belongs to another operation. None of
// these runs a statement that fails: tx is left as it was and stays usable
// (commit or roll back as the business logic decides). Any other error
// (the database refused a statement, the context ended) means tx may be
// aborted: roll it back. Under REPEATABLE READ or SERIALIZABLE, a concurrent
// transaction recording the same ID may make the insert fail with a
// serialization error (SQLSTATE 40001): retry the whole transaction.
func (s *Store) CreateOrGetTx(ctx context.Context, tx pgx.Tx, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	if tx == nil {
		return ledger.Operation{}, false, &ledger.ValidationError{Field: "tx", Problem: "must not be nil: pass the caller's pgx.Tx"}
	}
	if err := ledger.ValidateCreate(n, now); err != nil {
		return ledger.Operation{}, false, err
	}
	got, created, err := s.createOrGet(ctx, tx, n, ledger.UTC(now))
	if err != nil {
		return ledger.Operation{}, false, translate("create in caller's transaction", err)
	}
	return got, created, nil
}

// newOperation is ledger.ApplyCreate with the key TTL as the store keeps
// it (see storedTTL).
func newOperation(n ledger.NewOperation, now time.Time) ledger.Operation {
	op := ledger.ApplyCreate(n, now)
	op.KeyTTL = storedTTL(op.KeyTTL)
	return op
}

// storedTTL is the key TTL as the store keeps it: whole milliseconds,
// rounded down, so the recorded key window never outlasts the provider's
// memory (NewOperation.Validate refuses TTLs under a second).
func storedTTL(d time.Duration) time.Duration {
	return d.Truncate(time.Millisecond)
}

// createOrGet is CreateOrGet on tx. Its statements never fail on a taken ID
// or key (the insert does nothing; the reads explain why), so the errors it
// decides in Go (fingerprint mismatch, key conflict) leave tx usable.
func (s *Store) createOrGet(ctx context.Context, tx pgx.Tx, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	op := newOperation(n, now)
	for range maxVanish {
		tag, err := tx.Exec(ctx, s.q.insertOp, opArgs(op)...)
		if err != nil {
			return ledger.Operation{}, false, err
		}
		if tag.RowsAffected() == 1 {
			return op, true, nil
		}
		got, err := s.get(ctx, tx, n.ID)
		if errors.Is(err, ledger.ErrNotFound) {
			err = s.whyNotInserted(ctx, tx, n)
			if errors.Is(err, errVanished) {
				continue
			}
		}
		if err == nil {
			err = ledger.CheckFingerprint(got, n.Fingerprint)
		}
		if err != nil {
			return ledger.Operation{}, false, err
		}
		return got, false, nil
	}
	return ledger.Operation{}, false, fmt.Errorf("operation %q was deleted concurrently %d times; try again", n.ID, maxVanish)
}

// Claim implements ledger.Store. The row lock makes the check and the lease
// update one compare-and-set: concurrent claimers queue on the lock, and
// each one after the winner sees the winner's live lease.
func (s *Store) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Operation, error) {
	if err := p.Validate(); err != nil {
		return ledger.Operation{}, err
	}
	var out ledger.Operation
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		op, err := s.lock(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if out, err = ledger.ApplyClaim(op, p); err != nil {
			return err
		}
		return s.save(ctx, tx, out, nil, time.Time{}, nil)
	})
	if err != nil {
		return ledger.Operation{}, translate("claim", err)
	}
	return out, nil
}

// StartAttempt implements ledger.Store. When it returns nil the attempt is
// committed, so a crash after sending still leaves a record that the
// request may have left. p.Events are recorded in the same transaction.
func (s *Store) StartAttempt(ctx context.Context, p ledger.StartAttemptParams) (ledger.Operation, ledger.Attempt, error) {
	if err := p.Validate(); err != nil {
		return ledger.Operation{}, ledger.Attempt{}, err
	}
	var ch ledger.Change
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		op, err := s.lock(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if ch, err = ledger.ApplyStartAttempt(op, p); err != nil {
			return err
		}
		return s.save(ctx, tx, ch.Op, ch.Attempt, ledger.UTC(p.Now), ch.Events)
	})
	if err != nil {
		return ledger.Operation{}, ledger.Attempt{}, translate("start attempt", err)
	}
	return ch.Op, *ch.Attempt, nil
}

// Finish implements ledger.Store. It is conditional on the owner and the
// expected status, checked under the row lock: a worker whose lease expired
// and was taken cannot overwrite what the new holder recorded. p.Events,
// then the EventResolution entry of p.Resolution when set, are recorded in
// the same transaction.
func (s *Store) Finish(ctx context.Context, p ledger.FinishParams) (ledger.Operation, error) {
	if err := p.Validate(); err != nil {
		return ledger.Operation{}, err
	}
	now := ledger.UTC(p.Now)
	var out ledger.Operation
	// Two round trips (this is the second write of every operation): the
	// transaction opens in the batch that locks and reads, and commits in
	// the batch that writes.
	err := s.twoTrips(ctx, func(b *pgx.Batch) {
		if s.lazyOutcomes {
			// An outcome lost in a crash is recovered by a lookup (see
			// Config.DurableOutcomes); the journal written before the
			// request was sent is durable whatever this says.
			b.Queue("SET LOCAL synchronous_commit TO OFF")
		}
		// Lock the row, then (a later statement, so it sees everything
		// committed before the lock was granted) read the attempt and where
		// the key window starts without it.
		b.Queue(s.q.lockOp, p.ID)
		if p.Attempt != nil {
			b.Queue(s.q.attemptForFinish, p.ID, p.Attempt.Number)
		}
	}, func(br pgx.BatchResults, w *pgx.Batch) error {
		if s.lazyOutcomes {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		op, err := scanOp(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %q", ledger.ErrNotFound, p.ID)
		}
		if err != nil {
			return err
		}
		var (
			recorded    *ledger.Attempt
			othersStart pgtype.Timestamptz
		)
		if p.Attempt != nil {
			recorded, err = scanAttempt(br.QueryRow(), &othersStart)
			if errors.Is(err, pgx.ErrNoRows) {
				err = nil
			}
			if err != nil {
				return err
			}
		}
		ch, err := ledger.ApplyFinish(op, p, recorded, timeOf(othersStart))
		if err != nil {
			return err
		}
		if a := ch.Attempt; a != nil {
			w.Queue(s.q.finishAttempt, a.OperationID, a.Number, a.FinishedAt, a.MayHaveReached, string(a.Outcome),
				nullInt(a.HTTPStatus), nullText(a.ProviderRequestID), nullText(a.Error))
		}
		w.Queue(s.q.save, saveArgs(ch.Op)...)
		queueEvents(w, &s.q, ch.Op.ID, now, ch.Events)
		out = ch.Op
		return nil
	})
	if err != nil {
		return ledger.Operation{}, translate("finish", err)
	}
	return out, nil
}

// twoTrips runs a read-then-write transaction in two round trips: the
// first batch is BEGIN and what read queues; decide reads its results and
// queues the writes; the second batch is the writes and COMMIT. On any
// error the transaction is rolled back (and a connection whose rollback
// fails is closed rather than returned to the pool mid-transaction).
func (s *Store) twoTrips(ctx context.Context, read func(*pgx.Batch), decide func(pgx.BatchResults, *pgx.Batch) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	rb := &pgx.Batch{}
	rb.Queue("BEGIN")
	read(rb)
	br := conn.SendBatch(ctx, rb)
	_, err = br.Exec() // BEGIN
	w := &pgx.Batch{}
	if err == nil {
		err = decide(br, w)
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		w.Queue("COMMIT")
		err = conn.SendBatch(ctx, w).Close()
	}
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		if _, rbErr := conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}
	return err
}

// Resolve implements ledger.Store. The decision is recorded on the
// operation and as an EventResolution entry, in one transaction.
func (s *Store) Resolve(ctx context.Context, p ledger.ResolveParams) (ledger.Operation, error) {
	if err := p.Validate(); err != nil {
		return ledger.Operation{}, err
	}
	now := ledger.UTC(p.Now)
	var out ledger.Operation
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		op, err := s.lock(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		ch, err := ledger.ApplyResolve(op, p)
		if err != nil {
			return err
		}
		out = ch.Op
		return s.save(ctx, tx, ch.Op, nil, now, ch.Events) // a resend's key taken by another operation fails here: ErrKeyConflict
	})
	if err != nil {
		return ledger.Operation{}, translate("resolve", err)
	}
	return out, nil
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

// get reads one operation without its attempts.
func (s *Store) get(ctx context.Context, db querier, id string) (ledger.Operation, error) {
	op, err := scanOp(db.QueryRow(ctx, s.q.selectOp, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Operation{}, fmt.Errorf("%w: %q", ledger.ErrNotFound, id)
	}
	return op, err
}

// querier is what get and whyNotInserted need: a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func scanOp(row pgx.Row, extra ...any) (ledger.Operation, error) {
	var sc opScan
	if err := row.Scan(append(sc.dest(), extra...)...); err != nil {
		return ledger.Operation{}, err
	}
	return sc.operation()
}

// scanAttempt reads one attempt row (attemptColumns, then extra).
func scanAttempt(row pgx.Row, extra ...any) (*ledger.Attempt, error) {
	var as attemptScan
	if err := row.Scan(append(as.dest(), extra...)...); err != nil {
		return nil, err
	}
	a, _, err := as.attempt()
	if err != nil {
		return nil, err
	}
	return &a, nil
}
