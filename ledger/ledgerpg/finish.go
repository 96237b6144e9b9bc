package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Finish implements ledger.Store. It is conditional on the owner and the
// expected status, checked under the row lock: a worker whose lease expired
// and was taken cannot overwrite what the new holder recorded. p.Events,
// then the EventResolution entry of p.Resolution when set, are recorded in
// the same transaction.
func (s *Store) Finish(ctx context.Context, p ledger.FinishParams) (ledger.Operation, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	if err := ledgerdriver.ValidateFinish(p); err != nil {
		return ledger.Operation{}, err
	}
	now := ledgerdriver.UTC(p.Now)
	// One statement when the store wrote the row last (revision.go).
	if out, ok, err := s.finishFast(ctx, p, now); ok || err != nil {
		return out, translate("finish", err)
	}
	// Otherwise two round trips: the transaction opens in the batch that
	// locks and reads, and commits in the batch that writes.
	var out ledger.Operation
	sync := syncOn
	if s.lazyOutcomes {
		// An outcome lost in a crash is recovered by a lookup (see
		// Config.DurableOutcomes); the journal written before the request
		// was sent is durable whatever this says. (The one-statement
		// Finish sets the same: queries.finishFast.)
		sync = syncOff
	}
	err := s.twoTrips(ctx, "finish", sync, func(b *pgx.Batch) {
		// Lock the row, then (a later statement, so it sees everything
		// committed before the lock was granted) read the attempt and where
		// the key window starts without it.
		b.Queue(s.q.lockOp, p.ID)
		if p.Attempt != nil {
			b.Queue(s.q.attemptForFinish, p.ID, p.Attempt.Number)
		}
	}, func(br pgx.BatchResults, w *pgx.Batch) error {
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
		ch, err := ledgerdriver.ApplyFinish(op, p, recorded, timeOf(othersStart))
		if err != nil {
			return err
		}
		if a := ch.Attempt; a != nil {
			w.Queue(s.q.finishAttempt, a.OperationID, a.Number, a.FinishedAt, a.MayHaveReached, string(a.Outcome),
				nullInt(a.HTTPStatus), nullText(a.ProviderRequestID), nullText(a.Error), a.Replayed)
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

// finishFast is Finish as one statement on the store's copy of the
// operation (revision.go): one round trip instead of two. ok is false when
// it wrote nothing (no copy, the rules refused the copy, the row had moved
// on): Finish then reads the row under its lock and decides again.
func (s *Store) finishFast(ctx context.Context, p ledger.FinishParams, now time.Time) (ledger.Operation, bool, error) {
	rev, ok := s.revs.Take(p.ID)
	if !ok || s.longWayOnly {
		return ledger.Operation{}, false, nil
	}
	ch, ok := sqlstore.FinishOnCopy(rev.op, rev.att, p)
	if !ok {
		return ledger.Operation{}, false, nil
	}
	sql := s.q.finishFastNoAttempt
	args := append(saveArgs(ch.Op), rev.xmin, p.Owner, string(p.From))
	if a := ch.Attempt; a != nil {
		sql = s.q.finishFast
		args = append(args, a.Number, ts(a.FinishedAt), a.MayHaveReached, string(a.Outcome),
			nullInt(a.HTTPStatus), nullText(a.ProviderRequestID), nullText(a.Error), a.Replayed)
	}
	args = appendEvents(args, now, ch.Events)
	xmin, wrote, err := s.writeIfUnchanged(ctx, "finish", sql, args)
	if err != nil || !wrote {
		return ledger.Operation{}, false, err
	}
	if !ch.Op.Status.Terminal() && ch.Op.LeaseOwner != "" {
		// Kept lease: the next attempt of this call starts in one statement too.
		s.revs.Put(ch.Op.ID, revision{op: asStored(ch.Op), xmin: xmin})
	}
	return ch.Op, true, nil
}

// writeIfUnchanged runs one of the one-statement writes (queries.finishFast,
// finishFastNoAttempt, startAttemptFast) as a transaction of its own: no
// BEGIN or COMMIT, the statement alone in its pipeline (see oneTrip), one
// round trip. It returns the new row version; wrote is false when the row
// was not the copy's version (the statement returned NULL), and also when
// the statement failed because the events it numbered collided with ones
// another writer inserted meanwhile, the attempt row had changed (its
// guard), or, under a server default of REPEATABLE READ or SERIALIZABLE,
// the row changed after the statement's snapshot: in every case nothing
// was written and the caller takes the long way.
func (s *Store) writeIfUnchanged(ctx context.Context, method, sql string, args []any) (xmin uint32, wrote bool, err error) {
	err = s.oneTrip(ctx, method, false, []string{sql}, func(b *pgx.Batch) error {
		b.Queue(sql, args...).QueryRow(func(row pgx.Row) error {
			var (
				version pgtype.Uint32
				guard   pgtype.Int8
				sync    string
			)
			if err := row.Scan(&version, &guard, &sync); err != nil {
				return err
			}
			xmin, wrote = version.Uint32, version.Valid
			return nil
		})
		return nil
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == eventsKeyConstraint ||
		isGuardFailure(err) || isSerializationFailure(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return xmin, wrote, nil
}

// isSerializationFailure reports SQLSTATE 40001, which only a transaction
// above READ COMMITTED gets for a row another transaction changed: it wrote
// nothing.
func isSerializationFailure(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001"
}

// isGuardFailure reports the division by zero with which a statement's
// guard refuses to go on (queries.finishFast, queries.createdGuard): the
// statement and its transaction wrote nothing.
func isGuardFailure(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "22012"
}

// appendEvents adds the events parameters of the one-statement writes to
// args: the time, then kinds, actors and details as arrays.
func appendEvents(args []any, at time.Time, evs []ledger.NewEvent) []any {
	if len(evs) == 0 {
		// NULL arrays: unnest gives no rows, and a nil slice costs neither
		// an allocation nor an array to encode.
		var none []string
		return append(args, ts(at), none, none, none)
	}
	kinds, actors, details := make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs))
	for i, e := range evs {
		kinds[i], actors[i], details[i] = string(e.Kind), e.Actor, e.Detail
	}
	return append(args, ts(at), kinds, actors, details)
}

// twoTrips runs a read-then-write transaction in two round trips: the
// first batch is BEGIN, sync (the synchronous_commit setting of the
// transaction) and what read queues; decide reads its results and queues
// the writes; the second batch is the writes and COMMIT. On any error the
// transaction is rolled back (and a connection whose rollback fails is
// closed rather than returned to the pool mid-transaction).
func (s *Store) twoTrips(ctx context.Context, method, sync string, read func(*pgx.Batch), decide func(pgx.BatchResults, *pgx.Batch) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	rb := &pgx.Batch{}
	rb.Queue(beginTx)
	rb.Queue(sync)
	read(rb)
	br := conn.SendBatch(ctx, rb)
	_, err = br.Exec() // BEGIN
	if err == nil {
		_, err = br.Exec() // sync
	}
	w := &pgx.Batch{}
	if err == nil {
		err = decide(br, w)
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		s.queueProbe(w, method)
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
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	if err := ledgerdriver.ValidateResolve(p); err != nil {
		return ledger.Operation{}, err
	}
	now := ledgerdriver.UTC(p.Now)
	var out ledger.Operation
	err := s.durable(ctx, "resolve", func(tx pgx.Tx) error {
		op, err := s.lock(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if p.CheckEvents {
			var n int
			if err := tx.QueryRow(ctx, s.q.countEvents, p.ID).Scan(&n); err != nil {
				return err
			}
			if err := ledgerdriver.CheckEventsSeen(p.ID, p.EventsSeen, n); err != nil {
				return err
			}
		}
		ch, err := ledgerdriver.ApplyResolve(op, p)
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
