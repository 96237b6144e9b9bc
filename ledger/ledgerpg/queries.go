package ledgerpg

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// queries holds the SQL of one Store with its schema's quoted table names
// filled in, built once by New.
type queries struct {
	schema          string // quoted schema name
	migrationsTable string
	ops             string
	attempts        string
	events          string

	insertOp            string
	insertOpWithAttempt string
	selectOp            string
	lockOp              string
	keyTaken            string
	save                string
	insertAttempt       string
	attemptForFinish    string
	finishAttempt       string
	claimDue            string
	getWithAttempts     string
	listOps             string
	cleanupBatch        string
	oldestFinished      string
	insertEvents        string
	eventsOf            string
}

func newQueries(schema string) queries {
	q := queries{
		schema:          pgx.Identifier{schema}.Sanitize(),
		migrationsTable: pgx.Identifier{schema, "payonce_schema_migrations"}.Sanitize(),
		ops:             pgx.Identifier{schema, "payonce_operations"}.Sanitize(),
		attempts:        pgx.Identifier{schema, "payonce_attempts"}.Sanitize(),
		events:          pgx.Identifier{schema, "payonce_events"}.Sanitize(),
	}
	cols := strings.Join(opColumns, ", ")
	oCols := prefixed("o.", opColumns)
	aCols := prefixed("a.", attemptColumns)
	placeholders := make([]string, len(opColumns))
	for i := range placeholders {
		placeholders[i] = fmt.Sprintf("$%d", i+1)
	}
	r := strings.NewReplacer("{{ops}}", q.ops, "{{attempts}}", q.attempts, "{{events}}", q.events, "{{cols}}", cols, "{{o.cols}}", oCols, "{{a.cols}}", aCols)

	// No conflict target: a new ID whose key is another operation's key is
	// not inserted either, and the caller then tells the two cases apart.
	// (With "ON CONFLICT (id)", two concurrent inserts of one new operation
	// can fail on the key index instead of doing nothing.)
	q.insertOp = r.Replace(`INSERT INTO {{ops}} ({{cols}}) VALUES (` + strings.Join(placeholders, ", ") + `) ON CONFLICT DO NOTHING`)
	n := len(opColumns)
	q.insertOpWithAttempt = r.Replace(fmt.Sprintf(`WITH op AS (%s RETURNING id),
		attempt AS (
			INSERT INTO {{attempts}} (operation_id, number, key, started_at, may_have_reached)
			SELECT id, $%d, $%d, $%d, true FROM op
		)
		SELECT count(*) FROM op`, q.insertOp, n+1, n+2, n+3))
	q.selectOp = r.Replace(`SELECT {{cols}} FROM {{ops}} WHERE id = $1`)
	q.lockOp = q.selectOp + ` FOR UPDATE`
	q.keyTaken = r.Replace(`SELECT EXISTS (SELECT 1 FROM {{ops}} WHERE key = $1)`)
	q.save = r.Replace(`UPDATE {{ops}} SET
		key = $2, generation = $3, status = $4, provider_ref = $5, result = $6, attempts = $7,
		window_start = $8, key_expires_at = $9, lease_owner = $10, lease_expires_at = $11,
		next_check_at = $12, review_reason = $13, review_at = $14,
		resolved_by = $15, resolution_note = $16, resolution_outcome = $17, resolved_at = $18,
		updated_at = $19, finished_at = $20
		WHERE id = $1`)
	q.insertAttempt = r.Replace(`INSERT INTO {{attempts}} (operation_id, number, key, started_at, may_have_reached)
		VALUES ($1, $2, $3, $4, true)`)
	// The attempt being finished, and the start of the earliest other
	// attempt under the same key that may have reached the provider: where
	// the key window starts if this attempt turns out never to have left
	// (what ledger.ApplyFinish needs).
	q.attemptForFinish = r.Replace(`SELECT {{a.cols}},
		(SELECT min(e.started_at) FROM {{attempts}} e
		  WHERE e.operation_id = a.operation_id AND e.key = a.key AND e.may_have_reached AND e.number <> a.number)
		FROM {{attempts}} a WHERE a.operation_id = $1 AND a.number = $2`)
	q.finishAttempt = r.Replace(`UPDATE {{attempts}} SET
		finished_at = $3, may_have_reached = $4, outcome = $5, http_status = $6, provider_request_id = $7, error = $8
		WHERE operation_id = $1 AND number = $2`)
	// SKIP LOCKED lets concurrent reconcilers share the due rows without
	// waiting on each other; the lock and the lease update are one
	// statement, so no two callers can lease the same row.
	q.claimDue = r.Replace(`WITH due AS (
			SELECT id, next_check_at FROM {{ops}}
			WHERE next_check_at <= $1
			  AND (lease_expires_at IS NULL OR lease_expires_at <= $1)
			  AND status = ANY($2::text[])
			  AND ($3::text = '' OR provider = $3)
			ORDER BY next_check_at, id
			LIMIT $4
			FOR UPDATE SKIP LOCKED
		)
		UPDATE {{ops}} AS o SET
			status = CASE WHEN o.status = 'in_flight' THEN 'unknown' ELSE o.status END,
			lease_owner = $5, lease_expires_at = $6, next_check_at = $6, updated_at = $1
		FROM due WHERE o.id = due.id
		RETURNING {{o.cols}}, due.next_check_at`)
	// One statement, so the operation and its attempts come from one snapshot.
	q.getWithAttempts = r.Replace(`SELECT {{o.cols}}, {{a.cols}}
		FROM {{ops}} o LEFT JOIN {{attempts}} a ON a.operation_id = o.id
		WHERE o.id = $1 ORDER BY a.number`)
	q.listOps = r.Replace(`SELECT {{cols}} FROM {{ops}}`)
	// The status list matches the cleanup index's predicate word for word
	// so that the planner can use it.
	q.cleanupBatch = r.Replace(`WITH doomed AS (
			SELECT id FROM {{ops}}
			WHERE status IN ('succeeded', 'failed')
			  AND finished_at < $1
			  AND (key_expires_at IS NULL OR key_expires_at <= $2)
			ORDER BY finished_at
			LIMIT $3
			FOR UPDATE SKIP LOCKED
		)
		DELETE FROM {{ops}} AS o USING doomed WHERE o.id = doomed.id`)
	q.oldestFinished = r.Replace(`SELECT min(finished_at) FROM {{ops}} WHERE status IN ('succeeded', 'failed')`)
	// The events of one call in one statement, numbered after the
	// operation's last one. Every caller holds the operation's row lock, so
	// no other transaction numbers events of the same operation meanwhile.
	q.insertEvents = r.Replace(`INSERT INTO {{events}} (operation_id, seq, at, kind, actor, detail)
		SELECT $1::text, last.seq + e.ord, $2::timestamptz, e.kind, e.actor, NULLIF(e.detail, '')
		FROM (SELECT coalesce(max(seq), 0) AS seq FROM {{events}} WHERE operation_id = $1::text) AS last,
			unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS e(kind, actor, detail, ord)`)
	// One statement, so that "no such operation" (no row) and "no events"
	// (one row of NULLs) come from one snapshot.
	q.eventsOf = r.Replace(`SELECT e.seq, e.at, e.kind, e.actor, e.detail
		FROM {{ops}} o LEFT JOIN {{events}} e ON e.operation_id = o.id
		WHERE o.id = $1 ORDER BY e.seq`)
	return q
}

func prefixed(prefix string, cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = prefix + c
	}
	return strings.Join(out, ", ")
}

// where builds a WHERE clause with numbered placeholders.
type where struct {
	conds []string
	args  []any
}

// add appends a condition whose single "?" stands for arg.
func (w *where) add(cond string, arg any) {
	w.args = append(w.args, arg)
	w.conds = append(w.conds, strings.Replace(cond, "?", fmt.Sprintf("$%d", len(w.args)), 1))
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}
