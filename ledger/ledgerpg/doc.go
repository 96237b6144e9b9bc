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
// (ledger.ApplyFinish and its siblings) are applied to them, and the result
// is written back in the same transaction, so leases are compare-and-set
// across processes. A new operation
// is recorded by Begin in a single statement, so a successful payment costs
// two commits: Begin, then Finish. Audit entries (Events) are written in the
// transaction of the change they document, numbered under the same row lock.
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
// lock.
package ledgerpg
