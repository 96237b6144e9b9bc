package ledgerpg

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// opColumns are the payonce_operations columns in the order opScan reads
// them and opArgs writes them.
var opColumns = []string{
	"id", "key", "provider", "kind", "refs", "generation", "fingerprint", "request", "status",
	"provider_ref", "result", "attempts", "key_ttl_ms", "window_start", "key_expires_at",
	"lease_owner", "lease_expires_at", "next_check_at", "review_code", "review_reason", "review_at",
	"resolved_by", "resolution_note", "resolution_outcome", "resolved_at",
	"created_at", "updated_at", "finished_at", "payment_ref",
}

// opArgs are the values of every column of op, in opColumns order, for INSERT.
func opArgs(op ledger.Operation) []any {
	r := resolutionArgs(op.Resolution)
	return []any{
		op.ID, op.Key, op.Provider, op.Kind, op.References, op.Generation, op.Fingerprint, string(op.Request), string(op.Status),
		nullText(op.ProviderRef), nullBytes(op.Result), op.Attempts, op.KeyTTL.Milliseconds(), nullTime(op.WindowStart), nullTime(op.KeyExpiresAt),
		nullText(op.LeaseOwner), nullTime(op.LeaseExpiresAt), nullTime(op.NextCheckAt), nullText(string(op.ReviewCode)), nullText(op.ReviewReason), nullTime(op.ReviewAt),
		r[0], r[1], r[2], r[3],
		ts(op.CreatedAt), ts(op.UpdatedAt), nullTime(op.FinishedAt), nullText(op.PaymentRef),
	}
}

// saveArgs are the values for queries.save: the ID, then every column a
// transition may change. Identity, request, TTL and creation time never change.
func saveArgs(op ledger.Operation) []any {
	r := resolutionArgs(op.Resolution)
	return []any{
		op.ID, op.Key, op.Generation, string(op.Status), nullText(op.ProviderRef), nullBytes(op.Result), op.Attempts,
		nullTime(op.WindowStart), nullTime(op.KeyExpiresAt), nullText(op.LeaseOwner), nullTime(op.LeaseExpiresAt),
		nullTime(op.NextCheckAt), nullText(op.ReviewReason), nullTime(op.ReviewAt),
		r[0], r[1], r[2], r[3],
		ts(op.UpdatedAt), nullTime(op.FinishedAt), nullText(string(op.ReviewCode)),
	}
}

func resolutionArgs(r *ledger.Resolution) [4]any {
	if r == nil {
		return [4]any{nil, nil, nil, nil}
	}
	return [4]any{r.Actor, r.Note, string(r.Outcome), nullTime(r.At)}
}

// opScan receives one payonce_operations row. Nullable columns go through
// pgtype values so that NULL becomes the zero value; enumerations are read as
// text and parsed, so that a bad stored value is reported as corrupt.
type opScan struct {
	op                                                     ledger.Operation
	request, status                                        string
	providerRef, result, leaseOwner, reviewReason          pgtype.Text
	reviewCode                                             pgtype.Text
	paymentRef                                             pgtype.Text
	resolvedBy, resolutionNote, resolutionOutcome          pgtype.Text
	keyTTLms                                               int64
	windowStart, keyExpiresAt, leaseExpiresAt, nextCheckAt pgtype.Timestamptz
	reviewAt, resolvedAt, finishedAt                       pgtype.Timestamptz
	createdAt, updatedAt                                   time.Time
}

func (s *opScan) dest() []any {
	o := &s.op
	return []any{
		&o.ID, &o.Key, &o.Provider, &o.Kind, &o.References, &o.Generation, &o.Fingerprint, &s.request, &s.status,
		&s.providerRef, &s.result, &o.Attempts, &s.keyTTLms, &s.windowStart, &s.keyExpiresAt,
		&s.leaseOwner, &s.leaseExpiresAt, &s.nextCheckAt, &s.reviewCode, &s.reviewReason, &s.reviewAt,
		&s.resolvedBy, &s.resolutionNote, &s.resolutionOutcome, &s.resolvedAt,
		&s.createdAt, &s.updatedAt, &s.finishedAt, &s.paymentRef,
	}
}

// operation converts the scanned row, or returns an error wrapping
// ledger.ErrCorrupt for a value the ledger cannot have written.
func (s *opScan) operation() (ledger.Operation, error) {
	op := s.op
	status, err := ledgerdriver.ParseStatus(s.status)
	if err != nil {
		return ledger.Operation{}, ledgerdriver.Corrupt(op.ID, "status", err)
	}
	if s.keyTTLms <= 0 {
		return ledger.Operation{}, ledgerdriver.Corrupt(op.ID, "key_ttl_ms", fmt.Errorf("%d is not a positive TTL", s.keyTTLms))
	}
	op.Status = status
	op.Request = []byte(s.request)
	op.ProviderRef = s.providerRef.String
	op.PaymentRef = s.paymentRef.String
	if s.result.Valid {
		op.Result = []byte(s.result.String)
	}
	op.KeyTTL = time.Duration(s.keyTTLms) * time.Millisecond
	op.WindowStart = timeOf(s.windowStart)
	op.KeyExpiresAt = timeOf(s.keyExpiresAt)
	op.LeaseOwner = s.leaseOwner.String
	op.LeaseExpiresAt = timeOf(s.leaseExpiresAt)
	op.NextCheckAt = timeOf(s.nextCheckAt)
	if s.reviewCode.Valid {
		if op.ReviewCode, err = ledgerdriver.ParseReviewCode(s.reviewCode.String); err != nil {
			return ledger.Operation{}, ledgerdriver.Corrupt(op.ID, "review_code", err)
		}
	}
	op.ReviewReason = s.reviewReason.String
	op.ReviewAt = timeOf(s.reviewAt)
	if s.resolutionOutcome.Valid {
		if op.Resolution, err = sqlstore.Resolution(op.ID, s.resolvedBy.String, s.resolutionNote.String, s.resolutionOutcome.String, timeOf(s.resolvedAt)); err != nil {
			return ledger.Operation{}, err
		}
	}
	op.CreatedAt = s.createdAt.UTC()
	op.UpdatedAt = s.updatedAt.UTC()
	op.FinishedAt = timeOf(s.finishedAt)
	return op, nil
}

// attemptColumns are the payonce_attempts columns attemptScan reads.
var attemptColumns = []string{
	"operation_id", "number", "key", "started_at", "finished_at", "may_have_reached",
	"outcome", "http_status", "provider_request_id", "error", "replayed",
}

// attemptScan receives one payonce_attempts row. Every field is nullable so
// that it can also receive the empty side of a LEFT JOIN.
type attemptScan struct {
	operationID, key, outcome, providerRequestID, errText pgtype.Text
	number, httpStatus                                    pgtype.Int4
	startedAt, finishedAt                                 pgtype.Timestamptz
	mayHaveReached, replayed                              pgtype.Bool
}

func (s *attemptScan) dest() []any {
	return []any{
		&s.operationID, &s.number, &s.key, &s.startedAt, &s.finishedAt, &s.mayHaveReached,
		&s.outcome, &s.httpStatus, &s.providerRequestID, &s.errText, &s.replayed,
	}
}

// attempt converts the scanned row; ok is false for the empty side of a
// LEFT JOIN.
func (s *attemptScan) attempt() (a ledger.Attempt, ok bool, err error) {
	if !s.number.Valid {
		return ledger.Attempt{}, false, nil
	}
	a = ledger.Attempt{
		OperationID:       s.operationID.String,
		Number:            int(s.number.Int32),
		Key:               s.key.String,
		StartedAt:         timeOf(s.startedAt),
		FinishedAt:        timeOf(s.finishedAt),
		MayHaveReached:    s.mayHaveReached.Bool,
		HTTPStatus:        int(s.httpStatus.Int32),
		ProviderRequestID: s.providerRequestID.String,
		Error:             s.errText.String,
		Replayed:          s.replayed.Bool,
	}
	if s.outcome.Valid {
		class, err := ledgerdriver.ParseOutcomeClass(s.outcome.String)
		if err != nil {
			return ledger.Attempt{}, false, ledgerdriver.Corrupt(a.OperationID, fmt.Sprintf("attempts[%d].outcome", a.Number), err)
		}
		a.Outcome = class
	}
	return a, true, nil
}

// tombstoneColumns are the payonce_tombstones columns, in the order
// tombstoneScan reads them and tombstoneArgs writes them.
var tombstoneColumns = []string{
	"id", "key", "provider", "kind", "refs", "generation", "fingerprint", "status",
	"provider_ref", "result", "amount", "currency", "key_ttl_ms",
	"created_at", "finished_at", "tombstoned_at",
}

// tombstoneArgs are the values of every column of t, in tombstoneColumns order.
func tombstoneArgs(t ledgerdriver.Tombstone) []any {
	return []any{
		t.ID, t.Key, t.Provider, t.Kind, t.References, t.Generation, t.Fingerprint, string(t.Status),
		nullText(t.ProviderRef), nullBytes(t.Result), t.Amount, t.Currency, t.KeyTTL.Milliseconds(),
		t.CreatedAt, t.FinishedAt, t.TombstonedAt,
	}
}

// tombstoneScan receives one payonce_tombstones row. Every field is nullable
// so that it can also receive the empty side of a LEFT JOIN.
type tombstoneScan struct {
	id, key, provider, kind, fingerprint, status pgtype.Text
	providerRef, result, currency                pgtype.Text
	refs                                         []string
	generation                                   pgtype.Int4
	amount, keyTTLms                             pgtype.Int8
	createdAt, finishedAt, tombstonedAt          pgtype.Timestamptz
}

func (s *tombstoneScan) dest() []any {
	return []any{
		&s.id, &s.key, &s.provider, &s.kind, &s.refs, &s.generation, &s.fingerprint, &s.status,
		&s.providerRef, &s.result, &s.amount, &s.currency, &s.keyTTLms,
		&s.createdAt, &s.finishedAt, &s.tombstonedAt,
	}
}

// tombstone converts the scanned row; ok is false for the empty side of a
// LEFT JOIN. A value the store cannot have written is reported as corrupt.
func (s *tombstoneScan) tombstone() (t ledgerdriver.Tombstone, ok bool, err error) {
	if !s.id.Valid {
		return ledgerdriver.Tombstone{}, false, nil
	}
	status, err := ledgerdriver.ParseStatus(s.status.String)
	if err != nil || !status.Final() {
		if err == nil {
			err = fmt.Errorf("%s is not a final status", status)
		}
		return ledgerdriver.Tombstone{}, false, ledgerdriver.Corrupt(s.id.String, "tombstone status", err)
	}
	if s.keyTTLms.Int64 <= 0 {
		return ledgerdriver.Tombstone{}, false, ledgerdriver.Corrupt(s.id.String, "tombstone key_ttl_ms", fmt.Errorf("%d is not a positive TTL", s.keyTTLms.Int64))
	}
	t = ledgerdriver.Tombstone{
		ID:           s.id.String,
		Key:          s.key.String,
		Provider:     s.provider.String,
		Kind:         s.kind.String,
		References:   s.refs,
		Generation:   int(s.generation.Int32),
		Fingerprint:  s.fingerprint.String,
		Status:       status,
		ProviderRef:  s.providerRef.String,
		Amount:       s.amount.Int64,
		Currency:     s.currency.String,
		KeyTTL:       time.Duration(s.keyTTLms.Int64) * time.Millisecond,
		CreatedAt:    timeOf(s.createdAt),
		FinishedAt:   timeOf(s.finishedAt),
		TombstonedAt: timeOf(s.tombstonedAt),
	}
	if s.result.Valid {
		t.Result = []byte(s.result.String)
	}
	return t, true, nil
}

// timeOf reads a nullable timestamp: NULL is the zero time, anything else
// is UTC.
func timeOf(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// nullTime writes the zero time as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return ts(t)
}

// ts is t as pgx's own timestamptz value. The same bytes are sent; a
// time.Time argument is converted to this once more, in another
// allocation, when it is encoded.
func ts(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }

// nullText writes the empty string as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullInt writes 0 as NULL.
func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// nullBytes writes nil as NULL and anything else (even empty) as text.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// scanOp reads one operation row (opColumns, then extra).
func scanOp(row pgx.Row, extra ...any) (ledger.Operation, error) {
	var sc opScan
	if err := row.Scan(append(sc.dest(), extra...)...); err != nil {
		return ledger.Operation{}, err
	}
	return sc.operation()
}

// rowToOp is scanOp as a pgx.RowToFunc, for pgx.CollectRows.
func rowToOp(row pgx.CollectableRow) (ledger.Operation, error) { return scanOp(row) }

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
