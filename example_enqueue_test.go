package payonce_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// An order and its charge recorded in one transaction of the service's own
// database, then sent by a Reconciler: both commit together, or, when the
// transaction rolls back, neither exists and nothing is ever sent. Here the
// service's database is the ledger's SQLite file; with PostgreSQL it is
// ledgerpg.Store.CreateOrGetTx with a pgx.Tx.
func ExampleClient_PrepareCharge() {
	env := newOrdersEnv()
	defer env.Close()
	ctx := context.Background()
	client, err := payonce.New(payonce.Config{Provider: env.PSP, Store: env.Store})
	if err != nil {
		panic(err)
	}

	placeOrder := func(orderID string, amount int64) error {
		// Keyed, fingerprinted and validated; nothing written yet.
		op, err := client.PrepareCharge(ctx, payonce.ChargeParams{OrderID: orderID,
			Amount: amount, Currency: "USD", PaymentMethod: "pm_card_visa"})
		if err != nil {
			return err
		}
		tx, err := env.DB.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // does nothing once committed
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, amount) VALUES (?, ?)`, orderID, amount); err != nil {
			return err
		}
		if _, _, err := env.Store.CreateOrGetTx(ctx, tx, op, time.Now()); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := placeOrder("order-42", 1999); err != nil {
		panic(err)
	}

	res, err := client.Status(ctx, payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "order-42"})
	fmt.Println("after commit:", res.Status, payonce.HTTPStatus(err)) // recorded, nothing sent yet

	rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: env.Store, Clients: []*payonce.Client{client}})
	if err != nil {
		panic(err)
	}
	defer rec.Close()
	rep, err := rec.RunOnce(ctx) // or go rec.Run(ctx)
	fmt.Println("reconciler: claimed", rep.Claimed, "settled", rep.Settled, err)

	res, err = client.Status(ctx, payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "order-42"})
	fmt.Println("after the pass:", res.Status, payonce.HTTPStatus(err))
	// Output:
	// after commit: pending 202
	// reconciler: claimed 1 settled 1 <nil>
	// after the pass: succeeded 200
}

// ordersEnv is the service's own database (an SQLite file in a temporary
// directory, with an orders table), the ledger on the same database, and
// the Stripe adapter pointed at a fake Stripe (package mocks) on 127.0.0.1.
type ordersEnv struct {
	DB    *sql.DB
	Store *ledgersqlite.Store
	PSP   payonce.Provider
	dir   string
	fake  *mocks.Stripe
}

func newOrdersEnv() *ordersEnv {
	dir, err := os.MkdirTemp("", "payonce-example")
	if err != nil {
		panic(err)
	}
	// Immediate transactions and a busy timeout, as CreateOrGetTx asks.
	dsn := url.URL{Scheme: "file", Path: filepath.Join(dir, "shop.db"),
		RawQuery: "_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"}
	db, err := sql.Open("sqlite", dsn.String())
	if err != nil {
		panic(err)
	}
	if _, err := db.Exec(`CREATE TABLE orders (id TEXT PRIMARY KEY, amount INTEGER NOT NULL)`); err != nil {
		panic(err)
	}
	store, err := ledgersqlite.New(db, ledgersqlite.Config{})
	if err != nil {
		panic(err)
	}
	if err := store.Migrate(context.Background()); err != nil {
		panic(err)
	}
	fake := mocks.NewStripe(mocks.StripeOptions{})
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL()})
	if err != nil {
		panic(err)
	}
	return &ordersEnv{DB: db, Store: store, PSP: psp, dir: dir, fake: fake}
}

func (e *ordersEnv) Close() {
	e.fake.Close()
	_ = e.Store.Close()
	_ = e.DB.Close()
	_ = os.RemoveAll(e.dir)
}
