package main

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/providers/stripe"
)

// TestFeedReplicasApplyAPageOnce runs two feed consumers at once on one
// page, as two replicas of the service do: both read the same cursor and
// the same page, and only one may apply it. A lock on feed_cursors holds
// both until each has read the page and started applying it; then the
// first commits and the second's compare-and-set on the cursor must find
// it moved and roll its page back, leaving every order settled once.
func TestFeedReplicasApplyAPageOnce(t *testing.T) {
	dbURL := databaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := "httpservice_feed_" + strings.ToLower(rand.Text())
	app := schema // names this test's sessions in pg_stat_activity
	cfg, err := pgxpool.ParseConfig(withPoolSize(dbURL, 6))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	if err := migrate(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	psp, err := stripe.New(stripe.Config{APIKey: "sk_test_unused", BaseURL: "http://127.0.0.1:1"}) // never called
	if err != nil {
		t.Fatal(err)
	}
	client, err := payonce.New(payonce.Config{Provider: psp, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	s := &service{pool: pool, store: store, client: client, log: slog.New(slog.NewTextHandler(io.Discard, nil))}

	// Three orders recorded as createOrder records them, each then declined
	// (failed): six feed entries, three of which settle an order.
	const n = 3
	for i := range n {
		p := payonce.ChargeParams{OrderID: "order-" + string(rune('a'+i)), Amount: 100, Currency: "USD", PaymentMethod: "pm_card_visa"}
		op, err := client.PrepareCharge(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO orders (id, amount, currency, payment_method) VALUES ($1, $2, $3, $4)`,
				p.OrderID, p.Amount, p.Currency, p.PaymentMethod); err != nil {
				return err
			}
			_, _, err := store.CreateOrGetTx(ctx, tx, op, now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Claim(ctx, ledger.ClaimParams{ID: op.ID, Owner: "test", Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Finish(ctx, ledger.FinishParams{ID: op.ID, Owner: "test", Now: now, From: ledger.StatusPending, To: ledger.StatusFailed}); err != nil {
			t.Fatal(err)
		}
	}
	// The feed hands an entry out once every transaction that was running
	// when it was written has ended, anywhere in the cluster: wait for all.
	for {
		page, err := store.Feed(ctx, ledger.FeedParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 2*n {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the feed holds %d entries, want %d", len(page), 2*n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO feed_cursors (name, cursor) VALUES ('orders', '')`); err != nil {
		t.Fatal(err)
	}

	// The lock lets both replicas read the cursor and the page, and stops
	// them at their first write to feed_cursors (one waits there, the
	// other on the first one's order rows).
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(context.Background())
	if _, err := hold.Exec(ctx, `LOCK TABLE feed_cursors IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := s.applyFeedPage(ctx, "orders")
			errs <- err
		}()
	}
	for waiting := 0; waiting < 2; {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
			app).Scan(&waiting); err != nil {
			t.Fatalf("waiting for both replicas to apply the page: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var failed int
	for range 2 {
		if err := <-errs; err != nil {
			failed++
			t.Logf("the replica that lost: %v", err)
		}
	}
	if failed != 1 {
		t.Errorf("%d of two replicas failed to apply the page, want one", failed)
	}
	rows, err := pool.Query(ctx, `SELECT id, state, settled FROM orders ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type order struct {
		id, state string
		settled   int
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (order, error) {
		var o order
		return o, r.Scan(&o.id, &o.state, &o.settled)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range got {
		if o.state != "failed" || o.settled != 1 {
			t.Errorf("order %s: %s, settled %d times by the feed consumers, want failed once", o.id, o.state, o.settled)
		}
	}
	if len(got) != n {
		t.Errorf("%d orders, want %d", len(got), n)
	}
}
