package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// The statements of the audit findings (migration 012).
const (
	// A finding found again keeps its first_found_at and its
	// acknowledgement: finding it again does not reopen it. (In DO UPDATE,
	// an unqualified column is the existing row's.)
	upsertFindingQuery = `INSERT INTO payonce_audit_findings (provider, class, operation_id, provider_ref, detail,
			period_from, period_to, first_found_at, last_found_at, times)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT (provider, class, operation_id, provider_ref) DO UPDATE SET
			last_found_at = excluded.last_found_at, times = times + 1, detail = excluded.detail,
			period_from = excluded.period_from, period_to = excluded.period_to`
	// Only an open finding is acknowledged: the first acknowledgement is
	// the one kept.
	ackFindingQuery = `UPDATE payonce_audit_findings SET acked_at = ?, acked_by = ?, ack_note = ?
		WHERE id = ? AND acked_at IS NULL RETURNING ` + sqlstore.FindingColumns
	getFindingQuery   = `SELECT ` + sqlstore.FindingColumns + ` FROM payonce_audit_findings WHERE id = ?`
	listFindingsQuery = `SELECT ` + sqlstore.FindingColumns + ` FROM payonce_audit_findings`
)

// findingStatsQuery is Stats.Findings' statement
// (sqlstore.FindingStatsStatement).
var findingStatsQuery = sqlstore.FindingStatsStatement("payonce_audit_findings")

// RecordFindings implements ledger.Store: every finding upserted in one
// write transaction. Nothing is written when a finding is invalid
// (ledgerdriver.ValidateFindings); an empty fs writes nothing.
func (s *Store) RecordFindings(ctx context.Context, fs []ledger.NewFinding, now time.Time) error {
	if err := ledgerdriver.ValidateFindings(fs, now); err != nil {
		return fail("record findings", err)
	}
	if len(fs) == 0 {
		return nil
	}
	at := micros(now)
	err := s.write(ctx, func(c *sql.Conn) error {
		for _, f := range fs {
			if _, err := c.ExecContext(ctx, upsertFindingQuery, f.Provider, string(f.Class), f.OperationID, f.ProviderRef, f.Detail,
				micros(f.PeriodFrom), micros(f.PeriodTo), at, at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fail("record findings", err)
	}
	return nil
}

// ListFindings implements ledger.Store: findings ordered by ID, at most
// ledgerdriver.FindingLimit(f), after f.AfterID. SQLite's one writer
// commits IDs in order, so keyset paging never skips a finding.
func (s *Store) ListFindings(ctx context.Context, f ledger.FindingFilter) ([]ledger.Finding, error) {
	if err := ledgerdriver.ValidateFindingFilter(f); err != nil {
		return nil, fail("list findings", err)
	}
	var w where
	sqlstore.FindingConds(f, w.add)
	query := listFindingsQuery + w.String() + " ORDER BY id LIMIT ?"
	args := append(w.args, ledgerdriver.FindingLimit(f))
	var out []ledger.Finding
	err := s.read(ctx, func(c *sql.Conn) error {
		var err error
		out, err = collect(ctx, c, scanFinding, query, args...)
		return err
	})
	if err != nil {
		return nil, fail("list findings", err)
	}
	if out == nil {
		out = []ledger.Finding{}
	}
	return out, nil
}

// AckFinding implements ledger.Store in one write transaction: the
// acknowledgement of an open finding, or the finding as it is when it was
// acknowledged already.
func (s *Store) AckFinding(ctx context.Context, p ledger.AckFindingParams) (ledger.Finding, error) {
	if err := ledgerdriver.ValidateAckFinding(p); err != nil {
		return ledger.Finding{}, fail("ack finding", err)
	}
	var got ledger.Finding
	err := s.write(ctx, func(c *sql.Conn) error {
		var err error
		got, err = scanFinding(c.QueryRowContext(ctx, ackFindingQuery, micros(p.Now), p.Actor, p.Note, p.ID))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		got, err = scanFinding(c.QueryRowContext(ctx, getFindingQuery, p.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return ledgerdriver.FindingNotFound(p.ID)
		}
		return err
	})
	if err != nil {
		return ledger.Finding{}, fail("ack finding", err)
	}
	return got, nil
}

// findingCounts reads Stats.Findings on a read connection.
func (s *Store) findingCounts(ctx context.Context) ([]ledger.FindingCount, error) {
	var out []ledger.FindingCount
	err := s.read(ctx, func(c *sql.Conn) error {
		var err error
		out, err = collect(ctx, c, func(sc scanner) (ledger.FindingCount, error) {
			var fc ledger.FindingCount
			err := sc.Scan(&fc.Provider, &fc.Class, &fc.Open)
			return fc, err
		}, findingStatsQuery)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []ledger.FindingCount{}
	}
	return out, ledgerdriver.SortFindingCounts(out)
}

// scanFinding reads one row of sqlstore.FindingColumns. A class the store
// cannot read back is reported as corrupt.
func scanFinding(sc scanner) (ledger.Finding, error) {
	var (
		f                            ledger.Finding
		class                        string
		from, to, first, last, acked sql.NullInt64
		ackedBy, ackNote             sql.NullString
	)
	if err := sc.Scan(&f.ID, &f.Provider, &class, &f.OperationID, &f.ProviderRef, &f.Detail, &from, &to, &first, &last,
		&f.Times, &acked, &ackedBy, &ackNote); err != nil {
		return ledger.Finding{}, err
	}
	c, err := ledgerdriver.ParseFindingClass(class)
	if err != nil {
		return ledger.Finding{}, fmt.Errorf("%w: audit finding %d field class: %v", ledger.ErrCorrupt, f.ID, err)
	}
	f.Class = c
	f.PeriodFrom, f.PeriodTo, f.FirstFoundAt, f.LastFoundAt, f.AckedAt = fromMicros(from), fromMicros(to), fromMicros(first), fromMicros(last), fromMicros(acked)
	f.AckedBy, f.AckNote = ackedBy.String, ackNote.String
	return f, nil
}
