-- payonce ledger, version 6: the settlement feed (ledger.Store.Feed).
--
-- One row per feed entry: the creation of an operation, and each change of
-- its status into succeeded, failed or manual_review or out of
-- manual_review. The rows are written by triggers on payonce_operations, in
-- the transaction of the change, so that no writing path (Begin, Finish,
-- ClaimDue, Resolve, RecordWebhook, a caller's CreateOrGetTx) can forget
-- one, and a rolled-back change leaves none.
--
-- Gap safety: seq comes from a sequence, whose values are taken at insert
-- time, not at commit; two transactions can commit out of seq order, so a
-- reader ordering by seq alone could pass an entry that commits later with
-- a smaller seq. Each row therefore stores the id of the transaction that
-- wrote it (txid, from pg_current_xact_id()), the feed is ordered by
-- (txid, seq), and Feed returns only rows whose txid is below the xmin of
-- its snapshot: every transaction below xmin has ended, so no row can ever
-- appear at a position before one that was returned. See Store.Feed.
--
-- No foreign key to payonce_operations: entries outlive the operations
-- Cleanup deletes and are purged by their own retention.
--
-- What it costs: one insert (heap row and primary-key entry) for each
-- creation and each settlement, none for the churn of sending. The
-- primary key leads with txid, which also finds the rows of one
-- transaction (the undo of an insert that must not stay).

CREATE TABLE {{schema}}.payonce_feed (
    txid          xid8        NOT NULL DEFAULT pg_current_xact_id(),
    seq           bigint      GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME {{schema}}.payonce_feed_seq),
    operation_id  text        COLLATE "C" NOT NULL,
    key           text        NOT NULL,
    generation    integer     NOT NULL,
    provider      text        NOT NULL,
    kind          text        NOT NULL,
    refs          text[]      NOT NULL,
    from_status   text,
    to_status     text        NOT NULL,
    provider_ref  text,
    review_reason text,
    at            timestamptz NOT NULL,
    CONSTRAINT payonce_feed_pkey PRIMARY KEY (txid, seq)
);

CREATE FUNCTION {{schema}}.payonce_feed_record() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.payonce_feed (operation_id, key, generation, provider, kind, refs,
        from_status, to_status, provider_ref, review_reason, at)
    VALUES (NEW.id, NEW.key, NEW.generation, NEW.provider, NEW.kind, NEW.refs,
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

CREATE TRIGGER payonce_feed_created
    AFTER INSERT ON {{schema}}.payonce_operations
    FOR EACH ROW EXECUTE FUNCTION {{schema}}.payonce_feed_record();

-- The WHEN clause is the feed's definition of a recorded change (repeated
-- in the SQLite store's migration and in ledger/feed.go): updates that keep
-- the status, or move between pending, in_flight and unknown, cost no call.
CREATE TRIGGER payonce_feed_changed
    AFTER UPDATE OF status ON {{schema}}.payonce_operations
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          AND (NEW.status IN ('succeeded', 'failed', 'manual_review') OR OLD.status = 'manual_review'))
    EXECUTE FUNCTION {{schema}}.payonce_feed_record();
