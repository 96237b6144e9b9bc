-- payonce ledger, version 4: the webhook inbox.
--
-- payonce_operations.payment_ref: the provider's id of the payment a
-- capture, cancel or refund acts on (NULL for a charge), recorded at
-- creation, so that an event that names only the payment finds the
-- operation. Nullable without a default: no table rewrite. The two partial
-- indexes are how an event finds its operation by reference; rows without
-- one stay out of them. (They are built inside the migration's transaction,
-- which holds a write lock on payonce_operations while they are built.)
--
-- payonce_webhooks: one row per provider event, keyed by the provider's
-- identity of the event. The primary key is what applies an event once: the
-- store inserts the row (or finds it there) in the transaction that applies
-- the event, so a redelivery or a replay changes nothing, and of concurrent
-- deliveries one inserts while the others wait for it and find it. targets
-- is the event's targets as JSON text (occurred_at NULL when the provider
-- does not say). Cleanup deletes rows received before its inbox retention,
-- oldest first.
--
-- payonce_webhook_outcomes: what the event did, one row per outcome in
-- order (seq from 0): the target's index, the operation found (NULL when
-- none; not a foreign key, since the operation may be cleaned up while the
-- entry is kept), the disposition and the statuses before and after. They
-- go with their entry (ON DELETE CASCADE). disposition is plain text without
-- a CHECK, like status: a value the store cannot read back is reported as
-- corrupt.

ALTER TABLE {{schema}}.payonce_operations
    ADD COLUMN payment_ref text;

CREATE INDEX payonce_operations_provider_ref_idx
    ON {{schema}}.payonce_operations (provider, kind, provider_ref)
    WHERE provider_ref IS NOT NULL;

CREATE INDEX payonce_operations_payment_ref_idx
    ON {{schema}}.payonce_operations (provider, kind, payment_ref)
    WHERE payment_ref IS NOT NULL;

CREATE TABLE {{schema}}.payonce_webhooks (
    provider    text        NOT NULL,
    event_id    text        COLLATE "C" NOT NULL,
    type        text        NOT NULL,
    occurred_at timestamptz,
    received_at timestamptz NOT NULL,
    targets     text        NOT NULL,
    CONSTRAINT payonce_webhooks_pkey PRIMARY KEY (provider, event_id)
);

-- Cleanup: oldest received first; ListWebhooks: newest first.
CREATE INDEX payonce_webhooks_received_idx
    ON {{schema}}.payonce_webhooks (received_at);

CREATE TABLE {{schema}}.payonce_webhook_outcomes (
    provider     text    NOT NULL,
    event_id     text    COLLATE "C" NOT NULL,
    seq          integer NOT NULL,
    target       integer NOT NULL,
    operation_id text    COLLATE "C",
    disposition  text    NOT NULL,
    from_status  text,
    to_status    text,
    CONSTRAINT payonce_webhook_outcomes_pkey PRIMARY KEY (provider, event_id, seq),
    CONSTRAINT payonce_webhook_outcomes_event_fkey FOREIGN KEY (provider, event_id)
        REFERENCES {{schema}}.payonce_webhooks (provider, event_id) ON DELETE CASCADE
);

-- ListWebhooks' filters: the entries of one operation, of one disposition.
CREATE INDEX payonce_webhook_outcomes_operation_idx
    ON {{schema}}.payonce_webhook_outcomes (operation_id)
    WHERE operation_id IS NOT NULL;

CREATE INDEX payonce_webhook_outcomes_disposition_idx
    ON {{schema}}.payonce_webhook_outcomes (disposition);
