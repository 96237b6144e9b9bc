package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Finish records the transition p.From -> p.To, and the outcome of the
// current attempt when p.Attempt is set, in one write transaction, only if
// p.Owner still holds the lease and the status is still p.From. The same
// transaction records p.Events, then, when p.Resolution is set, its
// EventResolution entry. Errors wrap ledger.ErrLeaseLost,
// ledger.ErrStateConflict, ledger.ErrNotFound or ledger.ErrCorrupt, and then
// nothing has changed.
func (s *Store) Finish(ctx context.Context, p ledger.FinishParams) (ledger.Operation, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	if err := ledgerdriver.ValidateFinish(p); err != nil {
		return ledger.Operation{}, fail("finish", err)
	}
	now := ledgerdriver.UTC(p.Now)
	// One conditional write when the store wrote the row last (revision.go).
	if out, ok, err := s.finishFast(ctx, p, now); ok || err != nil {
		if err != nil {
			return ledger.Operation{}, fail("finish", err)
		}
		return out, nil
	}
	return s.transition(ctx, "finish", p.ID, s.lazyOutcomes, now, func(c querier, op ledger.Operation) (ledgerdriver.Change, error) {
		var (
			recorded    *ledger.Attempt
			othersStart time.Time
			err         error
		)
		if p.Attempt != nil {
			if recorded, othersStart, err = attemptForFinish(ctx, c, op.ID, p.Attempt.Number); err != nil {
				return ledgerdriver.Change{}, err
			}
		}
		ch, err := ledgerdriver.ApplyFinish(op, p, recorded, othersStart)
		if err != nil {
			return ledgerdriver.Change{}, err
		}
		if ch.Attempt != nil {
			if err := finishAttempt(ctx, c, *ch.Attempt); err != nil {
				return ledgerdriver.Change{}, err
			}
		}
		return ch, nil
	})
}

// transition runs, in one write transaction (lazy: see writeTx), the steps
// Finish and Resolve share: read operation id, compute the change from it
// with apply (which reads and writes on c whatever else the change needs),
// then write the changed operation and its events stamped now. It returns
// the operation as written; errors are wrapped for method, and then nothing
// has changed.
func (s *Store) transition(ctx context.Context, method, id string, lazy bool, now time.Time, apply func(c querier, op ledger.Operation) (ledgerdriver.Change, error)) (ledger.Operation, error) {
	var out ledger.Operation
	err := s.writeTx(ctx, lazy, func(conn *sql.Conn) error {
		c := quietTx(ctx, conn)
		op, err := getOp(ctx, c, id)
		if err != nil {
			return err
		}
		ch, err := apply(c, op)
		if err != nil {
			return err
		}
		if err := saveOp(ctx, c, &ch.Op); err != nil { // a resend's key taken by another operation fails here: ErrKeyConflict
			return err
		}
		out = ch.Op
		return insertEvents(ctx, c, op.ID, now, ch.Events)
	})
	if err != nil {
		return ledger.Operation{}, fail(method, err)
	}
	return out, nil
}

// attemptForFinish reads attempt number of operation id (nil when it is not
// recorded) and the start of the earliest other attempt under the same key
// that may have reached the provider (zero when there is none): where the key
// window starts if this attempt turns out never to have left. These are the
// facts ledgerdriver.ApplyFinish needs.
func attemptForFinish(ctx context.Context, c querier, id string, number int) (*ledger.Attempt, time.Time, error) {
	a, othersStart, err := scanAttemptExtra(c.QueryRowContext(ctx, `SELECT `+attemptColumns+`,
		(SELECT MIN(e.started_at) FROM payonce_attempts e
		  WHERE e.operation_id = a.operation_id AND e.key = a.key AND e.may_have_reached = 1 AND e.number <> a.number)
		FROM payonce_attempts a WHERE a.operation_id = ? AND a.number = ?`, id, int64(number)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	return &a, fromMicros(othersStart), nil
}

// errMovedOn is finishFast's own error: the row or its attempt was not as
// the copy says, so the transaction is rolled back and Finish takes the
// long way. It never reaches the caller.
var errMovedOn = errors.New("ledgersqlite: the row changed since the store's last write")

// finishFastSQL is saveOpSQL on the condition that the row is still the
// copy's: its revision, lease owner and status (revision.go).
const finishFastSQL = saveOpSQL + ` AND revision = ? AND lease_owner = ? AND status = ?`

// finishFast is Finish on the store's copy of the operation (revision.go):
// the operation and the attempt are written without being read first. ok is
// false when it wrote nothing (no copy, the rules refused the copy, the row
// or the attempt had moved on): Finish then reads the row and decides
// again. An error is one of the database (a context ended, the file
// locked by another process past the busy timeout, I/O), which the long
// way would meet too; nothing was written.
func (s *Store) finishFast(ctx context.Context, p ledger.FinishParams, now time.Time) (ledger.Operation, bool, error) {
	rev, ok := s.revs.Take(p.ID)
	if !ok || s.longWayOnly {
		return ledger.Operation{}, false, nil
	}
	ch, ok := sqlstore.FinishOnCopy(rev.op, rev.att, p)
	if !ok {
		return ledger.Operation{}, false, nil
	}
	err := s.writeTx(ctx, s.lazyOutcomes, func(conn *sql.Conn) error {
		c := quietTx(ctx, conn)
		// The key is written unchanged (ApplyFinish never changes it), so
		// this cannot fail with ErrKeyConflict as a resend's Resolve can.
		res, err := c.ExecContext(ctx, finishFastSQL, saveArgs(&ch.Op, rev.rev, p.Owner, string(p.From))...)
		if err := wroteOne(res, err); err != nil {
			return err
		}
		if a := ch.Attempt; a != nil {
			// Unfinished, as the copy says: an outcome recorded meanwhile
			// (another process, a caller's SQL) is not overwritten.
			res, err := execFinishAttempt(ctx, c, finishOpenAttemptSQL, *a)
			if err := wroteOne(res, err); err != nil {
				return err
			}
		}
		return insertEvents(ctx, c, p.ID, now, ch.Events)
	})
	if errors.Is(err, errMovedOn) {
		return ledger.Operation{}, false, nil
	}
	if err != nil {
		return ledger.Operation{}, false, err
	}
	s.fastFinishes.Add(1)
	if !ch.Op.Status.Terminal() && ch.Op.LeaseOwner != "" {
		// Kept lease: a further Finish of this call is one write too. The
		// statement set revision to rev.rev+1 itself (saveOpSQL).
		s.keep(revision{op: ch.Op, rev: rev.rev + 1})
	}
	return ch.Op, true, nil
}

// wroteOne is nil when a conditional write (res, err) wrote exactly one
// row, errMovedOn when it wrote none, and err otherwise.
func wroteOne(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return errMovedOn
	}
	return nil
}

// finishAttemptSQL records the outcome of an attempt (execFinishAttempt).
const finishAttemptSQL = `UPDATE payonce_attempts SET
		finished_at = ?, outcome = ?, http_status = ?, provider_request_id = ?, error = ?, may_have_reached = ?, replayed = ?
		WHERE operation_id = ? AND number = ?`

// finishOpenAttemptSQL is finishAttemptSQL for an attempt still as Begin
// journaled it: unfinished and without an outcome. An attempt row has no
// revision; these are the columns whose values the long way would act on
// (an outcome recorded meanwhile, or one it could not read back, which it
// reports as ErrCorrupt), so a row that differs takes the long way.
const finishOpenAttemptSQL = finishAttemptSQL + ` AND finished_at IS NULL AND outcome IS NULL`

// finishAttempt records the outcome of an attempt (ledgerdriver.ApplyFinish).
func finishAttempt(ctx context.Context, c querier, a ledger.Attempt) error {
	_, err := execFinishAttempt(ctx, c, finishAttemptSQL, a)
	return err
}

// execFinishAttempt runs query, finishAttemptSQL or a variant of it, for a.
func execFinishAttempt(ctx context.Context, c querier, query string, a ledger.Attempt) (sql.Result, error) {
	return c.ExecContext(ctx, query,
		micros(a.FinishedAt), string(a.Outcome), nullInt(a.HTTPStatus), text(a.ProviderRequestID), text(a.Error), boolInt(a.MayHaveReached),
		boolInt(a.Replayed), a.OperationID, int64(a.Number))
}

// Resolve records an operator's decision on an operation in manual_review,
// with an audit record of who decided, why and when (on the operation, and
// as an EventResolution entry), and releases any lease
// (the operator's decision overrides read-only lookups in progress). Errors
// wrap ledger.ErrNotInReview, ledger.ErrNotFound, ledger.ErrStateConflict
// (a resend whose NewGeneration is not the next one), ledger.ErrKeyConflict
// or ledger.ErrInvalid.
func (s *Store) Resolve(ctx context.Context, p ledger.ResolveParams) (ledger.Operation, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	if err := ledgerdriver.ValidateResolve(p); err != nil {
		return ledger.Operation{}, fail("resolve", err)
	}
	return s.transition(ctx, "resolve", p.ID, false, ledgerdriver.UTC(p.Now), func(c querier, op ledger.Operation) (ledgerdriver.Change, error) {
		if p.CheckEvents {
			var n int
			if err := c.QueryRowContext(ctx, `SELECT count(*) FROM payonce_events WHERE operation_id = ?`, p.ID).Scan(&n); err != nil {
				return ledgerdriver.Change{}, err
			}
			if err := ledgerdriver.CheckEventsSeen(p.ID, p.EventsSeen, n); err != nil {
				return ledgerdriver.Change{}, err
			}
		}
		return ledgerdriver.ApplyResolve(op, p)
	})
}
