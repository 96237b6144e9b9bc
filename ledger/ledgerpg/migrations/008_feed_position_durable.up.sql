-- payonce ledger, version 8: the feed keeps each operation's entries in
-- the order the ledger made them, and knows how far it is durable.
--
-- Until this version the feed was ordered by the id of the transaction
-- that wrote an entry (column txid). A transaction takes its id at its first
-- write, which may come long before it locks the operation it settles:
-- RecordWebhook writes its inbox row first, and a webhook with several
-- targets locks one operation after another. A Finish that took its id
-- later but locked the operation first then sorted after the webhook's
-- change it preceded, and the feed read pending -> manual_review ->
-- succeeded while the ledger held manual_review.
--
-- From this version the column is pos, the entry's position:
--
--     pos = greatest(the writing transaction's id,
--                    the highest transaction id completed when the entry is written)
--
-- The second term is one less than the xmax of the snapshot the trigger's
-- INSERT runs with (xmax is "one past the highest completed transaction
-- ID", https://www.postgresql.org/docs/16/functions-info.html, table
-- "Snapshot Components"). It only grows with time.
--
-- Why one operation's entries are in order. Let e1 be an entry of
-- operation X written by transaction T1, and e2 a later one written by T2.
-- Both wrote X's row (the triggers fire on it), and one transaction at a
-- time writes a row: T2 wrote X after T1 had committed, or T1 = T2. The INSERT of e2 runs with a
-- snapshot taken after T2 has X's row: under READ COMMITTED, a fresh one
-- (PL/pgSQL takes one for each statement of a volatile function); under
-- REPEATABLE READ or SERIALIZABLE, the transaction's, which must already
-- see T1's change or the update of X would have failed with a
-- serialization error. So T1 had completed when that snapshot was taken,
-- and pos(e2) >= highest completed >= T1. And the highest completed id
-- only grows, so pos(e2) >= the second term of pos(e1) too: pos(e2) >=
-- pos(e1). On a tie, seq breaks it: e2 drew its seq after T1 committed (or
-- later in the same transaction), e1 before (the sequence has CACHE 1, so
-- its values are handed out in time order across sessions).
--
-- Why the feed stays gap-safe (Feed returns only entries whose pos is
-- below the xmin of its snapshot, see ledgerpg's feedQueries): pos is at
-- least the writer's own id, and an entry that a reader cannot see yet has
-- a writer still running at the reader's snapshot or started after it,
-- whose id is at least that snapshot's xmin. So every entry that becomes
-- visible later sorts after everything the reader returned.
--
-- Why the highest completed id, not xmax itself: xmax may be an id no
-- transaction has taken yet, and an entry at that position would wait
-- until some later transaction, anywhere in the cluster, took it and
-- ended. The highest completed id has ended already; the entry waits only
-- for transactions that had their ids when it was written.
--
-- Existing entries keep their position (pos = their txid) and existing
-- cursors ("txid.seq", now "pos.seq") keep working: a cursor was handed
-- out below the xmin of its read, and every entry written after that read
-- has a writer at or above that xmin, so a position above the cursor. The
-- primary key (pos, seq) is the old one renamed: nothing is rewritten.

ALTER TABLE {{schema}}.payonce_feed RENAME COLUMN txid TO pos;

CREATE OR REPLACE FUNCTION {{schema}}.payonce_feed_record() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.payonce_feed (pos, operation_id, key, generation, provider, kind, refs,
        from_status, to_status, provider_ref, review_reason, at)
    VALUES (
        -- The position (see the top of migration 008): the writer's id, or
        -- the highest completed id when that is higher.
        greatest(pg_current_xact_id(), (pg_snapshot_xmax(pg_current_snapshot())::text::bigint - 1)::text::xid8),
        NEW.id, NEW.key, NEW.generation, NEW.provider, NEW.kind, NEW.refs,
        -- Every operation is created pending; Begin's one-trip insert writes
        -- it in_flight at once (its first attempt, in the same transaction),
        -- which is sending, not recorded: the entry says pending in both
        -- stores.
        CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END,
        CASE WHEN TG_OP = 'INSERT' THEN 'pending' ELSE NEW.status END, NEW.provider_ref,
        CASE WHEN NEW.status = 'manual_review' THEN NEW.review_reason END, NEW.updated_at);
    RETURN NULL;
END
$$;

-- How far the feed is known to be durable (Store.Feed).
--
-- A lazily durable Finish (synchronous_commit off) is visible before its
-- commit is flushed: handed out then, a crash of the server would take
-- the entry back, and hand the lost transactions' ids out again, so that
-- later entries would sort before the consumer's cursor. Feed therefore
-- raises this mark to the last entry of the page it read, in the same
-- transaction, and commits with synchronous_commit on before it returns
-- the page. A write is needed: PostgreSQL commits a transaction that wrote
-- no WAL asynchronously whatever synchronous_commit says (even one that
-- took a transaction id; RecordTransactionCommit in
-- src/backend/access/transam/xact.c), and the raise is that write.
--
-- (pos, seq) is the largest position handed out that way. Everything at
-- or below it was visible to the read that raised it, and so was flushed
-- with that transaction's commit: a page ending at or below it needs no
-- write (a page read again, or several consumers reading the same
-- entries). One row (id 1), written by Feed only; no row reads as nothing
-- durable yet.

CREATE TABLE {{schema}}.payonce_feed_durable (
    id  integer PRIMARY KEY CHECK (id = 1),
    pos xid8    NOT NULL,
    seq bigint  NOT NULL
);
