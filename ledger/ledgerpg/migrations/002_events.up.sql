-- payonce ledger, version 2: the audit trail of each operation.
--
-- One row per audit entry (ledger.Event), numbered from 1 within its
-- operation by the store, in the transaction of the change it documents.
-- Events go with their operation (ON DELETE CASCADE): Cleanup deletes them
-- together. kind is plain text without a CHECK, like status in version 1: a
-- value the store cannot read back is reported as corrupt.

CREATE TABLE {{schema}}.payonce_events (
    operation_id text        COLLATE "C" NOT NULL
        REFERENCES {{schema}}.payonce_operations (id) ON DELETE CASCADE,
    seq          integer     NOT NULL,
    at           timestamptz NOT NULL,
    kind         text        NOT NULL,
    actor        text        NOT NULL,
    detail       text,
    CONSTRAINT payonce_events_pkey PRIMARY KEY (operation_id, seq)
);
