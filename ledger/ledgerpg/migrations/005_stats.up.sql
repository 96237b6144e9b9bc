-- payonce ledger, version 5: the open-work index, for Stats.
--
-- What it buys: Stats counts the pending, in_flight and unknown operations
-- by (status, provider, kind) and finds the oldest of each group from this
-- index alone (an index-only scan where the visibility map allows; the
-- oldest operation's ID costs one lookup per group), so its cost follows the
-- open work, never the settled history that makes up nearly all of the
-- table. Without it every call reads the whole table.
--
-- What it costs: one more index entry for every write that leaves a row
-- pending, in_flight or unknown (the insert of a new operation, and each
-- status change that is not a HOT update, which is nearly all of them: they
-- change next_check_at, which the due index holds). A write that settles an
-- operation adds nothing here, and vacuum removes the entries of the
-- settled rows, so the index stays as small as the open work. The columns
-- are the fewest Stats needs: no id (its lookup is once per group) and no
-- review columns.
--
-- manual_review is not in it: the review index (review_at, id) WHERE status
-- = 'manual_review' of version 1 already holds those rows apart, and Stats
-- reads their review_reason from the table anyway. The predicate is the
-- literal list that Stats' statement repeats (ledger/internal/statsql);
-- changing one without the other makes the planner ignore the index.
--
-- Built inside the migration's transaction, which holds a write lock on
-- payonce_operations while the build reads the table (seconds for a
-- million rows).

CREATE INDEX payonce_operations_open_idx
    ON {{schema}}.payonce_operations (status, provider, kind, created_at)
    WHERE status IN ('pending', 'in_flight', 'unknown');
