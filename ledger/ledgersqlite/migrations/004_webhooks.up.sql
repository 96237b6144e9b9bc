-- payonce ledger, schema version 4 (SQLite): the webhook inbox.
--
-- payonce_operations.payment_ref: the provider's id of the payment a
-- capture, cancel or refund acts on (NULL for a charge), recorded at
-- creation, so that an event that names only the payment finds the
-- operation. The two partial indexes are how an event finds its operation
-- by reference; rows without one stay out of them.
--
-- payonce_webhooks: one row per provider event, keyed by the provider's
-- identity of the event. The primary key is what applies an event once: the
-- store inserts the row (or finds it there) in the write transaction that
-- applies the event, so a redelivery or a replay changes nothing. targets is
-- the event's targets as JSON; times are INTEGER unix microseconds, UTC
-- (occurred_at NULL when the provider does not say). Cleanup deletes rows
-- received before its inbox retention, oldest first.
--
-- payonce_webhook_outcomes: what the event did, one row per outcome in
-- order (seq from 0): the target's index, the operation found (NULL when
-- none; not a foreign key, since the operation may be cleaned up while the
-- entry is kept), the disposition and the statuses before and after.
-- Cleanup deletes an entry's outcomes explicitly with it (a caller's
-- connections given to New may not enforce ON DELETE CASCADE).
-- disposition has no CHECK, like status: a value the store cannot read back
-- is reported as corrupt.

ALTER TABLE payonce_operations ADD COLUMN payment_ref TEXT;

CREATE INDEX payonce_operations_provider_ref
    ON payonce_operations (provider, kind, provider_ref)
    WHERE provider_ref IS NOT NULL;

CREATE INDEX payonce_operations_payment_ref
    ON payonce_operations (provider, kind, payment_ref)
    WHERE payment_ref IS NOT NULL;

CREATE TABLE payonce_webhooks (
    provider    TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    occurred_at INTEGER,
    received_at INTEGER NOT NULL,
    targets     TEXT    NOT NULL,              -- JSON array of targets
    PRIMARY KEY (provider, event_id)
) STRICT;

-- Cleanup: oldest received first; ListWebhooks: newest first.
CREATE INDEX payonce_webhooks_received
    ON payonce_webhooks (received_at);

CREATE TABLE payonce_webhook_outcomes (
    provider     TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    target       INTEGER NOT NULL,
    operation_id TEXT,
    disposition  TEXT    NOT NULL,
    from_status  TEXT,
    to_status    TEXT,
    PRIMARY KEY (provider, event_id, seq),
    FOREIGN KEY (provider, event_id) REFERENCES payonce_webhooks (provider, event_id) ON DELETE CASCADE
) STRICT;

-- ListWebhooks' filters: the entries of one operation, of one disposition.
CREATE INDEX payonce_webhook_outcomes_operation
    ON payonce_webhook_outcomes (operation_id)
    WHERE operation_id IS NOT NULL;

CREATE INDEX payonce_webhook_outcomes_disposition
    ON payonce_webhook_outcomes (disposition);
