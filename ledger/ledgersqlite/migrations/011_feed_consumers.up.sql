-- payonce ledger, schema version 11 (SQLite): the cursors of the named
-- feed consumers.
--
-- A feed consumer (ledgersqlite.NewConsumer) keeps its position here, in
-- the ledger's own database file, so that it moves in the same transaction
-- as the consumer's handler writes: the mark and the effect commit
-- together, and an entry takes effect exactly once across crashes and
-- processes sharing the file.
--
-- Each page is applied by a compare-and-set on the row, as the first
-- statement of the transaction (which so takes the file's write lock
-- before it reads anything):
--
--     UPDATE payonce_feed_consumers SET cursor = <last of page>, ...
--     WHERE name = <name> AND cursor = <cursor read before the page>
--
-- A second process applying the same page waits for the write lock, then
-- finds the cursor moved, updates nothing and rolls back.
--
-- cursor is a ledger.FeedCursor as the feed handed it out ('' before the
-- first entry); cursor_at is At of that entry and updated_at the
-- consumer's clock when it last moved the cursor (or registered), both in
-- microseconds since the Unix epoch like every time of this schema. Stats
-- reads the rows, and for each the At of the first feed entry after its
-- cursor: one lookup in the feed's primary key (seq) per consumer.

CREATE TABLE payonce_feed_consumers (
    name       TEXT    PRIMARY KEY,
    cursor     TEXT    NOT NULL DEFAULT '',
    cursor_at  INTEGER,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
