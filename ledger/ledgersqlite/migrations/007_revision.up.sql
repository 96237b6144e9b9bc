-- payonce ledger, schema version 7 (SQLite): the row revision of
-- payonce_operations, which lets Finish write in one conditional statement
-- on the store's copy of its last write instead of reading the row first
-- (ledger/ledgersqlite/revision.go).
--
-- revision counts the updates of a row: 0 when inserted, one more on every
-- UPDATE. The store's conditional write (UPDATE ... WHERE id = ? AND
-- revision = ? AND lease_owner = ? AND status = ?) writes only if nobody
-- touched the row since the store's own last write of it.
--
-- Why a trigger: the count must advance whoever writes the row: an older
-- payonce binary that knows nothing of the column, an operator's or a
-- caller's own SQL, every statement of this store that does not set it.
-- A write that did not advance it could be overwritten by a copy that no
-- longer matches the row, and the ledger would record an outcome decided on
-- stale facts. The store's own writes set it themselves (revision =
-- revision + 1), which the WHEN clause leaves alone; the trigger advances
-- every other update.
--
-- The trigger's own UPDATE does not fire it again: SQLite's
-- recursive_triggers is off by default, and even with it on, the inner
-- update changes revision, so its WHEN clause is false. It sets only
-- revision, so the feed's "AFTER UPDATE OF status" trigger (migration 006)
-- does not fire for it either. payonce_operations is a rowid table (a TEXT
-- primary key, not WITHOUT ROWID): rowid finds the row directly.
--
-- Existing rows start at 0 (ADD COLUMN with a constant default rewrites
-- nothing). An older binary's inserts leave the default.

ALTER TABLE payonce_operations ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER payonce_operations_revision
AFTER UPDATE ON payonce_operations
FOR EACH ROW WHEN NEW.revision = OLD.revision
BEGIN
    UPDATE payonce_operations SET revision = OLD.revision + 1 WHERE rowid = NEW.rowid;
END;
