package main

import (
	"errors"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// TestFeedConsumerKilledBetweenWriteAndCommit SIGKILLs the service while
// its feed consumer is inside a page: it has written order A's row and not
// committed. No hook in the service: the test holds a row lock on order B,
// which the same page writes after A, so the consumer stops there. After
// the kill the page must be gone with its cursor (A not settled), and the
// restarted service must apply it once: A and B settled exactly once, the
// cursor in payonce_feed_consumers moved past them.
func TestFeedConsumerKilledBetweenWriteAndCommit(t *testing.T) {
	h := newHarness(t, harnessOptions{faultRate: "0", poolSize: 6, timeout: 2 * time.Minute})
	ctx := h.ctx
	svc := h.startService(t, "service#1")
	cursor := func() string {
		var c string
		err := h.pool.QueryRow(ctx, `SELECT cursor FROM payonce_feed_consumers WHERE name = 'orders'`).Scan(&c)
		if errors.Is(err, pgx.ErrNoRows) {
			return "" // not registered yet: at the start of the feed
		}
		require.NoError(t, err)
		return c
	}
	type row struct {
		state   string
		settled int
	}
	order := func(id string) row {
		var r row
		require.NoError(t, h.pool.QueryRow(ctx, `SELECT state, settled FROM orders WHERE id = $1`, id).Scan(&r.state, &r.settled))
		return r
	}

	// 1. Hold back the feed: it hands an entry out only once every
	// transaction older than the entry has ended (its gap rule), so this
	// one, with a transaction id older than A's and B's entries, keeps the
	// consumer from seeing any of them until it ends. They then arrive in
	// one page, A's before B's.
	gap, err := h.pool.Begin(ctx)
	require.NoError(t, err)
	defer gap.Rollback(ctx)
	_, err = gap.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	for _, id := range []string{"order-a", "order-b"} {
		code, body, err := post(h.httpc, h.base+"/orders", orderRequest{ID: id, Amount: 1500, Currency: "USD", PaymentMethod: "pm_card_visa"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "order %s: %s", id, body)
	}
	before := cursor()
	require.Equal(t, row{"pending", 0}, order("order-a"), "the consumer applied A's entries while the feed was held back")

	// 2. Lock B's row (this transaction is younger than the entries: it
	// does not hold them back), then let the feed go.
	lock, err := h.pool.Begin(ctx)
	require.NoError(t, err)
	defer lock.Rollback(ctx)
	_, err = lock.Exec(ctx, `SELECT 1 FROM orders WHERE id = 'order-b' FOR UPDATE`)
	require.NoError(t, err)
	require.NoError(t, gap.Rollback(ctx))

	// 3. Wait for the consumer's backend to wait on the lock.
	for waiting := 0; waiting == 0; {
		require.NoError(t, h.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE 'UPDATE orders%'`, h.app).Scan(&waiting),
			"waiting for the consumer to block on order B\n%s", svc.tail())
		time.Sleep(20 * time.Millisecond)
	}
	// It has written A's row and not committed: A is locked, by it.
	_, err = h.pool.Exec(ctx, `SELECT 1 FROM orders WHERE id = 'order-a' FOR UPDATE NOWAIT`)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr) && pgErr.Code == "55P03",
		"order A's row is not locked: the consumer's write of A is not in the page's open transaction (or a long transaction elsewhere in the cluster split the page in two): %v", err)
	require.Equal(t, row{"pending", 0}, order("order-a"))

	// 4. SIGKILL, then release B: the backend gets the lock, finds its
	// client gone and rolls the page back, cursor included.
	svc.kill(t)
	require.NoError(t, lock.Rollback(ctx))
	for n := 1; n > 0; {
		require.NoError(t, h.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, h.app).Scan(&n))
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, row{"pending", 0}, order("order-a"), "the killed consumer's write committed")
	require.Equal(t, row{"pending", 0}, order("order-b"))
	require.Equal(t, before, cursor(), "the killed consumer's cursor moved")

	// 5. Restart: the page is applied again, once.
	svc = h.startService(t, "service#2")
	for order("order-a").settled == 0 || order("order-b").settled == 0 {
		require.NoError(t, ctx.Err(), "the restarted consumer did not settle A and B\n%s", svc.tail())
		time.Sleep(50 * time.Millisecond)
	}
	// SIGTERM: its final pass applies anything left, and it exits 0.
	require.NoError(t, svc.stop(syscall.SIGTERM, 20*time.Second), svc.tail())
	require.Equal(t, row{"paid", 1}, order("order-a"))
	require.Equal(t, row{"paid", 1}, order("order-b"))
	require.NotEqual(t, before, cursor(), "the consumer's cursor in payonce_feed_consumers did not advance")
}
