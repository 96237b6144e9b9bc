-- payonce ledger, version 10: the review code, stored beside the reason.
--
-- Until this version an operation in review carried only its reason, a
-- sentence for a person (often with the provider's detail), and programs
-- told reasons apart by their first words: the resend refusal of a
-- duplicated operation, the webhook rule that a contradiction waits for an
-- operator, the telemetry's reason label. From this version the code
-- (ledger.ReviewCode) is stored in its own column beside the reason, on the
-- operation and on its feed entries, and compared as such; the reason text
-- is for people only.
--
-- Rows written before this version get their code from their reason, by
-- the prefixes payonce's texts have always started with (the mapping the
-- client's ReviewReasonCode applied until this version), checked in order:
--
--   is exactly   "key window passed with the outcome unknown"  ->  window_passed
--   starts with  "provider holds more than one object for this operation"  ->  duplicated
--   is exactly   "provider still processing after the configured age"  ->  processing
--   is exactly   "provider holds this key with other parameters"  ->  key_mismatch
--   starts with  "provider answer contradicts the ledger"  ->  contradicted
--   starts with  "provider reported a change after settlement"  ->  webhook_contradiction
--   starts with  "stored request unreadable"  ->  request_unreadable
--   anything else (an operator's or a caller's own text)  ->  other
--
-- Every row with a reason gets a code, also one resolved since (the code is
-- history, like the reason). A row without a reason keeps no code. The
-- update changes no status, so it writes no feed entry.

ALTER TABLE {{schema}}.payonce_operations ADD COLUMN review_code text;
ALTER TABLE {{schema}}.payonce_feed ADD COLUMN review_code text;

-- The mapping, once: the backfill below and the trigger after it use it.
CREATE FUNCTION {{schema}}.payonce_review_code_of(reason text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN reason = 'key window passed with the outcome unknown' THEN 'window_passed'
        WHEN substr(reason, 1, 54) = 'provider holds more than one object for this operation' THEN 'duplicated'
        WHEN reason = 'provider still processing after the configured age' THEN 'processing'
        WHEN reason = 'provider holds this key with other parameters' THEN 'key_mismatch'
        WHEN substr(reason, 1, 38) = 'provider answer contradicts the ledger' THEN 'contradicted'
        WHEN substr(reason, 1, 43) = 'provider reported a change after settlement' THEN 'webhook_contradiction'
        WHEN substr(reason, 1, 25) = 'stored request unreadable' THEN 'request_unreadable'
        ELSE 'other'
    END
$$;

UPDATE {{schema}}.payonce_operations SET review_code = {{schema}}.payonce_review_code_of(review_reason)
WHERE review_reason IS NOT NULL;

UPDATE {{schema}}.payonce_feed SET review_code = {{schema}}.payonce_review_code_of(review_reason)
WHERE review_reason IS NOT NULL;

-- Builds of version 9 keep writing during a rolling deploy: they set the
-- reason and leave review_code alone. A row they send to review would read
-- back without a code, and one this build sent to review (processing,
-- window_passed: re-checked in the background) would keep its old code
-- when their re-check rewrites the reason (a second object: duplicated).
-- Programs compare the code (the resend refusal of a duplicated operation),
-- so before every write the code follows the reason when the writer did
-- not set it: a reason without a code, or a reason changed while the code
-- was not, gets the code its text names by the mapping above. A reason of
-- the writer's own words (other) never replaces a code already stored: an
-- operator's note does not weaken it. Runs before the feed's trigger, which
-- so copies the code too.
CREATE FUNCTION {{schema}}.payonce_review_code_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    code text := {{schema}}.payonce_review_code_of(NEW.review_reason);
BEGIN
    IF NEW.review_code IS NULL OR code <> 'other' THEN
        NEW.review_code := code;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER payonce_review_code_created
BEFORE INSERT ON {{schema}}.payonce_operations
FOR EACH ROW WHEN (NEW.review_reason IS NOT NULL AND NEW.review_code IS NULL)
EXECUTE FUNCTION {{schema}}.payonce_review_code_follow();

CREATE TRIGGER payonce_review_code_changed
BEFORE UPDATE ON {{schema}}.payonce_operations
FOR EACH ROW WHEN (NEW.review_reason IS NOT NULL AND (NEW.review_code IS NULL
    OR (NEW.review_reason IS DISTINCT FROM OLD.review_reason AND NEW.review_code IS NOT DISTINCT FROM OLD.review_code)))
EXECUTE FUNCTION {{schema}}.payonce_review_code_follow();

-- The feed's trigger function of version 8, writing the code beside the
-- reason.
CREATE OR REPLACE FUNCTION {{schema}}.payonce_feed_record() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {{schema}}.payonce_feed (pos, operation_id, key, generation, provider, kind, refs,
        from_status, to_status, provider_ref, review_code, review_reason, at)
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
        CASE WHEN NEW.status = 'manual_review' THEN NEW.review_code END,
        CASE WHEN NEW.status = 'manual_review' THEN NEW.review_reason END, NEW.updated_at);
    RETURN NULL;
END
$$;
