package ledgerpg

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
)

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
	sync := syncOn
	if s.lazyOutcomes {
		// An outcome lost in a crash is recovered by a lookup (see
		// Config.DurableOutcomes); the journal written before the request
		// was sent is durable whatever this says.
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
		ch, err := ledger.ApplyFinish(op, p, recorded, timeOf(othersStart))
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
	if err := p.Validate(); err != nil {
		return ledger.Operation{}, err
	}
	now := ledger.UTC(p.Now)
	var out ledger.Operation
	err := s.durable(ctx, "resolve", func(tx pgx.Tx) error {
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
