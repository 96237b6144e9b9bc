-- payonce ledger, schema version 2 (SQLite): the audit trail of each
-- operation.
--
-- One row per audit entry (ledger.Event), numbered from 1 within its
-- operation by the store, in the write transaction of the change it
-- documents. at is INTEGER unix microseconds, UTC; detail is NULL when empty.
-- Cleanup deletes an operation's events explicitly with it (a caller's
-- connections given to New may not enforce ON DELETE CASCADE). kind has no
-- CHECK, like status: a value the store cannot read back is reported as
-- corrupt.

CREATE TABLE payonce_events (
    operation_id TEXT    NOT NULL REFERENCES payonce_operations (id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    kind         TEXT    NOT NULL,
    actor        TEXT    NOT NULL,
    detail       TEXT,
    PRIMARY KEY (operation_id, seq)
) STRICT;
