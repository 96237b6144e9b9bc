package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
)

// Finish records the transition p.From -> p.To, and the outcome of the
// current attempt when p.Attempt is set, in one write transaction, only if
// p.Owner still holds the lease and the status is still p.From. The same
// transaction records p.Events, then, when p.Resolution is set, its
// EventResolution entry. Errors wrap ledger.ErrLeaseLost,
// ledger.ErrStateConflict or ledger.ErrNotFound, and then nothing has
// changed.
func (s *Store) Finish(ctx context.Context, p ledger.FinishParams) (ledger.Operation, error) {
	if err := p.Validate(); err != nil {
		return ledger.Operation{}, fail("finish", err)
	}
	now := ledger.UTC(p.Now)
	var op ledger.Operation
	err := s.write(ctx, func(c *sql.Conn) error {
		var err error
		if op, err = getOp(ctx, c, p.ID); err != nil {
			return err
		}
		// A worker whose lease was taken over must not overwrite the new
		// owner's work: the outcome it holds may already be stale.
		if op.LeaseOwner != p.Owner {
			return leaseLost(op, p.Owner)
		}
		if op.Status != p.From {
			return fmt.Errorf("operation %q is %s, not %s: %w", op.ID, op.Status, p.From, ledger.ErrStateConflict)
		}
		if p.Attempt != nil {
			if err := finishAttempt(ctx, c, &op, *p.Attempt, now); err != nil {
				return err
			}
		}
		applyTransition(&op, p, now)
		if err := saveOp(ctx, c, &op); err != nil {
			return err
		}
		evs := callerEvents(p.Events, p.Owner)
		if r := p.Resolution; r != nil {
			detail := resolutionDetail{Outcome: r.Outcome, Note: r.Note, ProviderRef: p.ProviderRef}
			evs = append(evs, newEvent{kind: ledger.EventResolution, actor: r.Actor, detail: detail.String()})
		}
		return insertEvents(ctx, c, op.ID, now, evs)
	})
	if err != nil {
		return ledger.Operation{}, fail("finish", err)
	}
	return op, nil
}

// applyTransition changes op as Finish describes (see ledger/doc.go for
// next_check_at).
func applyTransition(op *ledger.Operation, p ledger.FinishParams, now time.Time) {
	op.Status = p.To
	if p.ProviderRef != "" {
		op.ProviderRef = p.ProviderRef
	}
	if p.Result != nil {
		op.Result = nonEmpty(p.Result)
	}
	switch p.To {
	case ledger.StatusPending, ledger.StatusUnknown:
		// Background work must come back to a non-final operation, or it
		// would be lost; zero means at once.
		op.NextCheckAt = ledger.UTC(p.NextCheckAt)
		if op.NextCheckAt.IsZero() {
			op.NextCheckAt = now
		}
	case ledger.StatusManualReview:
		// Non-zero asks for further read-only lookups; zero waits for an
		// operator.
		op.NextCheckAt = ledger.UTC(p.NextCheckAt)
		op.ReviewReason = p.ReviewReason
		if p.From != ledger.StatusManualReview || op.ReviewAt.IsZero() {
			op.ReviewAt = now
		}
	case ledger.StatusSucceeded, ledger.StatusFailed:
		op.NextCheckAt = time.Time{}
		op.FinishedAt = now
	}
	if r := p.Resolution; r != nil {
		res := *r
		res.At = ledger.UTC(res.At)
		if res.At.IsZero() {
			res.At = now
		}
		op.Resolution = &res
	}
	if !p.KeepLease || p.To.Terminal() {
		op.LeaseOwner = ""
		op.LeaseExpiresAt = time.Time{}
	}
	op.UpdatedAt = now
}

// finishAttempt records the outcome of the latest attempt. An attempt proven
// not sent stops counting for the key window: the window restarts at the
// first remaining attempt of the current key that may have reached the
// provider, or closes when there is none.
func finishAttempt(ctx context.Context, c querier, op *ledger.Operation, out ledger.AttemptOutcome, now time.Time) error {
	if out.Number != op.Attempts {
		return fmt.Errorf("operation %q: attempt %d is not the latest (%d): %w", op.ID, out.Number, op.Attempts, ledger.ErrStateConflict)
	}
	a, err := scanAttempt(c.QueryRowContext(ctx, `SELECT `+attemptColumns+`
		FROM payonce_attempts WHERE operation_id = ? AND number = ?`, op.ID, out.Number))
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Corrupt(op.ID, "attempts", fmt.Errorf("attempt %d is counted but not recorded", out.Number))
	}
	if err != nil {
		return err
	}
	if !a.FinishedAt.IsZero() {
		return fmt.Errorf("operation %q: attempt %d already finished as %s: %w", op.ID, out.Number, a.Outcome, ledger.ErrStateConflict)
	}
	reached := out.Class.MayHaveReached()
	if _, err := c.ExecContext(ctx, `UPDATE payonce_attempts SET
		finished_at = ?, outcome = ?, http_status = ?, provider_request_id = ?, error = ?, may_have_reached = ?
		WHERE operation_id = ? AND number = ?`,
		micros(now), string(out.Class), nullInt(out.HTTPStatus), text(out.ProviderRequestID), text(out.Error), boolInt(reached),
		op.ID, out.Number); err != nil {
		return err
	}
	if reached {
		return nil
	}
	// Attempts of earlier key generations do not count: the window belongs
	// to the key the provider would see now.
	var start sql.NullInt64
	if err := c.QueryRowContext(ctx, `SELECT MIN(started_at) FROM payonce_attempts
		WHERE operation_id = ? AND key = ? AND may_have_reached = 1`, op.ID, op.Key).Scan(&start); err != nil {
		return err
	}
	op.WindowStart = fromMicros(start)
	op.KeyExpiresAt = keyExpiry(op)
	return nil
}

func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
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
	now := ledger.UTC(p.Now)
	var op ledger.Operation
	err := s.write(ctx, func(c *sql.Conn) error {
		var err error
		if op, err = getOp(ctx, c, p.ID); err != nil {
			return err
		}
		if op.Status != ledger.StatusManualReview {
			return fmt.Errorf("operation %q is %s: %w", op.ID, op.Status, ledger.ErrNotInReview)
		}
		switch p.Outcome {
		case ledger.ResolveSucceeded, ledger.ResolveFailed:
			op.Status = ledger.StatusSucceeded
			if p.Outcome == ledger.ResolveFailed {
				op.Status = ledger.StatusFailed
			}
			if p.ProviderRef != "" {
				op.ProviderRef = p.ProviderRef
			}
			op.FinishedAt = now
			op.NextCheckAt = time.Time{}
		case ledger.ResolveResend:
			if p.NewGeneration != op.Generation+1 {
				return fmt.Errorf("operation %q is at generation %d, a resend must use generation %d, got %d: %w",
					op.ID, op.Generation, op.Generation+1, p.NewGeneration, ledger.ErrStateConflict)
			}
			if p.NewKey == op.Key {
				return &ledger.ValidationError{Field: "NewKey", Problem: "must differ from the current key: the provider may still remember it"}
			}
			// A new key opens a new window: nothing has been sent with it.
			op.Key = p.NewKey
			op.Generation = p.NewGeneration
			op.Status = ledger.StatusPending
			op.WindowStart = time.Time{}
			op.KeyExpiresAt = time.Time{}
			op.NextCheckAt = now
			op.FinishedAt = time.Time{}
		}
		op.Resolution = &ledger.Resolution{Actor: p.Actor, Note: p.Note, Outcome: p.Outcome, At: now}
		op.LeaseOwner = ""
		op.LeaseExpiresAt = time.Time{}
		op.UpdatedAt = now
		if err := saveOp(ctx, c, &op); err != nil {
			return err
		}
		return insertEvents(ctx, c, op.ID, now, []newEvent{{kind: ledger.EventResolution, actor: p.Actor, detail: resolveDetail(p)}})
	})
	if err != nil {
		return ledger.Operation{}, fail("resolve", err)
	}
	return op, nil
}
