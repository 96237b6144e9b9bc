package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// findingSQL holds the statements of the audit findings (migration 012).
type findingSQL struct {
	table  string
	upsert string
	ack    string
	get    string
	list   string
	stats  string
}

func newFindingSQL(schema string) findingSQL {
	t := pgx.Identifier{schema, "payonce_audit_findings"}.Sanitize()
	return findingSQL{
		table: t,
		// One statement for the whole batch: the findings as arrays,
		// unnested into rows. ValidateFindings refused a difference twice
		// in one call (PostgreSQL cannot upsert one row twice in a
		// statement). A finding found again keeps its first_found_at and
		// its acknowledgement: finding it again does not reopen it.
		//
		// The rows are written in key order, whatever the batch's order:
		// two audits recording the same differences at once (the periodic
		// job and an operator's run) each lock the rows they insert or
		// update, and in different orders they deadlock, PostgreSQL
		// failing one audit's whole batch; in one order the second waits
		// for the first. The ids are still drawn in the batch's order (the
		// inner query, not flattened: OFFSET 0), so that the findings of
		// one audit are listed in the order it found them.
		upsert: `INSERT INTO ` + t + ` AS f (id, provider, class, operation_id, provider_ref, detail, period_from, period_to,
				first_found_at, last_found_at, times)
			SELECT s.id, s.provider, s.class, s.operation_id, s.provider_ref, s.detail, s.period_from, s.period_to, $8, $8, 1
			FROM (SELECT nextval(pg_get_serial_sequence($9, 'id')) AS id, u.*
				FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[])
					WITH ORDINALITY AS u(provider, class, operation_id, provider_ref, detail, period_from, period_to, ord)
				ORDER BY u.ord OFFSET 0) AS s
			ORDER BY s.provider COLLATE "C", s.class COLLATE "C", s.operation_id COLLATE "C", s.provider_ref COLLATE "C"
			ON CONFLICT (provider, class, operation_id, provider_ref) DO UPDATE SET
				last_found_at = EXCLUDED.last_found_at, times = f.times + 1, detail = EXCLUDED.detail,
				period_from = EXCLUDED.period_from, period_to = EXCLUDED.period_to`,
		// Only an open finding is acknowledged: the first acknowledgement
		// is the one kept.
		ack: `UPDATE ` + t + ` SET acked_at = $2, acked_by = $3, ack_note = $4
			WHERE id = $1 AND acked_at IS NULL RETURNING ` + sqlstore.FindingColumns,
		get:   `SELECT ` + sqlstore.FindingColumns + ` FROM ` + t + ` WHERE id = $1`,
		list:  `SELECT ` + sqlstore.FindingColumns + ` FROM ` + t,
		stats: sqlstore.FindingStatsStatement(t),
	}
}

// RecordFindings implements ledger.Store: one durable transaction, one
// statement upserting every finding. Nothing is written when a finding is
// invalid (ledgerdriver.ValidateFindings); an empty fs writes nothing.
func (s *Store) RecordFindings(ctx context.Context, fs []ledger.NewFinding, now time.Time) error {
	if err := ledgerdriver.ValidateFindings(fs, now); err != nil {
		return err
	}
	if len(fs) == 0 {
		return nil
	}
	var (
		providers, classes, opIDs, refs, details = make([]string, len(fs)), make([]string, len(fs)), make([]string, len(fs)), make([]string, len(fs)), make([]string, len(fs))
		froms, tos                               = make([]time.Time, len(fs)), make([]time.Time, len(fs))
	)
	for i, f := range fs {
		providers[i], classes[i], opIDs[i], refs[i], details[i] = f.Provider, string(f.Class), f.OperationID, f.ProviderRef, f.Detail
		froms[i], tos[i] = ledgerdriver.UTC(f.PeriodFrom), ledgerdriver.UTC(f.PeriodTo)
	}
	err := s.durable(ctx, "record findings", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, s.q.findings.upsert, providers, classes, opIDs, refs, details, froms, tos, ledgerdriver.UTC(now), s.q.findings.table)
		return err
	})
	return translate("record findings", err)
}

// ListFindings implements ledger.Store: findings ordered by ID, at most
// ledgerdriver.FindingLimit(f), after f.AfterID. IDs come from a sequence
// when a finding is inserted, and audits commit in any order: a page read
// while an audit records may miss one of its findings that commits later
// with a smaller ID than the page's last. An audit's findings are listed
// whole once it returned.
func (s *Store) ListFindings(ctx context.Context, f ledger.FindingFilter) ([]ledger.Finding, error) {
	if err := ledgerdriver.ValidateFindingFilter(f); err != nil {
		return nil, err
	}
	var w where
	sqlstore.FindingConds(f, w.add)
	w.args = append(w.args, ledgerdriver.FindingLimit(f))
	rows, err := s.pool.Query(ctx, fmt.Sprintf("%s%s ORDER BY id LIMIT $%d", s.q.findings.list, w.String(), len(w.args)), w.args...)
	if err != nil {
		return nil, translate("list findings", err)
	}
	out, err := pgx.CollectRows(rows, scanFinding)
	if err != nil {
		return nil, translate("list findings", err)
	}
	if out == nil {
		out = []ledger.Finding{}
	}
	return out, nil
}

// AckFinding implements ledger.Store in one durable transaction: the
// acknowledgement of an open finding, or the finding as it is when it
// was acknowledged already (read by a later statement, which under READ
// COMMITTED sees the acknowledgement that made the update find nothing,
// even one committed while the update waited for it).
func (s *Store) AckFinding(ctx context.Context, p ledger.AckFindingParams) (ledger.Finding, error) {
	if err := ledgerdriver.ValidateAckFinding(p); err != nil {
		return ledger.Finding{}, err
	}
	var got ledger.Finding
	err := s.durable(ctx, "ack finding", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, s.q.findings.ack, p.ID, ledgerdriver.UTC(p.Now), p.Actor, p.Note)
		if err != nil {
			return err
		}
		got, err = pgx.CollectExactlyOneRow(rows, scanFinding)
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		rows, err = tx.Query(ctx, s.q.findings.get, p.ID)
		if err != nil {
			return err
		}
		got, err = pgx.CollectExactlyOneRow(rows, scanFinding)
		if errors.Is(err, pgx.ErrNoRows) {
			return ledgerdriver.FindingNotFound(p.ID)
		}
		return err
	})
	if err != nil {
		return ledger.Finding{}, translate("ack finding", err)
	}
	return got, nil
}

// findingCounts reads Stats.Findings (sqlstore.FindingStatsStatement).
func (s *Store) findingCounts(ctx context.Context) ([]ledger.FindingCount, error) {
	rows, err := s.pool.Query(ctx, s.q.findings.stats)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.FindingCount, error) {
		var c ledger.FindingCount
		err := row.Scan(&c.Provider, &c.Class, &c.Open)
		return c, err
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
func scanFinding(row pgx.CollectableRow) (ledger.Finding, error) {
	var (
		f                            ledger.Finding
		class                        string
		from, to, first, last, acked pgtype.Timestamptz
		ackedBy, ackNote             pgtype.Text
	)
	if err := row.Scan(&f.ID, &f.Provider, &class, &f.OperationID, &f.ProviderRef, &f.Detail, &from, &to, &first, &last,
		&f.Times, &acked, &ackedBy, &ackNote); err != nil {
		return ledger.Finding{}, err
	}
	c, err := ledgerdriver.ParseFindingClass(class)
	if err != nil {
		return ledger.Finding{}, fmt.Errorf("%w: audit finding %d field class: %v", ledger.ErrCorrupt, f.ID, err)
	}
	f.Class = c
	f.PeriodFrom, f.PeriodTo, f.FirstFoundAt, f.LastFoundAt, f.AckedAt = timeOf(from), timeOf(to), timeOf(first), timeOf(last), timeOf(acked)
	f.AckedBy, f.AckNote = ackedBy.String, ackNote.String
	return f, nil
}
