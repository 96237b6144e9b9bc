package ledgersqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// Begin and CreateOrGet answer a new operation without reading its row
// back: what they return must be what Get reads, also for the values a
// column could change (a key TTL below the millisecond, text JSON escapes,
// non-ASCII text, a payment reference).
func TestCreatedOperationIsAsStored(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	now := t0.Add(123456789 * time.Nanosecond) // below the microsecond too
	tricky := func(id string) ledger.NewOperation {
		op := newOp(id)
		op.References = []string{"order <&> \u2028 \"q\" \\", "ünïcode ✓"}
		op.KeyTTL = 24*time.Hour + 1500*time.Microsecond
		op.PaymentRef = "pay_" + id
		op.Request = []byte(`{"amount":1000,"note":"<&>"}`)
		return op
	}

	res, err := s.Begin(ctx, begin(tricky("op-begin"), "w", now, true))
	require.NoError(t, err)
	require.True(t, res.Created)
	got, _, err := s.Get(ctx, "op-begin")
	require.NoError(t, err)
	require.Equal(t, got, res.Op)

	res, err = s.Begin(ctx, begin(tricky("op-unclaimed"), "w", now, false))
	require.NoError(t, err)
	got, _, err = s.Get(ctx, "op-unclaimed")
	require.NoError(t, err)
	require.Equal(t, got, res.Op)

	created, isNew, err := s.CreateOrGet(ctx, tricky("op-create"), now)
	require.NoError(t, err)
	require.True(t, isNew)
	got, _, err = s.Get(ctx, "op-create")
	require.NoError(t, err)
	require.Equal(t, got, created)
	require.Equal(t, 24*time.Hour+time.Millisecond, created.KeyTTL, "the TTL as stored, in whole milliseconds")
}

// The pool Open creates keeps statements prepared per connection. A cached
// statement run again while rows read from it are still open must not
// disturb those rows, and more distinct texts than the cache holds still
// run.
func TestStatementCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t)
	for i := range 3 {
		_, _, err := s.CreateOrGet(ctx, newOp(fmt.Sprintf("op-%d", i)), t0)
		require.NoError(t, err)
	}
	db := ledgersqlite.DB(s)
	c, err := db.Conn(ctx)
	require.NoError(t, err)
	defer c.Close()

	const q = `SELECT id FROM payonce_operations ORDER BY id`
	outer, err := c.QueryContext(ctx, q)
	require.NoError(t, err)
	var ids []string
	for outer.Next() {
		var id string
		require.NoError(t, outer.Scan(&id))
		ids = append(ids, id)
		// The same text while outer is open: it runs unprepared.
		var n int
		inner, err := c.QueryContext(ctx, q)
		require.NoError(t, err)
		for inner.Next() {
			n++
		}
		require.NoError(t, inner.Err())
		require.NoError(t, inner.Close())
		require.Equal(t, 3, n)
	}
	require.NoError(t, outer.Err())
	require.NoError(t, outer.Close())
	require.Equal(t, []string{"op-0", "op-1", "op-2"}, ids)

	// Once outer is closed the cached statement is free again.
	var first string
	require.NoError(t, c.QueryRowContext(ctx, q).Scan(&first))
	require.Equal(t, "op-0", first)

	// Many distinct texts: beyond the cache's bound they run unprepared.
	for i := range 200 {
		var v int
		require.NoError(t, c.QueryRowContext(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&v))
		require.Equal(t, i, v)
	}

	// A statement that fails (a constraint) leaves its cached statement
	// usable.
	for range 2 {
		_, err := c.ExecContext(ctx, `INSERT INTO payonce_tombstones (id) VALUES (?)`, "x")
		require.Error(t, err)
	}
	require.NoError(t, c.QueryRowContext(ctx, q).Scan(&first))
}

// The statements of a write transaction run without the driver's interrupt
// watch, but once the caller's context has ended the next one fails with
// its error, so the write is rolled back as before.
func TestQuietTxStopsAtCancel(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	c, err := ledgersqlite.DB(s).Conn(t.Context())
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	q := ledgersqlite.QuietTx(ctx, c)
	var one int
	require.NoError(t, q.QueryRowContext(ctx, `SELECT 1`).Scan(&one))
	_, err = q.ExecContext(ctx, `SELECT 1`)
	require.NoError(t, err)
	cancel()
	require.ErrorIs(t, q.QueryRowContext(ctx, `SELECT 1`).Scan(&one), context.Canceled)
	_, err = q.ExecContext(ctx, `SELECT 1`)
	require.ErrorIs(t, err, context.Canceled)
	_, err = q.QueryContext(ctx, `SELECT 1`)
	require.ErrorIs(t, err, context.Canceled)
}
