-- payonce ledger, schema version 5 (SQLite): the open-work index, for Stats.
--
-- What it buys: Stats counts the pending, in_flight and unknown operations
-- by (status, provider, kind) and finds the oldest of each group from this
-- covering index alone (the oldest operation's ID costs one lookup per
-- group), so its cost follows the open work, never the settled history
-- that makes up nearly all of the table. Without it every call reads the
-- whole table.
--
-- What it costs: one more index entry to write for every write of a row
-- that is left pending, in_flight or unknown (the insert of a new
-- operation, and every update of an open one: the store's updates set
-- status each time, so SQLite rewrites the entry), and its removal when the
-- operation settles. Settled rows are not in it, so it stays as small as
-- the open work. The columns are the fewest Stats needs: no id (its lookup
-- is once per group) and no review columns.
--
-- manual_review is not in it: the review index (review_at, id) WHERE status
-- = 'manual_review' of version 1 already holds those rows apart, and Stats
-- reads their review_reason from the table anyway. The predicate is the
-- literal list that Stats' statement repeats (ledger/internal/statsql):
-- SQLite uses a partial index only when the query's WHERE clause contains
-- the index's terms as written.

CREATE INDEX payonce_operations_open
    ON payonce_operations (status, provider, kind, created_at)
    WHERE status IN ('pending', 'in_flight', 'unknown');
