-- payonce ledger, schema version 8 (SQLite): how far the settlement feed
-- is known to be durable.
--
-- Why: Finish commits with synchronous=NORMAL by default (see
-- Config.DurableOutcomes), and a store configured with SynchronousNormal
-- commits everything that way. Such a commit is visible at once but
-- reaches the disk only with a later synced commit or checkpoint, so an OS
-- crash or a power cut can take it back, with its feed entry. Handed out
-- before that, the entry is one the consumer acts on although the ledger
-- lost it, and AUTOINCREMENT numbers the next entries from what survived:
-- at or below the consumer's cursor, where the consumer never reads.
--
-- So Feed makes the WAL durable up to what it read before it returns a
-- page (Store.Feed): it commits a write to this table with
-- synchronous=FULL, which syncs the whole WAL file, earlier frames
-- included. seq is the largest feed seq handed out that way: everything
-- at or below it is on disk, so a page that ends at or below it needs no
-- sync again (a consumer reading a page twice, or several consumers
-- reading the same entries).
--
-- One row (id 1), written by Feed only; a missing row reads as 0.

CREATE TABLE payonce_feed_durable (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
) STRICT;
