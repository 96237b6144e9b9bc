package ledgersqlite_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// Feed hands out entries only once the WAL holding them is synced: a
// commit at synchronous=NORMAL (a lazy Finish, or every write of a store
// configured with SynchronousNormal) is visible before it is on disk, and
// an OS crash or a power cut would take it back, with its feed entry, and
// number the next entries at or below the consumer's cursor. Feed syncs
// with a small write at synchronous=FULL, so while another process holds
// the write lock past the busy timeout it fails rather than hand out
// entries it could not sync; a page already synced by an earlier Feed
// needs no write.
func TestFeedSyncsBeforeHandingOut(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := dbPath(t)
	s := openAt(t, path, ledgersqlite.Config{Synchronous: ledgersqlite.SynchronousNormal, BusyTimeout: 50 * time.Millisecond})
	raw := rawDB(t, path)
	durable := func() int64 {
		var seq int64
		require.NoError(t, raw.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM payonce_feed_durable WHERE id = 1), 0)`).Scan(&seq))
		return seq
	}
	res, err := s.Begin(ctx, begin(newOp("op-1"), "w", t0, true))
	require.NoError(t, err)
	_, err = s.Finish(ctx, succeed("op-1", "w", t0.Add(time.Second), res.Attempt.Number))
	require.NoError(t, err)
	require.Zero(t, durable())

	release := holdWriteLock(t, raw)
	got, err := s.Feed(ctx, ledger.FeedParams{})
	require.Error(t, err, "the sync cannot commit while another process writes")
	require.Nil(t, got, "no entry is handed out before it is synced")
	release()
	entries, err := s.Feed(ctx, ledger.FeedParams{})
	require.NoError(t, err)
	require.Len(t, entries, 2)
	_, last, err := ledgerdriver.ParseFeedCursor(entries[1].Cursor)
	require.NoError(t, err)
	require.Equal(t, last, durable(), "synced up to the page's last entry")

	release = holdWriteLock(t, raw)
	again, err := s.Feed(ctx, ledger.FeedParams{})
	require.NoError(t, err, "a page synced before needs no write")
	require.Equal(t, entries, again)
	release()

	_, _, err = s.CreateOrGet(ctx, newOp("op-2"), t0)
	require.NoError(t, err)
	release = holdWriteLock(t, raw)
	_, err = s.Feed(ctx, ledger.FeedParams{After: entries[1].Cursor})
	require.Error(t, err, "a new entry needs a sync")
	release()
	next, err := s.Feed(ctx, ledger.FeedParams{After: entries[1].Cursor})
	require.NoError(t, err)
	require.Len(t, next, 1)
	require.Equal(t, "op-2", next[0].OperationID)
	_, last, err = ledgerdriver.ParseFeedCursor(next[0].Cursor)
	require.NoError(t, err)
	require.Equal(t, last, durable())

	// The sync commits at FULL, which syncs the WAL file, whatever the
	// store's own level.
	level, err := ledgersqlite.FeedSyncSynchronous(ctx, s)
	require.NoError(t, err)
	require.Equal(t, 2, level)
}
