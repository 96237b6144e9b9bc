-- payonce ledger, schema version 1 (SQLite).
--
-- Times are INTEGER unix microseconds, UTC; NULL means "not set". Optional
-- text is NULL when empty. STRICT tables make SQLite refuse a value of the
-- wrong type instead of storing it silently. There is deliberately no CHECK on
-- status: a value written by hand must be readable as a row and reported as
-- corrupt (ledger.ErrCorrupt), not hidden by a failing write elsewhere.

CREATE TABLE payonce_operations (
    id                 TEXT    NOT NULL PRIMARY KEY,
    key                TEXT    NOT NULL UNIQUE,
    provider           TEXT    NOT NULL,
    kind               TEXT    NOT NULL,
    refs               TEXT    NOT NULL,              -- JSON array of strings
    generation         INTEGER NOT NULL DEFAULT 0,
    fingerprint        TEXT    NOT NULL,
    request            TEXT    NOT NULL,              -- canonical request JSON
    status             TEXT    NOT NULL,
    provider_ref       TEXT,
    result             TEXT,
    attempts           INTEGER NOT NULL DEFAULT 0,
    key_ttl_ms         INTEGER NOT NULL,
    window_start       INTEGER,
    key_expires_at     INTEGER,
    lease_owner        TEXT,
    lease_expires_at   INTEGER,
    next_check_at      INTEGER,
    review_reason      TEXT,
    review_at          INTEGER,
    resolved_by        TEXT,
    resolution_note    TEXT,
    resolution_outcome TEXT,
    resolved_at        INTEGER,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    finished_at        INTEGER
) STRICT;

-- ClaimDue: oldest due first. Final operations have no next_check_at and stay
-- out of the index.
CREATE INDEX payonce_operations_due
    ON payonce_operations (next_check_at, id)
    WHERE next_check_at IS NOT NULL;

-- Cleanup: only final operations are ever deleted.
CREATE INDEX payonce_operations_finished
    ON payonce_operations (finished_at)
    WHERE status IN ('succeeded', 'failed');

-- ListReview: oldest review first.
CREATE INDEX payonce_operations_review
    ON payonce_operations (review_at, id)
    WHERE status = 'manual_review';

CREATE TABLE payonce_attempts (
    operation_id        TEXT    NOT NULL REFERENCES payonce_operations (id) ON DELETE CASCADE,
    number              INTEGER NOT NULL,
    key                 TEXT    NOT NULL,
    started_at          INTEGER NOT NULL,
    finished_at         INTEGER,
    may_have_reached    INTEGER NOT NULL,
    outcome             TEXT,
    http_status         INTEGER,
    provider_request_id TEXT,
    error               TEXT,
    PRIMARY KEY (operation_id, number)
) STRICT;
