package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/payonce/payonce/ledger"
)

// Finish records the transition p.From -> p.To, and the outcome of the
// current attempt when p.Attempt is set, in one write transaction, only if
// p.Owner still holds the lease and the status is still p.From. The same
// transaction records p.Events, then, when p.Resolution is set, its
// EventResolution entry. Errors wrap ledger.ErrLeaseLost,
// ledger.ErrStateConflict, ledger.ErrNotFound or ledger.ErrCorrupt, and then
// nothing has changed.
func (s *Store) Finish(ctx context.Context, p ledger.FinishParams) (ledger.Operation, error) {
	if err := p.Validate(); err != nil {
		return ledger.Operation{}, fail("finish", err)
	}
	return s.transition(ctx, "finish", p.ID, s.lazyOutcomes, ledger.UTC(p.Now), func(c querier, op ledger.Operation) (ledger.Change, error) {
		var (
			recorded    *ledger.Attempt
			othersStart time.Time
			err         error
		)
		if p.Attempt != nil {
			if recorded, othersStart, err = attemptForFinish(ctx, c, op.ID, p.Attempt.Number); err != nil {
				return ledger.Change{}, err
			}
		}
		ch, err := ledger.ApplyFinish(op, p, recorded, othersStart)
		if err != nil {
			return ledger.Change{}, err
		}
		if ch.Attempt != nil {
			if err := finishAttempt(ctx, c, *ch.Attempt); err != nil {
				return ledger.Change{}, err
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
func (s *Store) transition(ctx context.Context, method, id string, lazy bool, now time.Time, apply func(c querier, op ledger.Operation) (ledger.Change, error)) (ledger.Operation, error) {
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
// facts ledger.ApplyFinish needs.
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

// finishAttempt records the outcome of an attempt (ledger.ApplyFinish).
func finishAttempt(ctx context.Context, c querier, a ledger.Attempt) error {
	_, err := c.ExecContext(ctx, `UPDATE payonce_attempts SET
		finished_at = ?, outcome = ?, http_status = ?, provider_request_id = ?, error = ?, may_have_reached = ?, replayed = ?
		WHERE operation_id = ? AND number = ?`,
		micros(a.FinishedAt), string(a.Outcome), nullInt(a.HTTPStatus), text(a.ProviderRequestID), text(a.Error), boolInt(a.MayHaveReached),
		boolInt(a.Replayed), a.OperationID, int64(a.Number))
	return err
}

// Resolve records an operator's decision on an operation in manual_review,
// with an audit record of who decided, why and when (on the operation, and
// as an EventResolution entry), and releases any lease
// (the operator's decision overrides read-only lookups in progress). Errors
// wrap ledger.ErrNotInReview, ledger.ErrNotFound, ledger.ErrStateConflict
// (a resend whose NewGeneration is not the next one), ledger.ErrKeyConflict
// or ledger.ErrInvalid.
func (s *Store) Resolve(ctx context.Context, p ledger.ResolveParams) (ledger.Operation, error) {
	if err := p.Validate(); err != nil {
		return ledger.Operation{}, fail("resolve", err)
	}
	return s.transition(ctx, "resolve", p.ID, false, ledger.UTC(p.Now), func(_ querier, op ledger.Operation) (ledger.Change, error) {
		return ledger.ApplyResolve(op, p)
	})
}
