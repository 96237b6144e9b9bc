package ledgerpg

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/payonce/payonce/ledger/internal/sqlstore"
)

// queries holds the SQL of one Store with its schema's quoted table names
// filled in, built once by New.
type queries struct {
	schema          string // quoted schema name
	migrationsTable string
	ops             string
	attempts        string
	events          string
	tombstones      string
	webhooks        string
	outcomes        string
	feed            string

	insertOp            string
	insertOpWithAttempt string
	createdGuard        string
	refusedInsert       string
	createdCheck        string
	deleteCreated       string
	selectOp            string
	lockOp              string
	whyNotInserted      string
	selectTombstone     string
	countEvents         string
	tombstonesByRef     string
	tombstoneExists     string
	insertTombstone     string
	save                string
	insertAttempt       string
	attemptForFinish    string
	finishAttempt       string
	finishFast          string
	finishFastNoAttempt string
	startAttemptFast    string
	claimDue            string
	getWithAttempts     string
	listOps             string
	cleanupBatch        string
	purgeTombstones     string
	cleanupStats        string
	insertEvents        string
	eventsOf            string
	insertWebhook       string
	webhookOutcomes     string
	lockOpOfKind        string
	lockByProviderRef   string
	lockByPaymentRef    string
	latestAttempt       string
	earlier             string
	insertOutcomes      string
	deleteTombstone     string
	dropCreatedEntry    string
	listWebhooks        string
	purgeInbox          string
	stats               string
	statsSettled        string
	feedPage            string
	feedBeyond          string
	feedDurable         string
	purgeFeed           string
	findings            findingSQL
}

// newQueries builds the SQL of a store on schema; lazyOutcomes is
// Config.DurableOutcomes reversed (the synchronous_commit of Finish).
func newQueries(schema string, lazyOutcomes bool) queries {
	q := queries{
		schema:          pgx.Identifier{schema}.Sanitize(),
		migrationsTable: pgx.Identifier{schema, "payonce_schema_migrations"}.Sanitize(),
		ops:             pgx.Identifier{schema, "payonce_operations"}.Sanitize(),
		attempts:        pgx.Identifier{schema, "payonce_attempts"}.Sanitize(),
		events:          pgx.Identifier{schema, "payonce_events"}.Sanitize(),
		tombstones:      pgx.Identifier{schema, "payonce_tombstones"}.Sanitize(),
		webhooks:        pgx.Identifier{schema, "payonce_webhooks"}.Sanitize(),
		outcomes:        pgx.Identifier{schema, "payonce_webhook_outcomes"}.Sanitize(),
		feed:            pgx.Identifier{schema, "payonce_feed"}.Sanitize(),
	}
	cols := strings.Join(opColumns, ", ")
	oCols := prefixed("o.", opColumns)
	aCols := prefixed("a.", attemptColumns)
	tCols := prefixed("t.", tombstoneColumns)
	placeholders := make([]string, len(opColumns))
	for i := range placeholders {
		placeholders[i] = fmt.Sprintf("$%d", i+1)
	}
	tPlaceholders := make([]string, len(tombstoneColumns))
	tUpdates := make([]string, 0, len(tombstoneColumns)-1)
	for i, c := range tombstoneColumns {
		tPlaceholders[i] = fmt.Sprintf("$%d", i+1)
		if c != "id" {
			tUpdates = append(tUpdates, c+" = EXCLUDED."+c)
		}
	}
	r := strings.NewReplacer("{{ops}}", q.ops, "{{attempts}}", q.attempts, "{{events}}", q.events, "{{tombstones}}", q.tombstones,
		"{{webhooks}}", q.webhooks, "{{outcomes}}", q.outcomes, "{{feed}}", q.feed,
		"{{feedseq}}", pgx.Identifier{schema, "payonce_feed_seq"}.Sanitize(),
		"{{feeddurable}}", pgx.Identifier{schema, "payonce_feed_durable"}.Sanitize(),
		"{{consumers}}", pgx.Identifier{schema, "payonce_feed_consumers"}.Sanitize(),
		"{{cols}}", cols, "{{o.cols}}", oCols, "{{a.cols}}", aCols, "{{t.cols}}", tCols, "{{tomb.cols}}", strings.Join(tombstoneColumns, ", "))

	// No conflict target: a new ID whose key is another operation's key is
	// not inserted either, and the caller then tells the two cases apart.
	// (With "ON CONFLICT (id)", two concurrent inserts of one new operation
	// can fail on the key index instead of doing nothing.)
	q.insertOp = r.Replace(`INSERT INTO {{ops}} ({{cols}}) VALUES (` + strings.Join(placeholders, ", ") + `) ON CONFLICT DO NOTHING`)
	n := len(opColumns)
	// With the row version of the insert (see revision.go; 0 when nothing
	// was inserted).
	q.insertOpWithAttempt = r.Replace(fmt.Sprintf(`WITH op AS (%s RETURNING id, xmin),
		attempt AS (
			INSERT INTO {{attempts}} (operation_id, number, key, started_at, may_have_reached)
			SELECT id, $%d, $%d, $%d, true FROM op
		)
		SELECT count(*), coalesce(max(xmin::text::bigint), 0) FROM op`, q.insertOp, n+1, n+2, n+3))
	// Begin's one-trip path runs this in its transaction (READ COMMITTED,
	// see oneTrip) right after the insert. It fails the statement
	// (division by zero, SQLSTATE 22012), and with it the whole
	// transaction: the insert, its attempt and its feed entry are rolled
	// back, when this transaction inserted the row and the ID has a
	// tombstone or the lease would have lapsed. A later statement:
	// under READ COMMITTED its snapshot sees a Cleanup that the insert
	// waited for (the insert's own snapshot, taken before the wait, does
	// not). Only an insert of this transaction is refused (xmin is this
	// transaction's ID): a live row found by a conflicting insert is left
	// to beginExisting. Refusing, not deleting: the common case runs no
	// DELETE (each would set up the table, its indexes and triggers for
	// nothing), and what the refusal meant is read after it
	// (refusedInsert). $2 is the time in microseconds the lease had left
	// when the transaction was sent. The divisor is not a constant, so the
	// planner cannot fold it into an error at plan time.
	// It also sets the transaction's synchronous_commit (at least on: a
	// Begin is durable before the request is sent), read at COMMIT.
	q.createdGuard = r.Replace(`SELECT ` + syncOnExpr + `, 1 / (CASE WHEN (clock_timestamp() >= transaction_timestamp() + $2::bigint * interval '1 microsecond'
		                OR EXISTS (SELECT 1 FROM {{tombstones}} t WHERE t.id = $1))
		           AND EXISTS (SELECT 1 FROM {{ops}} o
		                       WHERE o.id = $1 AND o.xmin::text::bigint = txid_current_if_assigned() % 4294967296)
		          THEN 0 ELSE 1 END)`)
	// Why Begin's one trip was refused (it wrote nothing): the tombstone of
	// the ID, if any (createdGuard).
	q.refusedInsert = r.Replace(`SELECT {{t.cols}}
		FROM (SELECT 1) AS one LEFT JOIN {{tombstones}} t ON t.id = $1`)
	// CreateOrGet's check, sent with its insert (a later statement of the
	// same transaction, as above): the tombstone of the ID, if any, and how
	// many rows of the ID the transaction's snapshot sees. Two (this
	// transaction's and an older one) means the caller's snapshot predates
	// a Cleanup that has since deleted the older row and written a
	// tombstone this snapshot cannot see: REPEATABLE READ or SERIALIZABLE.
	q.createdCheck = r.Replace(`SELECT (SELECT count(*) FROM {{ops}} WHERE id = $1), {{t.cols}}
		FROM (SELECT 1) AS one LEFT JOIN {{tombstones}} t ON t.id = $1`)
	// With the feed entry the insert wrote in this transaction: the row
	// the insert's trigger wrote (same xmin as the operation row: also
	// when a caller's savepoint made it a subtransaction, whose id is not
	// pg_current_xact_id()), among the positions it can have (at least
	// its own id, migration 008; the primary key finds them). Entries of
	// an earlier operation of the same ID, deleted by Cleanup, stay.
	q.deleteCreated = r.Replace(`WITH undone AS (DELETE FROM {{ops}} WHERE id = $1)
		DELETE FROM {{feed}} WHERE pos >= pg_current_xact_id() AND operation_id = $1 AND xmin = (SELECT o.xmin FROM {{ops}} o WHERE o.id = $1)`)
	q.selectOp = r.Replace(`SELECT {{cols}} FROM {{ops}} WHERE id = $1`)
	q.lockOp = q.selectOp + ` FOR UPDATE`
	// Why an insert did nothing though the ID has no row: a tombstone, the
	// key of another operation, or neither (the row was deleted since).
	q.whyNotInserted = r.Replace(`SELECT EXISTS (SELECT 1 FROM {{ops}} WHERE key = $2), {{t.cols}}
		FROM (SELECT 1) AS one LEFT JOIN {{tombstones}} t ON t.id = $1`)
	q.selectTombstone = r.Replace(`SELECT {{t.cols}} FROM {{tombstones}} t WHERE t.id = $1`)
	q.countEvents = r.Replace(`SELECT count(*) FROM {{events}} WHERE operation_id = $1`)
	// provider_ref = $3 implies NOT NULL: the partial index of migration 009.
	q.tombstonesByRef = r.Replace(`SELECT t.id FROM {{tombstones}} t WHERE t.provider = $1 AND t.kind = $2 AND t.provider_ref = $3 ORDER BY t.id LIMIT 2`)
	q.tombstoneExists = r.Replace(`SELECT EXISTS (SELECT 1 FROM {{tombstones}} WHERE id = $1)`)
	// A tombstone and a live row of one ID never coexist, so the conflict
	// cannot happen; should it, the newest record of the ID wins.
	q.insertTombstone = r.Replace(`INSERT INTO {{tombstones}} ({{tomb.cols}}) VALUES (` + strings.Join(tPlaceholders, ", ") + `)
		ON CONFLICT (id) DO UPDATE SET ` + strings.Join(tUpdates, ", "))
	q.save = r.Replace(`UPDATE {{ops}} SET
		key = $2, generation = $3, status = $4, provider_ref = $5, result = $6, attempts = $7,
		window_start = $8, key_expires_at = $9, lease_owner = $10, lease_expires_at = $11,
		next_check_at = $12, review_reason = $13, review_at = $14,
		resolved_by = $15, resolution_note = $16, resolution_outcome = $17, resolved_at = $18,
		updated_at = $19, finished_at = $20, review_code = $21
		WHERE id = $1`)
	q.insertAttempt = r.Replace(`INSERT INTO {{attempts}} (operation_id, number, key, started_at, may_have_reached)
		VALUES ($1, $2, $3, $4, true)`)
	// The attempt being finished, and the start of the earliest other
	// attempt under the same key that may have reached the provider: where
	// the key window starts if this attempt turns out never to have left
	// (what ledgerdriver.ApplyFinish needs).
	q.attemptForFinish = r.Replace(`SELECT {{a.cols}},
		(SELECT min(e.started_at) FROM {{attempts}} e
		  WHERE e.operation_id = a.operation_id AND e.key = a.key AND e.may_have_reached AND e.number <> a.number)
		FROM {{attempts}} a WHERE a.operation_id = $1 AND a.number = $2`)
	q.finishAttempt = r.Replace(`UPDATE {{attempts}} SET
		finished_at = $3, may_have_reached = $4, outcome = $5, http_status = $6, provider_request_id = $7, error = $8,
		replayed = $9
		WHERE operation_id = $1 AND number = $2`)
	// The one-statement writes (revision.go). The operation's update is
	// conditional on the row version the decision was taken on, the owner
	// and the status; the attempt and the events are written only when it
	// is (they read its RETURNING), and the statement returns the new row
	// version (NULL when it wrote nothing), a guard column, and the
	// transaction's synchronous_commit, set by the statement itself: these
	// run as an implicit transaction of their own (see writeIfUnchanged).
	// Events are numbered as in insertEvents.
	finishSync := syncOnExpr
	if lazyOutcomes {
		finishSync = syncOffExpr
	}
	fastSave := strings.Replace(q.save, "WHERE id = $1", "WHERE id = $1 AND xmin = $22 AND lease_owner = $23 AND status = $24", 1)
	fastEvents := func(first int) string {
		return fmt.Sprintf(`ev AS (
			INSERT INTO {{events}} (operation_id, seq, at, kind, actor, detail)
			SELECT $1::text, last.seq + e.ord, $%d::timestamptz, e.kind, e.actor, NULLIF(e.detail, '')
			FROM op, (SELECT coalesce(max(seq), 0) AS seq FROM {{events}} WHERE operation_id = $1::text) AS last,
				unnest($%d::text[], $%d::text[], $%d::text[]) WITH ORDINALITY AS e(kind, actor, detail, ord)
		)`, first, first+1, first+2, first+3)
	}
	// Finish of the attempt in flight. The attempt row must be the version
	// the copy holds too: it was written by the same transaction as the
	// operation's row ($22 is both rows' xmin), and nothing else may have
	// touched it (a hand edit would otherwise go unread). Should the
	// attempt's update find it changed after all (a writer that committed
	// between the statement's snapshot and its row lock), the division by
	// zero fails the statement, so that the operation's update is not
	// committed without it; the store then takes the long way.
	q.finishFast = r.Replace(`WITH op AS (` + fastSave + `
			AND EXISTS (SELECT 1 FROM {{attempts}} WHERE operation_id = $1 AND number = $25 AND xmin = $22)
			RETURNING xmin
		),
		att AS (
			UPDATE {{attempts}} a SET
				finished_at = $26, may_have_reached = $27, outcome = $28, http_status = $29, provider_request_id = $30,
				error = $31, replayed = $32
			FROM op WHERE a.operation_id = $1 AND a.number = $25 AND a.xmin = $22
			RETURNING 1
		),
		` + fastEvents(33) + `
		SELECT (SELECT xmin FROM op), CASE WHEN EXISTS (SELECT 1 FROM op) THEN 1 / (SELECT count(*) FROM att) END, ` + finishSync + ``)
	q.finishFastNoAttempt = r.Replace(`WITH op AS (` + fastSave + ` RETURNING xmin),
		` + fastEvents(25) + `
		SELECT (SELECT xmin FROM op), 1, ` + finishSync + ``)
	// StartAttempt: the lease it extends must not have ended before the
	// write ($25: the microseconds it had left when the trip was sent,
	// against the time the transaction has been open; as createdGuard).
	q.startAttemptFast = r.Replace(`WITH op AS (` + fastSave + `
			AND clock_timestamp() < transaction_timestamp() + $25::bigint * interval '1 microsecond'
			RETURNING xmin
		),
		att AS (
			INSERT INTO {{attempts}} (operation_id, number, key, started_at, may_have_reached)
			SELECT $1, $26, $27, $28, true FROM op
		),
		` + fastEvents(29) + `
		SELECT (SELECT xmin FROM op), 1, ` + syncOnExpr + ``)
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
		RETURNING {{o.cols}}, due.next_check_at, o.xmin`)
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
		DELETE FROM {{ops}} AS o USING doomed WHERE o.id = doomed.id
		RETURNING {{o.cols}}`)
	q.purgeTombstones = r.Replace(`DELETE FROM {{tombstones}} WHERE id IN (
			SELECT id FROM {{tombstones}} WHERE finished_at < $1
			ORDER BY finished_at LIMIT $2
			FOR UPDATE SKIP LOCKED)`)
	q.cleanupStats = r.Replace(`SELECT (SELECT min(finished_at) FROM {{ops}} WHERE status IN ('succeeded', 'failed')),
		(SELECT count(*) FROM {{tombstones}})`)
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

	// The inbox. Under READ COMMITTED, an insert that meets a row of the
	// same event inserted by a transaction still open waits for it: when
	// that one commits, this insert does nothing and the next statement
	// (webhookOutcomes, a new snapshot) reads the outcomes it committed;
	// when it rolls back, this one inserts. So concurrent deliveries of one
	// event apply it exactly once, and the others report a duplicate.
	q.insertWebhook = r.Replace(`INSERT INTO {{webhooks}} (provider, event_id, type, occurred_at, received_at, targets)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (provider, event_id) DO NOTHING`)
	q.webhookOutcomes = r.Replace(`SELECT target, operation_id, disposition, from_status, to_status
		FROM {{outcomes}} WHERE provider = $1 AND event_id = $2 ORDER BY seq`)
	// The candidates of a target, locked until the transaction ends, so
	// that no Finish, Resolve or ClaimDue changes them between the read and
	// the write. Several are locked in ID order, so that two events on the
	// same operations queue rather than deadlock; across the targets of one
	// event the order is the targets', and a rare deadlock between two
	// events is broken by PostgreSQL failing one of them, which then
	// records nothing (the provider delivers it again). Literal column
	// names, so that each query matches its partial index.
	q.lockOpOfKind = r.Replace(`SELECT {{cols}} FROM {{ops}} WHERE id = $1 AND provider = $2 AND kind = $3 FOR UPDATE`)
	q.lockByProviderRef = r.Replace(`SELECT {{cols}} FROM {{ops}}
		WHERE provider = $1 AND kind = $2 AND provider_ref = $3 ORDER BY id FOR UPDATE`)
	q.lockByPaymentRef = r.Replace(`SELECT {{cols}} FROM {{ops}}
		WHERE provider = $1 AND kind = $2 AND payment_ref = $3 ORDER BY id FOR UPDATE`)
	q.latestAttempt = r.Replace(`SELECT {{a.cols}} FROM {{attempts}} a WHERE a.operation_id = $1 ORDER BY a.number DESC LIMIT 1`)
	q.earlier = sqlstore.EarlierQuery(func(n int) string { return "$" + strconv.Itoa(n) }, q.attempts, q.events)
	q.insertOutcomes = r.Replace(`INSERT INTO {{outcomes}} (provider, event_id, seq, target, operation_id, disposition, from_status, to_status)
		SELECT $1::text, $2::text, o.ord - 1, o.target, NULLIF(o.op, ''), o.disp, NULLIF(o.from_s, ''), NULLIF(o.to_s, '')
		FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::text[])
			WITH ORDINALITY AS o(target, op, disp, from_s, to_s, ord)`)
	// Reopening a tombstone (RecordWebhook's Reopen step): the tombstone
	// goes in the transaction that inserts the operation again, and the
	// feed's creation entry that insert wrote is taken back (the operation
	// was not created: its entry is the change into review that follows).
	// The entry is this transaction's own, not yet visible to any reader.
	q.deleteTombstone = r.Replace(`DELETE FROM {{tombstones}} WHERE id = $1`)
	// This transaction's own entry: its position is at least its id (migration 008), and xmin names the writer.
	// The entry the same insert wrote: the operation row's writer (its
	// xmin) wrote it, whatever savepoint that insert ran in (as deleteCreated).
	q.dropCreatedEntry = r.Replace(`DELETE FROM {{feed}} WHERE pos >= pg_current_xact_id() AND operation_id = $1 AND from_status IS NULL
		AND xmin = (SELECT o.xmin FROM {{ops}} o WHERE o.id = $1)`)
	// One statement, so that an entry and its outcomes come from one
	// snapshot (an entry Cleanup deletes meanwhile is listed whole or not
	// at all). Filters, order and limit are appended by ListWebhooks.
	q.listWebhooks = r.Replace(`SELECT w.provider, w.event_id, w.type, w.occurred_at, w.received_at, w.targets,
		coalesce((SELECT json_agg(json_build_object('target', o.target, 'operation_id', o.operation_id,
			'disposition', o.disposition, 'from_status', o.from_status, 'to_status', o.to_status) ORDER BY o.seq)
		 FROM {{outcomes}} o WHERE o.provider = w.provider AND o.event_id = w.event_id), '[]')::text
		FROM {{webhooks}} w`)
	// Outcomes go with their entry by ON DELETE CASCADE.
	q.purgeInbox = r.Replace(`DELETE FROM {{webhooks}} WHERE (provider, event_id) IN (
			SELECT provider, event_id FROM {{webhooks}} WHERE received_at < $1
			ORDER BY received_at LIMIT $2
			FOR UPDATE SKIP LOCKED)`)
	q.feedPage, q.feedBeyond, q.feedDurable, q.purgeFeed = feedQueries(r)
	q.stats = sqlstore.StatsStatement(q.ops, false)
	q.statsSettled = sqlstore.StatsStatement(q.ops, true)
	q.findings = newFindingSQL(schema)
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

// add appends a condition whose "?"s stand for args, in order.
func (w *where) add(cond string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(w.args)), 1)
	}
	w.conds = append(w.conds, cond)
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}
