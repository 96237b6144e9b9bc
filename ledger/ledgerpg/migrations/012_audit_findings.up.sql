-- payonce ledger, version 12: the findings of provider audits.
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
-- open) closes one without deleting it.
--
-- The open-findings index holds only open rows: Stats counts them by
-- (provider, class) from it alone, and ListFindings with Open reads them
-- from it; acknowledged history costs neither. Its predicate is the
-- literal the statements repeat. Findings are few (differences, not
-- operations) and written by audits only: neither index costs a payment
-- anything.

CREATE TABLE {{schema}}.payonce_audit_findings (
    id             bigserial   PRIMARY KEY,
    provider       text        NOT NULL,
    class          text        NOT NULL,
    operation_id   text        COLLATE "C" NOT NULL DEFAULT '',
    provider_ref   text        NOT NULL DEFAULT '',
    detail         text        NOT NULL,
    period_from    timestamptz NOT NULL,
    period_to      timestamptz NOT NULL,
    first_found_at timestamptz NOT NULL,
    last_found_at  timestamptz NOT NULL,
    times          integer     NOT NULL DEFAULT 1,
    acked_at       timestamptz,
    acked_by       text,
    ack_note       text
);

CREATE UNIQUE INDEX payonce_audit_findings_key_idx
    ON {{schema}}.payonce_audit_findings (provider, class, operation_id, provider_ref);

CREATE INDEX payonce_audit_findings_open_idx
    ON {{schema}}.payonce_audit_findings (provider, class, id)
    WHERE acked_at IS NULL;

-- ListFindings by operation (the findings of one operation, for the
-- console), whatever the provider.
CREATE INDEX payonce_audit_findings_operation_idx
    ON {{schema}}.payonce_audit_findings (operation_id, id)
    WHERE operation_id <> '';
