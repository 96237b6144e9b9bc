-- payonce ledger, version 3: replayed attempts and tombstones.
--
-- payonce_attempts.replayed: the provider answered the attempt with a stored
-- answer for its key (e.g. Stripe's Idempotent-Replayed: true). A constant
-- default: no table rewrite.
--
-- payonce_tombstones: what Cleanup keeps of each operation it deletes,
-- written in the transaction of the delete, so that a late duplicate call
-- (Begin or CreateOrGet with the same ID, months later) is answered with the
-- recorded outcome instead of being recorded afresh and sent again under a
-- key the provider has forgotten. An ID never has both a live operation row
-- and a tombstone: the store checks the tombstone when it creates a row.
-- amount and currency are read best effort from the deleted request (0 and
-- '' when absent), for operators. Tombstones are kept until a Cleanup with
-- a TombstoneRetention deletes them, oldest finished first.

ALTER TABLE {{schema}}.payonce_attempts
    ADD COLUMN replayed boolean NOT NULL DEFAULT false;

CREATE TABLE {{schema}}.payonce_tombstones (
    id            text        COLLATE "C" NOT NULL,
    key           text        COLLATE "C" NOT NULL,
    provider      text        NOT NULL,
    kind          text        NOT NULL,
    refs          text[]      NOT NULL,
    generation    integer     NOT NULL,
    fingerprint   text        NOT NULL,
    status        text        NOT NULL,
    provider_ref  text,
    result        text,
    amount        bigint      NOT NULL DEFAULT 0,
    currency      text        NOT NULL DEFAULT '',
    key_ttl_ms    bigint      NOT NULL,
    created_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL,
    tombstoned_at timestamptz NOT NULL,
    CONSTRAINT payonce_tombstones_pkey PRIMARY KEY (id)
);

-- Cleanup's tombstone retention: oldest finished first.
CREATE INDEX payonce_tombstones_finished_idx
    ON {{schema}}.payonce_tombstones (finished_at);
