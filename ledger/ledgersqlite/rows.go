package ledgersqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Encoding between Go values and columns. Times are INTEGER unix
// microseconds in UTC (ledgerdriver.UTC precision), NULL for the zero time; optional
// text is NULL when empty, so "not set" has one representation.

func micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return ledgerdriver.UTC(t).UnixMicro()
}

func fromMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMicro(n.Int64).UTC()
}

func text(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func blobText(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func fromBlobText(ns sql.NullString) []byte {
	if !ns.Valid || ns.String == "" {
		return nil
	}
	return []byte(ns.String)
}

func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// ttlMillis stores a key TTL in whole milliseconds, rounding down: a
// shorter recorded window can only send an operation to review sooner, never
// allow a resend after the provider forgot the key.
func ttlMillis(d time.Duration) int64 { return d.Milliseconds() }

// opColumns lists payonce_operations in the order scanOp reads them.
const opColumns = `id, key, provider, kind, refs, generation, fingerprint, request, status,
	provider_ref, result, attempts, key_ttl_ms, window_start, key_expires_at,
	lease_owner, lease_expires_at, next_check_at, review_code, review_reason, review_at,
	resolved_by, resolution_note, resolution_outcome, resolved_at,
	created_at, updated_at, finished_at, payment_ref`

type scanner interface{ Scan(dest ...any) error }

// opRow holds the scan targets of one operation row, and the list of
// pointers to them that Scan takes. Scanning into locals would move every
// one of them to the heap (they reach Scan through an interface), some
// thirty allocations per row; one pooled opRow costs none.
type opRow struct {
	id, key, provider, kind, fingerprint                   string
	refs, request, status                                  string
	generation, attempts, ttlMS                            int64
	providerRef, result, leaseOwner, reviewReason          sql.NullString
	reviewCode                                             sql.NullString
	paymentRef                                             sql.NullString
	resolvedBy, resolutionNote, resolutionOutcome          sql.NullString
	windowStart, keyExpiresAt, leaseExpiresAt, nextCheckAt sql.NullInt64
	reviewAt, resolvedAt, createdAt, updatedAt, finishedAt sql.NullInt64
	dest                                                   []any
}

var opRows = sync.Pool{New: func() any {
	r := new(opRow)
	r.dest = []any{&r.id, &r.key, &r.provider, &r.kind, &r.refs, &r.generation, &r.fingerprint, &r.request, &r.status,
		&r.providerRef, &r.result, &r.attempts, &r.ttlMS, &r.windowStart, &r.keyExpiresAt,
		&r.leaseOwner, &r.leaseExpiresAt, &r.nextCheckAt, &r.reviewCode, &r.reviewReason, &r.reviewAt,
		&r.resolvedBy, &r.resolutionNote, &r.resolutionOutcome, &r.resolvedAt,
		&r.createdAt, &r.updatedAt, &r.finishedAt, &r.paymentRef}
	return r
}}

// scanOp reads one operation row. A value that cannot be read back (unknown
// status, malformed references, ...) is reported with ledgerdriver.Corrupt and the
// row is left untouched for an operator.
func scanOp(sc scanner) (ledger.Operation, error) {
	r := opRows.Get().(*opRow)
	defer func() {
		*r = opRow{dest: r.dest} // keep no row's text alive in the pool
		opRows.Put(r)
	}()
	// Scan sets every target (NULL included) before it returns nil: nothing
	// of the previous row read into r survives.
	if err := sc.Scan(r.dest...); err != nil {
		return ledger.Operation{}, err
	}
	op := ledger.Operation{ID: r.id, Key: r.key, Provider: r.provider, Kind: r.kind, Fingerprint: r.fingerprint}
	var err error
	if op.Status, err = ledgerdriver.ParseStatus(r.status); err != nil {
		return ledger.Operation{}, ledgerdriver.Corrupt(op.ID, "status", err)
	}
	if err := json.Unmarshal([]byte(r.refs), &op.References); err != nil {
		return ledger.Operation{}, ledgerdriver.Corrupt(op.ID, "refs", err)
	}
	op.Generation = int(r.generation)
	op.Request = []byte(r.request)
	op.ProviderRef = r.providerRef.String
	op.PaymentRef = r.paymentRef.String
	op.Result = fromBlobText(r.result)
	op.Attempts = int(r.attempts)
	op.KeyTTL = time.Duration(r.ttlMS) * time.Millisecond
	op.WindowStart = fromMicros(r.windowStart)
	op.KeyExpiresAt = fromMicros(r.keyExpiresAt)
	op.LeaseOwner = r.leaseOwner.String
	op.LeaseExpiresAt = fromMicros(r.leaseExpiresAt)
	op.NextCheckAt = fromMicros(r.nextCheckAt)
	if r.reviewCode.Valid {
		if op.ReviewCode, err = ledgerdriver.ParseReviewCode(r.reviewCode.String); err != nil {
			return ledger.Operation{}, ledgerdriver.Corrupt(op.ID, "review_code", err)
		}
	}
	op.ReviewReason = r.reviewReason.String
	op.ReviewAt = fromMicros(r.reviewAt)
	if r.resolvedBy.Valid || r.resolutionOutcome.Valid {
		if op.Resolution, err = sqlstore.Resolution(op.ID, r.resolvedBy.String, r.resolutionNote.String, r.resolutionOutcome.String, fromMicros(r.resolvedAt)); err != nil {
			return ledger.Operation{}, err
		}
	}
	op.CreatedAt = fromMicros(r.createdAt)
	op.UpdatedAt = fromMicros(r.updatedAt)
	op.FinishedAt = fromMicros(r.finishedAt)
	return op, nil
}

// getOp reads one operation by ID, ErrNotFound when absent.
func getOp(ctx context.Context, q querier, id string) (ledger.Operation, error) {
	op, err := scanOp(q.QueryRowContext(ctx, `SELECT `+opColumns+` FROM payonce_operations WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return ledger.Operation{}, fmt.Errorf("operation %q: %w", id, ledger.ErrNotFound)
	}
	return op, err
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// collect runs query and reads every row with scan: the store's one rows
// loop, what pgx.CollectRows is for ledgerpg. It returns nil when there are
// no rows.
func collect[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// queryOps runs a query selecting opColumns and reads every row.
func queryOps(ctx context.Context, q querier, query string, args ...any) ([]ledger.Operation, error) {
	return collect(ctx, q, scanOp, query, args...)
}

// saveOpSQL writes every mutable column of an operation (saveArgs gives
// the arguments) and advances its revision (migration 007): the store sets
// it itself, so the revision trigger has nothing to do for its writes.
const saveOpSQL = `UPDATE payonce_operations SET
		key = ?, generation = ?, status = ?, provider_ref = ?, result = ?, attempts = ?,
		window_start = ?, key_expires_at = ?, lease_owner = ?, lease_expires_at = ?, next_check_at = ?,
		review_code = ?, review_reason = ?, review_at = ?, resolved_by = ?, resolution_note = ?, resolution_outcome = ?,
		resolved_at = ?, updated_at = ?, finished_at = ?, revision = revision + 1
		WHERE id = ?`

// saveOp writes every mutable column of op. Methods change an Operation in
// Go and save it with one UPDATE, so what they return is what was written:
// an empty result is kept as NULL, so op then holds nil, as Get reads it.
func saveOp(ctx context.Context, q querier, op *ledger.Operation) error {
	_, err := q.ExecContext(ctx, saveOpSQL, saveArgs(op)...)
	return err
}

// saveArgs returns the arguments of saveOpSQL for op, then more (the
// conditions a statement adds to saveOpSQL's), after keeping an empty
// result as nil in op (see saveOp).
func saveArgs(op *ledger.Operation, more ...any) []any {
	op.Result = nonEmpty(op.Result)
	var resolvedBy, resolutionNote, resolutionOutcome, resolvedAt any
	if r := op.Resolution; r != nil {
		resolvedBy, resolutionNote, resolutionOutcome, resolvedAt = text(r.Actor), text(r.Note), text(string(r.Outcome)), micros(r.At)
	}
	args := make([]any, 0, 21+len(more))
	args = append(args,
		op.Key, int64(op.Generation), string(op.Status), text(op.ProviderRef), blobText(op.Result), int64(op.Attempts),
		micros(op.WindowStart), micros(op.KeyExpiresAt), text(op.LeaseOwner), micros(op.LeaseExpiresAt), micros(op.NextCheckAt),
		text(string(op.ReviewCode)), text(op.ReviewReason), micros(op.ReviewAt), resolvedBy, resolutionNote, resolutionOutcome,
		resolvedAt, micros(op.UpdatedAt), micros(op.FinishedAt),
		op.ID)
	return append(args, more...)
}

const attemptColumns = `operation_id, number, key, started_at, finished_at, may_have_reached,
	outcome, http_status, provider_request_id, error, replayed`

// attemptRow is opRow for an attempt row, with room for the one extra
// column attemptForFinish reads after attemptColumns.
type attemptRow struct {
	operationID, key                    string
	number, mayHaveReached, replayed    int64
	startedAt, finishedAt, httpStatus   sql.NullInt64
	outcome, providerRequestID, errText sql.NullString
	extra                               sql.NullInt64
	dest                                []any // attemptColumns, then extra
}

var attemptRows = sync.Pool{New: func() any {
	r := new(attemptRow)
	r.dest = []any{&r.operationID, &r.number, &r.key, &r.startedAt, &r.finishedAt, &r.mayHaveReached,
		&r.outcome, &r.httpStatus, &r.providerRequestID, &r.errText, &r.replayed, &r.extra}
	return r
}}

func putAttemptRow(r *attemptRow) {
	*r = attemptRow{dest: r.dest}
	attemptRows.Put(r)
}

func scanAttempt(sc scanner) (ledger.Attempt, error) {
	r := attemptRows.Get().(*attemptRow)
	defer putAttemptRow(r)
	if err := sc.Scan(r.dest[:len(r.dest)-1]...); err != nil {
		return ledger.Attempt{}, err
	}
	return r.attempt()
}

// scanAttemptExtra is scanAttempt for a row with one more integer column,
// returned as extra.
func scanAttemptExtra(sc scanner) (a ledger.Attempt, extra sql.NullInt64, err error) {
	r := attemptRows.Get().(*attemptRow)
	defer putAttemptRow(r)
	if err := sc.Scan(r.dest...); err != nil {
		return ledger.Attempt{}, sql.NullInt64{}, err
	}
	a, err = r.attempt()
	return a, r.extra, err
}

func (r *attemptRow) attempt() (ledger.Attempt, error) {
	a := ledger.Attempt{OperationID: r.operationID, Key: r.key}
	a.Number = int(r.number)
	a.StartedAt = fromMicros(r.startedAt)
	a.FinishedAt = fromMicros(r.finishedAt)
	a.MayHaveReached = r.mayHaveReached != 0
	a.Replayed = r.replayed != 0
	if r.outcome.Valid && r.outcome.String != "" {
		c, err := ledgerdriver.ParseOutcomeClass(r.outcome.String)
		if err != nil {
			return ledger.Attempt{}, ledgerdriver.Corrupt(a.OperationID, fmt.Sprintf("attempts[%d].outcome", a.Number), err)
		}
		a.Outcome = c
	}
	a.HTTPStatus = int(r.httpStatus.Int64)
	a.ProviderRequestID = r.providerRequestID.String
	a.Error = r.errText.String
	return a, nil
}

// tombstoneColumns lists payonce_tombstones in the order scanTombstone reads
// them and insertTombstone writes them.
const tombstoneColumns = `id, key, provider, kind, refs, generation, fingerprint, status,
	provider_ref, result, amount, currency, key_ttl_ms, created_at, finished_at, tombstoned_at`

// insertTombstone records t (ledgerdriver.TombstoneOf). A tombstone and a live row
// of one ID never coexist, so the conflict cannot happen; should it, the
// newest record of the ID wins.
func insertTombstone(ctx context.Context, q querier, t ledgerdriver.Tombstone) error {
	refs, err := json.Marshal(t.References)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT OR REPLACE INTO payonce_tombstones (`+tombstoneColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Key, t.Provider, t.Kind, string(refs), t.Generation, t.Fingerprint, string(t.Status),
		text(t.ProviderRef), blobText(t.Result), t.Amount, t.Currency, ttlMillis(t.KeyTTL),
		micros(t.CreatedAt), micros(t.FinishedAt), micros(t.TombstonedAt))
	return err
}

// getTombstone reads the tombstone of id; found is false when there is none.
func getTombstone(ctx context.Context, q querier, id string) (t ledgerdriver.Tombstone, found bool, err error) {
	var (
		refs, status                       string
		generation, amount, ttlMS          int64
		providerRef, result                sql.NullString
		createdAt, finishedAt, tombstoneAt sql.NullInt64
	)
	err = q.QueryRowContext(ctx, `SELECT `+tombstoneColumns+` FROM payonce_tombstones WHERE id = ?`, id).Scan(
		&t.ID, &t.Key, &t.Provider, &t.Kind, &refs, &generation, &t.Fingerprint, &status,
		&providerRef, &result, &amount, &t.Currency, &ttlMS, &createdAt, &finishedAt, &tombstoneAt)
	if errors.Is(err, sql.ErrNoRows) {
		return ledgerdriver.Tombstone{}, false, nil
	}
	if err != nil {
		return ledgerdriver.Tombstone{}, false, err
	}
	if t.Status, err = ledgerdriver.ParseStatus(status); err != nil || !t.Status.Final() {
		if err == nil {
			err = fmt.Errorf("%s is not a final status", status)
		}
		return ledgerdriver.Tombstone{}, false, ledgerdriver.Corrupt(id, "tombstone status", err)
	}
	if err := json.Unmarshal([]byte(refs), &t.References); err != nil {
		return ledgerdriver.Tombstone{}, false, ledgerdriver.Corrupt(id, "tombstone refs", err)
	}
	t.Generation = int(generation)
	t.ProviderRef = providerRef.String
	t.Result = fromBlobText(result)
	t.Amount = amount
	t.KeyTTL = time.Duration(ttlMS) * time.Millisecond
	t.CreatedAt = fromMicros(createdAt)
	t.FinishedAt = fromMicros(finishedAt)
	t.TombstonedAt = fromMicros(tombstoneAt)
	return t, true, nil
}

// nullInt stores 0 (not set) as NULL.
func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return int64(n)
}
