-- payonce ledger, schema version 3 (SQLite): replayed attempts and
-- tombstones.
--
-- payonce_attempts.replayed (0 or 1): the provider answered the attempt with
-- a stored answer for its key (e.g. Stripe's Idempotent-Replayed: true).
--
-- payonce_tombstones: what Cleanup keeps of each operation it deletes,
-- written in the write transaction of the delete, so that a late duplicate
-- call (Begin or CreateOrGet with the same ID, months later) is answered
-- with the recorded outcome instead of being recorded afresh and sent again
-- under a key the provider has forgotten. An ID never has both a live
-- operation row and a tombstone. Times are INTEGER unix microseconds, UTC;
-- refs is a JSON array; amount and currency are read best effort from the
-- deleted request (0 and '' when absent), for operators. Tombstones are kept
-- until a Cleanup with a TombstoneRetention deletes them, oldest finished
-- first.

ALTER TABLE payonce_attempts ADD COLUMN replayed INTEGER NOT NULL DEFAULT 0;

CREATE TABLE payonce_tombstones (
    id            TEXT    NOT NULL PRIMARY KEY,
    key           TEXT    NOT NULL,
    provider      TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    refs          TEXT    NOT NULL,
    generation    INTEGER NOT NULL,
    fingerprint   TEXT    NOT NULL,
    status        TEXT    NOT NULL,
    provider_ref  TEXT,
    result        TEXT,
    amount        INTEGER NOT NULL DEFAULT 0,
    currency      TEXT    NOT NULL DEFAULT '',
    key_ttl_ms    INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    finished_at   INTEGER NOT NULL,
    tombstoned_at INTEGER NOT NULL
) STRICT;

-- Cleanup's tombstone retention: oldest finished first.
CREATE INDEX payonce_tombstones_finished
    ON payonce_tombstones (finished_at);
