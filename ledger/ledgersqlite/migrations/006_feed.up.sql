-- payonce ledger, schema version 6 (SQLite): the settlement feed
-- (ledger.Store.Feed).
--
-- One row per feed entry: the creation of an operation, and each change of
-- its status into succeeded, failed or manual_review or out of
-- manual_review. The rows are written by triggers on payonce_operations, in
-- the transaction of the change, so that no writing path (the store's own,
-- or a caller's CreateOrGetTx) can forget one, and a rolled-back change
-- leaves none.
--
-- Gap safety: SQLite lets one writer at a time hold the database, so rows
-- are numbered (seq) in commit order: a reader that has seen seq n can
-- never later find a committed row below n. AUTOINCREMENT keeps numbers
-- from being reused once the newest rows are purged, so a stored cursor
-- never points into numbers handed out again.
--
-- No foreign key to payonce_operations: entries outlive the operations
-- Cleanup deletes and are purged by their own retention.
--
-- What it costs: one row insert for each creation and each settlement,
-- none for the churn of sending.

CREATE TABLE payonce_feed (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id  TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    generation    INTEGER NOT NULL,
    provider      TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    refs          TEXT    NOT NULL,              -- JSON array of strings
    from_status   TEXT,
    to_status     TEXT    NOT NULL,
    provider_ref  TEXT,
    review_reason TEXT,
    at            INTEGER NOT NULL               -- unix microseconds, UTC
) STRICT;

-- Every operation is created pending (as in the PostgreSQL store, whose
-- Begin may insert it in_flight at once).
CREATE TRIGGER payonce_feed_created
AFTER INSERT ON payonce_operations
BEGIN
    INSERT INTO payonce_feed (operation_id, key, generation, provider, kind, refs,
        from_status, to_status, provider_ref, review_reason, at)
    VALUES (NEW.id, NEW.key, NEW.generation, NEW.provider, NEW.kind, NEW.refs,
        NULL, 'pending', NEW.provider_ref,
        CASE WHEN NEW.status = 'manual_review' THEN NEW.review_reason END, NEW.updated_at);
END;

-- The WHEN clause is the feed's definition of a recorded change (as in the
-- PostgreSQL store's migration and ledger/feed.go).
CREATE TRIGGER payonce_feed_changed
AFTER UPDATE OF status ON payonce_operations
WHEN OLD.status IS NOT NEW.status
     AND (NEW.status IN ('succeeded', 'failed', 'manual_review') OR OLD.status = 'manual_review')
BEGIN
    INSERT INTO payonce_feed (operation_id, key, generation, provider, kind, refs,
        from_status, to_status, provider_ref, review_reason, at)
    VALUES (NEW.id, NEW.key, NEW.generation, NEW.provider, NEW.kind, NEW.refs,
        OLD.status, NEW.status, NEW.provider_ref,
        CASE WHEN NEW.status = 'manual_review' THEN NEW.review_reason END, NEW.updated_at);
END;
