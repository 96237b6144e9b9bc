package ledgersqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Begin creates the operation if its ID is new, refuses a different
// fingerprint, takes the lease and, when the operation is pending and
// p.StartAttempt is set, durably records the start of the next attempt, all
// in one write transaction. A terminal operation, or the tombstone of an ID
// that Cleanup removed, is returned with Claimed false and no error; a live
// lease held by another owner returns the operation with an error wrapping
// ledger.ErrInProgress. When waiting for the write lock took the lease past
// its end, nothing is written and the error wraps ledger.ErrLeaseLost.
func (s *Store) Begin(ctx context.Context, p ledger.BeginParams) (ledger.BeginResult, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	start := time.Now() // the lease check measures the real time from here
	if err := ledgerdriver.ValidateBegin(p); err != nil {
		return ledger.BeginResult{}, fail("begin", err)
	}
	var res ledger.BeginResult
	err := s.write(ctx, func(conn *sql.Conn) error {
		c := quietTx(ctx, conn)
		op, created, err := recordOrFind(ctx, c, p.Op, p.Now)
		if err != nil {
			return err
		}
		res, err = ledgerdriver.ApplyBegin(op, p)
		res.Created = created
		if err != nil || !res.Claimed {
			return err // a terminal operation or a tombstone: the recorded result is the answer
		}
		if res.Attempt != nil {
			if err := insertAttempt(ctx, c, *res.Attempt); err != nil {
				return err
			}
		}
		if err := saveOp(ctx, c, &res.Op); err != nil {
			return err
		}
		// The write lock may have been waited for (another process, a
		// caller's transaction) past the end of the lease granted here.
		return sqlstore.LeaseGranted(p.Op.ID, p.Now, p.LeaseUntil, start)
	})
	if err != nil {
		if errors.Is(err, ledger.ErrInProgress) {
			// res.Op is kept so that the caller can see who holds the lease.
			return ledger.BeginResult{Op: res.Op}, fail("begin", err)
		}
		return ledger.BeginResult{}, fail("begin", err)
	}
	if res.Created && res.Attempt != nil {
		// Finish records this attempt's outcome without reading the row
		// back (revision.go): the row is asStored(fresh) as ApplyBegin
		// changed it and saveOp wrote it, the attempt as insertAttempt
		// wrote it (its outcome columns NULL, read back as zero values).
		a := *res.Attempt
		s.keep(revision{op: res.Op, att: &a, rev: revisionAfterBegin})
	}
	return res, nil
}

// CreateOrGet records op as pending, due for background work at now, if its
// ID is new; otherwise it returns the recorded operation unchanged. An
// existing ID with another fingerprint returns ledger.ErrFingerprintMismatch.
// It is CreateOrGetTx in a write transaction of its own.
func (s *Store) CreateOrGet(ctx context.Context, op ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	if err := ledgerdriver.ValidateCreate(op, now); err != nil {
		return ledger.Operation{}, false, fail("create", err)
	}
	var (
		got     ledger.Operation
		created bool
	)
	err := s.write(ctx, func(c *sql.Conn) error {
		var err error
		got, created, err = createOrGet(ctx, c, op, ledgerdriver.UTC(now))
		return err
	})
	if err != nil {
		return ledger.Operation{}, false, fail("create", err)
	}
	return got, created, nil
}

// CreateOrGetTx is CreateOrGet inside the caller's own transaction: op is
// recorded (pending, due at now for background work) if its ID is new, or
// the recorded operation is returned unchanged; created reports which.
// Enqueue a payment this way in the transaction that writes the business
// data it pays for (an order, a refund request): both commit together, or,
// when tx is rolled back, neither exists and nothing is ever sent. Nothing
// is sent by this call in any case: background work (ClaimDue) sends the
// operation once tx has committed.
//
// tx must be a write transaction on the same database file as the Store,
// from a *sql.DB opened with the modernc.org/sqlite driver: the one given to
// New, or, with Open, a second *sql.DB on the same path. Open that one with
// a busy timeout and immediate transactions, e.g.
//
//	sql.Open("sqlite", "file:/path/payonce.db?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
//
// so that BeginTx takes the write lock at once (waiting up to the busy
// timeout for another writer, this Store included). A deferred transaction
// (SQLite's default BEGIN) that has read before it writes cannot wait for
// the write lock: its first write fails with SQLITE_BUSY when another
// connection committed since its read. While tx is open it holds the file's
// write lock: this Store's own writes (from any goroutine) wait for it, up to
// their busy timeout, so keep tx short and never call the Store's other
// write methods from the goroutine that holds tx. Reads (Get, List, ...) do
// not wait, and do not see the operation before tx commits. The durability
// of the commit is that of tx's connection (PRAGMA synchronous); nothing has
// been sent for the operation before it is committed.
//
// An ID that Cleanup removed is not recorded again: its tombstone is
// returned (Operation.Tombstone, created false) and tx keeps nothing of this
// call.
//
// Errors: validation errors (ErrInvalid) before tx is used;
// ErrFingerprintMismatch when the ID is recorded (or tombstoned) with
// another fingerprint and ErrKeyConflict when its key belongs to another
// operation. These leave
// tx usable, with nothing written by this call (SQLite undoes only the
// failed statement): commit or roll back as the business logic decides. Any
// other error (SQLITE_BUSY, a missing schema, a cancelled context) leaves tx
// in a state to roll back.
func (s *Store) CreateOrGetTx(ctx context.Context, tx *sql.Tx, op ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	// Early (the caller commits later): the consumer's poll, or its Nudge,
	// finds the entry.
	defer s.feedSignal.Notify()
	if tx == nil {
		return ledger.Operation{}, false, fail("create in caller's transaction", &ledger.ValidationError{Field: "tx", Problem: "must not be nil: pass the caller's *sql.Tx"})
	}
	if err := ledgerdriver.ValidateCreate(op, now); err != nil {
		return ledger.Operation{}, false, fail("create in caller's transaction", err)
	}
	got, created, err := createOrGet(ctx, tx, op, ledgerdriver.UTC(now))
	if err != nil {
		return ledger.Operation{}, false, fail("create in caller's transaction", err)
	}
	return got, created, nil
}

// createOrGet is CreateOrGet on q, inside a write transaction. A key taken
// by another operation fails the insert statement alone; a fingerprint
// mismatch is found in Go after a read: neither leaves anything written.
func createOrGet(ctx context.Context, q querier, op ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	got, created, err := recordOrFind(ctx, q, op, now)
	if err != nil {
		return ledger.Operation{}, false, err
	}
	if err := ledgerdriver.CheckFingerprint(got, op.Fingerprint); err != nil {
		return ledger.Operation{}, false, err
	}
	return got, created, nil
}

// recordOrFind records n (ledgerdriver.ApplyCreate) if its ID has neither an
// operation row nor a tombstone, inside a write transaction, and returns the
// operation as stored; otherwise it returns the recorded operation, or the
// tombstone's Operation, with created false and nothing written.
//
// Why the tombstone is checked: an ID that Cleanup removed is not new. A
// late duplicate recorded afresh would be sent again under a key the
// provider has forgotten: a second charge. insertOp checks it in the
// statement that inserts, so nothing can come between the check and the
// insert (and the write transaction holds SQLite's one write lock anyway).
func recordOrFind(ctx context.Context, q querier, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error) {
	fresh := ledgerdriver.ApplyCreate(n, now)
	created, err := insertOp(ctx, q, fresh)
	if err != nil {
		// A key another operation holds (the statement alone failed), or a
		// failure. A tombstoned ID inserts nothing, so it cannot conflict.
		return ledger.Operation{}, false, err
	}
	if created {
		// The row just inserted holds fresh, as getOp would read it back:
		// one read fewer on every new operation.
		return asStored(fresh), true, nil
	}
	op, err := getOp(ctx, q, n.ID)
	if errors.Is(err, ledger.ErrNotFound) {
		// Not inserted and no row: the ID's tombstone stopped the insert.
		tomb, found, terr := getTombstone(ctx, q, n.ID)
		if terr != nil || !found {
			if terr == nil {
				terr = err
			}
			return ledger.Operation{}, false, terr
		}
		return tomb.Operation(), false, nil
	}
	return op, false, err
}

// asStored returns op, a new operation that insertOp wrote, as scanOp reads
// its row back. The only lossy column is key_ttl_ms (whole milliseconds).
// Every other one holds its value exactly: the text was validated as UTF-8
// without NUL bytes (ledgerdriver.ValidateOperation), which SQLite's STRICT
// TEXT columns and the refs JSON keep byte for byte; References and Request
// are non-empty, so none reads back as nil where op holds an empty value;
// times are already at microsecond precision in UTC (ledgerdriver.UTC); and the
// columns insertOp leaves out have no default, so they read back NULL, that
// is the zero value op holds.
func asStored(op ledger.Operation) ledger.Operation {
	op.KeyTTL = time.Duration(ttlMillis(op.KeyTTL)) * time.Millisecond
	return op
}

// insertOp records op, a new operation (ledgerdriver.ApplyCreate), unless its ID
// exists or has a tombstone (created false, nothing written). A key already
// used by another operation fails with a unique violation, which fail turns
// into ledger.ErrKeyConflict.
func insertOp(ctx context.Context, c querier, op ledger.Operation) (bool, error) {
	refs, err := json.Marshal(op.References)
	if err != nil {
		return false, err
	}
	res, err := c.ExecContext(ctx, `INSERT INTO payonce_operations
		(id, key, provider, kind, refs, generation, fingerprint, request, status, attempts,
		 key_ttl_ms, next_check_at, created_at, updated_at, payment_ref)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
		WHERE NOT EXISTS (SELECT 1 FROM payonce_tombstones WHERE id = ?)
		ON CONFLICT (id) DO NOTHING`,
		op.ID, op.Key, op.Provider, op.Kind, string(refs), int64(op.Generation), op.Fingerprint, string(op.Request), string(op.Status), int64(op.Attempts),
		ttlMillis(op.KeyTTL), micros(op.NextCheckAt), micros(op.CreatedAt), micros(op.UpdatedAt), text(op.PaymentRef),
		op.ID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// insertAttempt records a started attempt (ledgerdriver.ApplyBegin,
// ledgerdriver.ApplyStartAttempt).
func insertAttempt(ctx context.Context, c querier, a ledger.Attempt) error {
	_, err := c.ExecContext(ctx, `INSERT INTO payonce_attempts
		(operation_id, number, key, started_at, may_have_reached) VALUES (?, ?, ?, ?, ?)`,
		a.OperationID, int64(a.Number), a.Key, micros(a.StartedAt), boolInt(a.MayHaveReached))
	return err
}
