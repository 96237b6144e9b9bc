package payonce_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

const refundPath = "/v1/refunds"

func refund(order string, seq int, amount int64) payonce.RefundParams {
	return payonce.RefundParams{OrderID: order, RefundSeq: seq, Amount: amount, Currency: "USD"}
}

func refundPosts(b *bundle) int { return b.fake.Truth().Requests["POST "+refundPath] }

// enqueueRefund records p as pending (open): prepared and enqueued, not
// sent.
func enqueueRefund(t *testing.T, b *bundle, p payonce.RefundParams) {
	t.Helper()
	op, err := b.client.PrepareRefund(b.ctx, p)
	require.NoError(t, err)
	res, err := b.client.Enqueue(b.ctx, op)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultPending, res.Status)
}

func requireRefundable(t *testing.T, b *bundle, order string, want payonce.Refundable) {
	t.Helper()
	got, err := b.client.Refundable(b.ctx, order)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestRefundableAcrossPartialRefunds(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		res, err := b.client.Charge(b.ctx, charge("order-r", 5000))
		require.NoError(t, err)
		pi := res.ProviderRef
		want := payonce.Refundable{OrderID: "order-r", PaymentRef: pi, Currency: "USD", Captured: 5000, Remaining: 5000, NextSeq: 1, AmountsKnown: true}
		requireRefundable(t, b, "order-r", want)

		_, err = b.client.Refund(b.ctx, refund("order-r", 1, 1000))
		require.NoError(t, err)
		over := refund("order-r", 2, 9000)
		over.PaymentRef = pi // no ledger read, no check: the provider refuses
		_, err = b.client.Refund(b.ctx, over)
		require.ErrorIs(t, err, payonce.ErrDeclined)
		enqueueRefund(t, b, refund("order-r", 3, 700))
		want.Refunded, want.Open, want.Remaining, want.NextSeq = 1000, 700, 3300, 4
		requireRefundable(t, b, "order-r", want)

		// More than remains: refused before anything is recorded or sent.
		posts := refundPosts(b)
		_, err = b.client.Refund(b.ctx, refund("order-r", 4, 3301))
		ve := testkit.RequireInvalid(t, err, "Amount")
		for _, s := range []string{"at most 3300 USD", "captured 5000", "refunded 1000", "700 in refunds not settled"} {
			require.Contains(t, ve.Problem, s)
		}
		_, err = b.client.PrepareRefund(b.ctx, refund("order-r", 4, 3301))
		testkit.RequireInvalid(t, err, "Amount")
		require.Equal(t, posts, refundPosts(b), "nothing sent")
		_, err = b.client.Status(b.ctx, payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "order-r", RefundSeq: 4})
		require.ErrorIs(t, err, payonce.ErrNotFound, "nothing recorded")

		_, err = b.client.Refund(b.ctx, refund("order-r", 4, 3300))
		require.NoError(t, err, "exactly what remains")
		want.Refunded, want.Remaining, want.NextSeq = 4300, 0, 5
		requireRefundable(t, b, "order-r", want)
		_, err = b.client.Refund(b.ctx, refund("order-r", 5, 0))
		testkit.RequireInvalid(t, err, "Amount")
		_, err = b.client.Refund(b.ctx, refund("order-r", 5, 1))
		testkit.RequireInvalid(t, err, "Amount")
		require.Equal(t, posts+1, refundPosts(b))

		// A repeat of a recorded refund replays, though nothing remains.
		again, err := b.client.Refund(b.ctx, refund("order-r", 1, 1000))
		require.NoError(t, err)
		require.True(t, again.Replayed)
		_, err = b.client.PrepareRefund(b.ctx, refund("order-r", 3, 700))
		require.NoError(t, err, "the open refund prepared again")

		// A gap would hide the refund from every later check.
		_, err = b.client.Refund(b.ctx, refund("order-r", 7, 0))
		ve = testkit.RequireInvalid(t, err, "RefundSeq")
		require.Contains(t, ve.Problem, "use the next free number, 5")
		require.Equal(t, posts+1, refundPosts(b))

		// A refund recorded beyond a gap (made with PaymentRef) is a
		// repeat all the same.
		far := refund("order-r", 9, 1)
		far.PaymentRef = pi
		op, err := b.client.PrepareRefund(b.ctx, far)
		require.NoError(t, err)
		_, err = b.client.Enqueue(b.ctx, op)
		require.NoError(t, err)
		same, err := b.client.PrepareRefund(b.ctx, refund("order-r", 9, 1))
		require.NoError(t, err)
		require.Equal(t, op.Fingerprint, same.Fingerprint, "the same refund, its PaymentRef read from the charge")
	})
}

func TestRefundableWholeRestAndCapture(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		_, err := b.client.Charge(b.ctx, charge("order-rest", 2000))
		require.NoError(t, err)
		_, err = b.client.Refund(b.ctx, refund("order-rest", 1, 500))
		require.NoError(t, err)
		enqueueRefund(t, b, payonce.RefundParams{OrderID: "order-rest", RefundSeq: 2})
		got, err := b.client.Refundable(b.ctx, "order-rest")
		require.NoError(t, err)
		require.Equal(t, []int64{2000, 500, 1500, 0, 3}, []int64{got.Captured, got.Refunded, got.Open, got.Remaining, int64(got.NextSeq)},
			"an open refund of the rest takes what the others left")
		_, err = b.client.Refund(b.ctx, refund("order-rest", 3, 1))
		testkit.RequireInvalid(t, err, "Amount")

		auth := charge("order-auth", 5000)
		auth.CaptureManual = true
		_, err = b.client.Charge(b.ctx, auth)
		require.NoError(t, err)
		got, err = b.client.Refundable(b.ctx, "order-auth")
		require.NoError(t, err)
		require.Zero(t, got.Captured, "authorized only: nothing taken")
		_, err = b.client.Refund(b.ctx, refund("order-auth", 1, 100))
		testkit.RequireInvalid(t, err, "Amount")
		_, err = b.client.Capture(b.ctx, payonce.CaptureParams{OrderID: "order-auth", Amount: 4000, Currency: "USD"})
		require.NoError(t, err)
		got, err = b.client.Refundable(b.ctx, "order-auth")
		require.NoError(t, err)
		require.Equal(t, int64(4000), got.Captured, "the partial capture")
		require.Equal(t, int64(4000), got.Remaining)

		whole := charge("order-whole", 3000)
		whole.CaptureManual = true
		_, err = b.client.Charge(b.ctx, whole)
		require.NoError(t, err)
		_, err = b.client.Capture(b.ctx, payonce.CaptureParams{OrderID: "order-whole"})
		require.NoError(t, err)
		got, err = b.client.Refundable(b.ctx, "order-whole")
		require.NoError(t, err)
		require.Equal(t, int64(3000), got.Captured, "a capture of Amount 0 takes the whole authorization")

		void := charge("order-void", 3000)
		void.CaptureManual = true
		_, err = b.client.Charge(b.ctx, void)
		require.NoError(t, err)
		_, err = b.client.Cancel(b.ctx, payonce.CancelParams{OrderID: "order-void"})
		require.NoError(t, err)
		got, err = b.client.Refundable(b.ctx, "order-void")
		require.NoError(t, err)
		require.Zero(t, got.Captured, "cancelled")
	})
}

func TestRefundableAfterCleanup(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		res, err := b.client.Charge(b.ctx, charge("order-old", 5000))
		require.NoError(t, err)
		_, err = b.client.Refund(b.ctx, refund("order-old", 1, 500))
		require.NoError(t, err)
		over := refund("order-old", 2, 9000)
		over.PaymentRef = res.ProviderRef
		_, err = b.client.Refund(b.ctx, over)
		require.ErrorIs(t, err, payonce.ErrDeclined)
		b.clock.Advance(31 * 24 * time.Hour)
		rep, err := newReconciler(t, b, nil).Cleanup(b.ctx, 30*24*time.Hour, 100)
		require.NoError(t, err)
		require.Equal(t, 3, rep.Tombstoned)

		got, err := b.client.Refundable(b.ctx, "order-old")
		require.NoError(t, err)
		require.Equal(t, payonce.Refundable{OrderID: "order-old", PaymentRef: res.ProviderRef, NextSeq: 3}, got,
			"tombstones keep the numbering and the reference, not the amounts")
		_, err = b.client.Refund(b.ctx, refund("order-old", 4, 100))
		testkit.RequireInvalid(t, err, "RefundSeq")
		r3, err := b.client.Refund(b.ctx, refund("order-old", 3, 4500))
		require.NoError(t, err, "amounts unknown: not checked; the provider decides")
		require.Equal(t, payonce.ResultSucceeded, r3.Status)
	})
}

func TestRefundableErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, err := b.client.Refundable(b.ctx, "no-such-order")
	require.ErrorIs(t, err, payonce.ErrNotFound)
	_, err = b.client.Refundable(b.ctx, "")
	testkit.RequireInvalid(t, err, "OrderID")
	_, err = b.client.RefundableTx(b.ctx, nil, "order")
	testkit.RequireInvalid(t, err, "rd")
	_, err = b.client.PrepareRefundTx(b.ctx, nil, refund("order", 1, 1))
	testkit.RequireInvalid(t, err, "rd")
	_, err = b.client.PrepareCaptureTx(b.ctx, nil, payonce.CaptureParams{OrderID: "order"})
	testkit.RequireInvalid(t, err, "rd")
	_, err = b.client.PrepareCancelTx(b.ctx, nil, payonce.CancelParams{OrderID: "order"})
	testkit.RequireInvalid(t, err, "rd")
	_, err = b.client.StatusTx(b.ctx, nil, payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "order"})
	testkit.RequireInvalid(t, err, "rd")

	res, err := b.client.Charge(b.ctx, payonce.ChargeParams{OrderID: "declined", Amount: 100, Currency: "USD", PaymentMethod: "pm_card_chargeDeclined"})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	got, err := b.client.Refundable(b.ctx, "declined")
	require.NoError(t, err)
	require.Equal(t, payonce.Refundable{OrderID: "declined", PaymentRef: res.ProviderRef, NextSeq: 1, AmountsKnown: true}, got)
}

// txReads is what the Tx readers must show inside the caller's transaction
// tx: the refund it recorded and has not committed.
func txReads(t *testing.T, b *bundle, rd ledger.Reader, record func(ledger.NewOperation)) {
	t.Helper()
	op, err := b.client.PrepareRefundTx(b.ctx, rd, refund("order-tx", 1, 600))
	require.NoError(t, err)
	record(op)
	got, err := b.client.RefundableTx(b.ctx, rd, "order-tx")
	require.NoError(t, err)
	require.Equal(t, []int64{1000, 600, 400, 2}, []int64{got.Captured, got.Open, got.Remaining, int64(got.NextSeq)})
	res, err := b.client.StatusTx(b.ctx, rd, payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "order-tx", RefundSeq: 1})
	require.ErrorIs(t, err, payonce.ErrProviderUnavailable, "pending")
	require.Equal(t, op.ID, res.OperationID)
	_, err = b.client.PrepareRefundTx(b.ctx, rd, refund("order-tx", 2, 401))
	testkit.RequireInvalid(t, err, "Amount")
	_, err = b.client.PrepareCaptureTx(b.ctx, rd, payonce.CaptureParams{OrderID: "order-tx"})
	require.NoError(t, err)
	_, err = b.client.PrepareCancelTx(b.ctx, rd, payonce.CancelParams{OrderID: "order-tx"})
	require.NoError(t, err)

	outside, err := b.client.Refundable(b.ctx, "order-tx")
	require.NoError(t, err)
	require.Equal(t, 1, outside.NextSeq, "the store's own connection does not see the uncommitted refund")
}

func TestTxReadersSeeUncommittedPostgres(t *testing.T) {
	t.Parallel()
	b, pool, store := setupPGPool(t, setupOpts{})
	_, err := b.client.Charge(b.ctx, charge("order-tx", 1000))
	require.NoError(t, err)
	tx, err := pool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx.Rollback(b.ctx) //nolint:errcheck
	rd := store.ReaderTx(tx)
	txReads(t, b, rd, func(op ledger.NewOperation) {
		_, created, err := store.CreateOrGetTx(b.ctx, tx, op, b.clock.Now())
		require.NoError(t, err)
		require.True(t, created)
	})
	_, _, err = rd.Get(b.ctx, "")
	require.ErrorIs(t, err, ledger.ErrInvalid)
	_, _, err = rd.Get(b.ctx, "no-such-id")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.NoError(t, tx.Rollback(b.ctx))
	_, _, err = store.ReaderTx(nil).Get(b.ctx, "x")
	require.ErrorIs(t, err, ledger.ErrInvalid)
}

func TestTxReadersSeeUncommittedSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	store, err := ledgersqlite.Open(path, ledgersqlite.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Migrate(context.Background()))
	b := setupOn(t, setupOpts{}, store)
	_, err = b.client.Charge(b.ctx, charge("order-tx", 1000))
	require.NoError(t, err)

	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	tx, err := db.BeginTx(b.ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback() //nolint:errcheck
	rd := store.ReaderTx(tx)
	txReads(t, b, rd, func(op ledger.NewOperation) {
		_, created, err := store.CreateOrGetTx(b.ctx, tx, op, b.clock.Now())
		require.NoError(t, err)
		require.True(t, created)
	})
	_, _, err = rd.Get(b.ctx, "")
	require.ErrorIs(t, err, ledger.ErrInvalid)
	_, _, err = rd.Get(b.ctx, "no-such-id")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.NoError(t, tx.Rollback())
	_, _, err = store.ReaderTx(nil).Get(b.ctx, "x")
	require.ErrorIs(t, err, ledger.ErrInvalid)
}

// TestRefundTxUnderRowLocksDoesNotStarvePool: a service that picks the
// refund number under its order's row lock, with 10 concurrent refunds on a
// pool of 4 connections. The Tx variants read through each transaction and
// all finish; the plain variants, called while every connection is held by
// such a transaction, wait for a connection that never comes back, and say
// so when their deadline ends.
func TestRefundTxUnderRowLocksDoesNotStarvePool(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(testkit.URL(t))
	require.NoError(t, err)
	cfg.MaxConns = 4
	pool := testkit.NewPoolConfig(t, cfg)
	schema := testkit.NewSchema(t, pool)
	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(context.Background()))
	b := setupOn(t, setupOpts{}, store)
	orders := pgx.Identifier{schema, "orders"}.Sanitize()
	_, err = pool.Exec(b.ctx, "CREATE TABLE "+orders+" (id text PRIMARY KEY, refunds int NOT NULL DEFAULT 0)")
	require.NoError(t, err)
	const n = 10
	for i := range n {
		id := "order-" + strconv.Itoa(i)
		_, err := pool.Exec(b.ctx, "INSERT INTO "+orders+" (id) VALUES ($1)", id)
		require.NoError(t, err)
		_, err = b.client.Charge(b.ctx, charge(id, 1000))
		require.NoError(t, err)
	}

	refundUnderLock := func(ctx context.Context, id string) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT id FROM "+orders+" WHERE id = $1 FOR UPDATE", id); err != nil {
				return err
			}
			rd := store.ReaderTx(tx)
			r, err := b.client.RefundableTx(ctx, rd, id)
			if err != nil {
				return err
			}
			op, err := b.client.PrepareRefundTx(ctx, rd, payonce.RefundParams{OrderID: id, RefundSeq: r.NextSeq, Amount: 100, Currency: "USD"})
			if err != nil {
				return err
			}
			_, _, err = store.CreateOrGetTx(ctx, tx, op, b.clock.Now())
			return err
		})
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = refundUnderLock(ctx, "order-"+strconv.Itoa(i)) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "refund of order %d", i)
		got, err := b.client.Refundable(b.ctx, "order-"+strconv.Itoa(i))
		require.NoError(t, err)
		require.Equal(t, 2, got.NextSeq)
		require.Equal(t, int64(900), got.Remaining)
	}

	// The plain variant inside such transactions: every connection held,
	// its read waits out the deadline, and the error says why.
	held := make(chan struct{}, cfg.MaxConns)
	release := make(chan struct{})
	plainErrs := make([]error, cfg.MaxConns)
	// No transaction ends (giving its connection back) before every read
	// has ended: otherwise a read whose deadline came later could take the
	// connection the first one to time out gave back.
	var read sync.WaitGroup
	read.Add(int(cfg.MaxConns))
	for i := range int(cfg.MaxConns) {
		wg.Go(func() {
			plainErrs[i] = pgx.BeginFunc(b.ctx, pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(b.ctx, "SELECT id FROM "+orders+" WHERE id = $1 FOR UPDATE", "order-"+strconv.Itoa(i)); err != nil {
					return err
				}
				held <- struct{}{}
				<-release
				short, cancel := context.WithTimeout(b.ctx, 200*time.Millisecond)
				defer cancel()
				_, err := b.client.PrepareRefund(short, refund("order-"+strconv.Itoa(i), 2, 100))
				read.Done()
				read.Wait()
				return err
			})
		})
	}
	for range cfg.MaxConns {
		<-held // every connection is now held by a transaction
	}
	close(release)
	wg.Wait()
	for _, err := range plainErrs {
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "store's own")
		require.ErrorContains(t, err, "use the Tx variant, e.g. PrepareRefundTx")
	}
}
