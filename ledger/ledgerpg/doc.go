// Package ledgerpg is the PostgreSQL ledger.Store, on pgx v5: the store to
// use when several replicas of a service share one ledger.
//
// The caller opens (and closes) the pool; the store keeps its tables,
// prefixed payonce_, in one schema:
//
//	pool, err := pgxpool.New(ctx, "postgres://app@db/payments")
//	if err != nil { ... }
//	defer pool.Close()
//	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: "payonce"})
//	if err != nil { ... }
//	if err := store.Migrate(ctx); err != nil { ... }
//
// Every method is one transaction. Rows an operation's rules depend on are
// read under a row lock (SELECT ... FOR UPDATE), the rules of package ledger
// (ledgerdriver.ApplyFinish and its siblings) are applied to them, and the result
// is written back in the same transaction, so leases are compare-and-set
// across processes. A new operation is recorded by Begin in a single round
// trip, and the store keeps what it wrote with the row's version (xmin): the
// next Finish or StartAttempt of that operation applies the same rules to
// that copy and writes in one conditional statement (UPDATE ... WHERE id AND
// xmin AND lease_owner AND status), which changes nothing if the row moved
// on, in which case the method takes the locked way. So a successful
// payment costs two round trips and two commits: Begin, then Finish; an
// operation claimed by ClaimDue, one statement for its attempt and one for
// its outcome. Audit entries (Events) are written in the transaction of the
// change they document, numbered under the same row lock.
//
// CreateOrGetTx is the exception to "one method, one transaction": it
// records an operation inside the caller's pgx.Tx, so that a payment is
// enqueued if and only if the caller's business data commits with it
// (transactional outbox):
//
//	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
//		if _, err := tx.Exec(ctx, "INSERT INTO orders ...", ...); err != nil {
//			return err
//		}
//		_, _, err := store.CreateOrGetTx(ctx, tx, op, time.Now())
//		return err
//	})
//
// Migrations are SQL files embedded in the package and applied in order by
// Migrate (see MigrateReport), serialized across processes by an advisory
// lock. The schema name is always quoted: any name works, reserved words
// ("user", "order") and mixed case ("Pay Once") included (Config.Schema).
//
// Every transaction the store opens runs under READ COMMITTED, whatever the
// server's default isolation, and the arguments above assume it.
//
// Stats is one read-only statement (one snapshot, no row locks): the
// pending, in_flight and unknown operations are read from the partial
// open-work index of migration 005, the ones in review from the review
// index, so a dashboard's scrape costs what the open work costs, not the
// settled history. StatsParams.IncludeSettled adds a scan of the settled
// rows, for operators.
//
// Audit findings live in payonce_audit_findings (migration 012): one row
// per difference, upserted on its unique (provider, class, operation_id,
// provider_ref) by one statement per RecordFindings call, and counted for
// Stats from a partial index of the open ones. Cleanup never deletes them.
//
// # Settlement feed
//
// Feed reads the payonce_feed table of migration 006, whose rows triggers
// on payonce_operations write in the transaction of each creation and each
// change into or out of a terminal status (one insert each; none for the
// sending in between). Sequence numbers are taken at insert time, and
// concurrent transactions commit out of that order, so the feed is ordered
// by (pos, seq), where pos (migration 008) is the writing transaction's id
// or, when higher, the highest transaction id completed when the entry was
// written: one operation's entries are then in the order they were made,
// and Feed returns only rows whose pos is below the xmin of its snapshot,
// so that no entry can later commit before one a reader has passed. A
// transaction that stays open anywhere in the cluster (xids are
// cluster-wide; also an idle-in-transaction session, or a prepared
// transaction) holds the feed back until it ends: monitor and bound them
// (idle_in_transaction_session_timeout). Feed reads in a transaction that,
// when the page has entries no Feed returned before, raises the feed's
// durable mark (payonce_feed_durable, migration 008) and commits with
// synchronous_commit on, and returns the entries only once that commit is
// flushed: it covers every lazily committed Finish the page shows, so a
// crash of the server cannot take back an entry Feed returned. Cursors are
// "pos.seq".
//
// # Tombstones
//
// Cleanup deletes an operation and writes its tombstone in one transaction;
// Begin and CreateOrGet (CreateOrGetTx too) answer an ID with a tombstone
// with the recorded outcome and create nothing. A late call racing with
// Cleanup cannot see, in the snapshot of its insert, the tombstone of a
// Cleanup its insert waited for; the store therefore checks the tombstone
// table in a later statement of the same transaction, on the path that
// created a row only, and takes the insert back: Begin's check fails its
// statement, so that the whole transaction (one round trip) is rolled back;
// CreateOrGetTx deletes the row in the caller's transaction. Under REPEATABLE READ or SERIALIZABLE a caller's
// CreateOrGetTx whose snapshot predates such a Cleanup gets an error asking
// it to retry its transaction.
//
// # Durability
//
// The attempt journal must be on disk before a request is sent (rule 2).
// Every write but the lazily durable Finish (see Config.DurableOutcomes)
// sets synchronous_commit to on for its own transaction (remote_apply, if
// that is the session's setting, is kept), folded into the statements it
// already sends: a role or database default of off, local or remote_write
// does not weaken the journal. A server running with fsync = off makes no
// commit durable at all; Migrate logs a warning to Config.Logger when it
// finds one.
//
// A commit is durable on the server that acknowledged it. With
// asynchronous streaming replication, a failover to a standby loses the
// journal entries committed on the old primary but not yet replicated: an
// attempt may then have been sent, and even answered, with no record of it
// on the new primary, which would send it again as pending (inside the key
// window the provider deduplicates it; outside, it is a second charge).
// Run the ledger with synchronous replication: synchronous_standby_names
// set, and synchronous_commit = on (the standby has flushed the commit) or
// remote_apply (it has also applied it, so reads on the standby see it).
// The store's writes then wait for the standby; the lazily durable Finish
// does not, and an outcome it loses in a failover is recovered by a status
// lookup like any other lost outcome.
package ledgerpg
