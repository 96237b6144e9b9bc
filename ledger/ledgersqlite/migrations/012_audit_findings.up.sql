-- payonce ledger, schema version 12 (SQLite): the findings of provider
-- audits.
--
-- payonce audit (payonce.Client.Audit) compares the ledger with a
-- provider's own records and records each difference here; it never
-- changes an operation. One row per difference: the unique index on
-- (provider, class, operation_id, provider_ref) is what makes the same
-- difference found by a later audit one finding (RecordFindings upserts:
-- last_found_at, times, detail and the period move, first_found_at
-- stays). operation_id and provider_ref are '' when unknown, not NULL, so
-- that the unique index treats two unknowns as equal. Not a foreign key:
-- the operation may be unknown to the ledger (that is a finding) or
-- cleaned up later, while its findings stay.
--
-- Cleanup never deletes a finding: they are the audits' history. An
-- operator's acknowledgement (acked_at, acked_by, ack_note, NULL while
-- open) closes one without deleting it. Times are microseconds since the
-- Unix epoch like every time of this schema. AUTOINCREMENT: an id is
-- never used twice, even after a row deleted by hand, so ListFindings'
-- keyset (id > AfterID) never skips a new finding.
--
-- The open-findings index holds only open rows: Stats counts them by
-- (provider, class) from it alone, and ListFindings with Open reads them
-- from it. Its predicate is the literal the statements repeat.

CREATE TABLE payonce_audit_findings (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    provider       TEXT    NOT NULL,
    class          TEXT    NOT NULL,
    operation_id   TEXT    NOT NULL DEFAULT '',
    provider_ref   TEXT    NOT NULL DEFAULT '',
    detail         TEXT    NOT NULL,
    period_from    INTEGER NOT NULL,
    period_to      INTEGER NOT NULL,
    first_found_at INTEGER NOT NULL,
    last_found_at  INTEGER NOT NULL,
    times          INTEGER NOT NULL DEFAULT 1,
    acked_at       INTEGER,
    acked_by       TEXT,
    ack_note       TEXT
) STRICT;

CREATE UNIQUE INDEX payonce_audit_findings_key
    ON payonce_audit_findings (provider, class, operation_id, provider_ref);

CREATE INDEX payonce_audit_findings_open
    ON payonce_audit_findings (provider, class, id)
    WHERE acked_at IS NULL;

-- ListFindings by operation (the findings of one operation, for the
-- console), whatever the provider.
CREATE INDEX payonce_audit_findings_operation
    ON payonce_audit_findings (operation_id, id)
    WHERE operation_id <> '';
