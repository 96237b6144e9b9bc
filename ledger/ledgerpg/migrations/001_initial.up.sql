-- payonce ledger, version 1: operations and their attempts.
--
-- {{schema}} is replaced by the quoted schema name before this file runs.
-- Statuses, outcome classes and resolution outcomes are plain text without
-- CHECK constraints: the store validates every value it writes and reports a
-- value it cannot read back as corrupt instead of failing the whole table.

CREATE TABLE {{schema}}.payonce_operations (
    id                 text        COLLATE "C" NOT NULL,
    key                text        COLLATE "C" NOT NULL,
    provider           text        NOT NULL,
    kind               text        NOT NULL,
    refs               text[]      NOT NULL,
    generation         integer     NOT NULL DEFAULT 0,
    fingerprint        text        NOT NULL,
    request            text        NOT NULL,
    status             text        NOT NULL,
    provider_ref       text,
    result             text,
    attempts           integer     NOT NULL DEFAULT 0,
    key_ttl_ms         bigint      NOT NULL,
    window_start       timestamptz,
    key_expires_at     timestamptz,
    lease_owner        text,
    lease_expires_at   timestamptz,
    next_check_at      timestamptz,
    review_reason      text,
    review_at          timestamptz,
    resolved_by        text,
    resolution_note    text,
    resolution_outcome text,
    resolved_at        timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    finished_at        timestamptz,
    CONSTRAINT payonce_operations_pkey PRIMARY KEY (id),
    -- One idempotency key, one operation: two operations sharing a key would
    -- let the provider answer one with the other's result.
    CONSTRAINT payonce_operations_key_key UNIQUE (key)
);

-- ClaimDue: the oldest due operations first. Final operations have no
-- next_check_at and stay out of this index.
CREATE INDEX payonce_operations_due_idx
    ON {{schema}}.payonce_operations (next_check_at, id)
    WHERE next_check_at IS NOT NULL;

-- Cleanup: finished operations by age.
CREATE INDEX payonce_operations_cleanup_idx
    ON {{schema}}.payonce_operations (finished_at)
    WHERE status IN ('succeeded', 'failed');

-- ListReview: operations waiting for an operator, oldest first.
CREATE INDEX payonce_operations_review_idx
    ON {{schema}}.payonce_operations (review_at, id)
    WHERE status = 'manual_review';

CREATE TABLE {{schema}}.payonce_attempts (
    operation_id        text        COLLATE "C" NOT NULL
        REFERENCES {{schema}}.payonce_operations (id) ON DELETE CASCADE,
    number              integer     NOT NULL,
    key                 text        NOT NULL,
    started_at          timestamptz NOT NULL,
    finished_at         timestamptz,
    may_have_reached    boolean     NOT NULL,
    outcome             text,
    http_status         integer,
    provider_request_id text,
    error               text,
    CONSTRAINT payonce_attempts_pkey PRIMARY KEY (operation_id, number)
);
