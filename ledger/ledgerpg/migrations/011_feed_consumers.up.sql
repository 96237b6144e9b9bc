-- payonce ledger, version 11: the cursors of the named feed consumers.
--
-- A feed consumer (ledgerpg.NewConsumer) keeps its position here, in the
-- ledger's own database, so that it moves in the same transaction as the
-- consumer's handler writes: the mark and the effect commit together, and
-- an entry takes effect exactly once across crashes and replicas.
--
-- Each page is applied by a compare-and-set on the row, as the first
-- statement of the transaction:
--
--     UPDATE payonce_feed_consumers SET cursor = <last of page>, ...
--     WHERE name = <name> AND cursor = <cursor read before the page>
--
-- The UPDATE takes the row's lock; a second replica's UPDATE of the same
-- page waits for it, then (READ COMMITTED rechecks the WHERE on the row as
-- committed) finds the cursor moved, updates nothing and rolls back.
--
-- cursor is a ledger.FeedCursor as the feed handed it out ('' before the
-- first entry); cursor_at is At of that entry; updated_at the consumer's
-- clock when it last moved the cursor (or registered). Stats reads the
-- rows, and for each the At of the first feed entry after its cursor: one
-- lookup in the feed's primary key (pos, seq) per consumer.

CREATE TABLE {{schema}}.payonce_feed_consumers (
    name       text        PRIMARY KEY,
    cursor     text        NOT NULL DEFAULT '',
    cursor_at  timestamptz,
    updated_at timestamptz NOT NULL
);
