package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

const postIntents = "POST /v1/payment_intents"

// The journal peer's retry path: a repeated order returns the stored
// answer without a request; a row left IN_PROGRESS (a crash after the
// send) is sent again with the same key, which the provider answers with
// the first payment; an order journaled under another key is refused.
// Skipped without PAYONCE_TEST_DATABASE_URL.
func TestJournalRetry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, _, fake, psp := peerBench(t)
	j, err := b.newJournalPeer(ctx, psp, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer j.pool.Close()

	first, err := j.charge(ctx, "order-a")
	if err != nil {
		t.Fatal(err)
	}
	again, err := j.charge(ctx, "order-a")
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(first) {
		t.Errorf("repeated charge answered %s, want the stored %s", again, first)
	}
	if n := fake.Truth().Requests[postIntents]; n != 1 {
		t.Errorf("%d requests for a repeated charge, want 1", n)
	}

	// The first call of order-b journaled and sent, then died before
	// recording the answer.
	key, err := chargeKey(psp, "order-b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.pool.Exec(ctx, j.insert, key, "order-b", "{}"); err != nil {
		t.Fatal(err)
	}
	sent, err := postCharge(ctx, psp, j.hc, "order-b", key)
	if err != nil {
		t.Fatal(err)
	}
	recovered, err := j.charge(ctx, "order-b")
	if err != nil {
		t.Fatal(err)
	}
	if id(t, recovered) != id(t, sent) {
		t.Errorf("the retry charged %s, the first send %s", id(t, recovered), id(t, sent))
	}
	var status string
	if err := j.pool.QueryRow(ctx, "SELECT status FROM "+j.table+" WHERE idempotency_key = $1", key).Scan(&status); err != nil || status != "DONE" {
		t.Errorf("status %q (%v) after the retry, want DONE", status, err)
	}
	if byOp := fake.Truth().ChargesBy(stripe.MetaOperation); len(byOp) != 2 || byOp[key] != 1 {
		t.Errorf("charges by operation %v, want one each for 2 orders", byOp)
	}

	if _, err := j.pool.Exec(ctx, j.insert, "another-key", "order-c", "{}"); err != nil {
		t.Fatal(err)
	}
	if _, err := j.charge(ctx, "order-c"); !errors.Is(err, errOrderTaken) {
		t.Errorf("charging an order journaled under another key: %v, want errOrderTaken", err)
	}
}

// id is the payment id of a Stripe answer.
func id(t *testing.T, body []byte) string {
	t.Helper()
	var pi struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &pi); err != nil || pi.ID == "" {
		t.Fatalf("no id in %s (%v)", body, err)
	}
	return pi.ID
}

// The River peer at one caller: each order's job is worked once and its
// completion wakes the caller. Skipped without PAYONCE_TEST_DATABASE_URL.
func TestRiverPeerOrders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, pool, fake, psp := peerBench(t)
	p, err := b.newRiverPeer(ctx, psp, 1)
	if err != nil {
		t.Fatal(err)
	}
	in := p.instrument(pool, nil)
	err = in.w.warm(ctx, 1, 3)
	p.close()
	if err != nil {
		t.Fatal(err)
	}
	if n := p.completed.Load(); n != 3 {
		t.Errorf("%d jobs completed, want 3", n)
	}
	if err := checkPayments(fake, 3); err != nil {
		t.Error(err)
	}
	var orders int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+p.orders).Scan(&orders); err != nil || orders != 3 {
		t.Errorf("%d orders (%v), want 3", orders, err)
	}
}

// The River peer's c=1 latency is what orders arriving at random moments
// see, not the completer's period: back-to-back orders, each started
// right after the previous completion (itself right after a completer
// flush), all wait almost a whole period, and their latencies bunch at
// 250 ms (seen: p50 246.9 ms, p99 252.4 ms). Random arrivals spread
// over the period. Skipped without PAYONCE_TEST_DATABASE_URL.
func TestRiverLatencySpread(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, pool, _, psp := peerBench(t)
	p, err := b.newRiverPeer(ctx, psp, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	in := p.instrument(pool, nil)
	if err := in.w.warm(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	for in.w.result(1).Ops < 12 {
		if err := in.measure(ctx, 1, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	lat := slices.Clone(in.w.lat)
	slices.Sort(lat)
	// Uniform over 250 ms, 12 latencies fall within 100 ms of each other
	// with a probability below 1 in 1,000.
	if spread := lat[len(lat)-1] - lat[0]; spread < 100*time.Millisecond {
		t.Errorf("latencies %v span %v: bunched at the completer's period", lat, spread)
	}
}

// peerBench is what each peer's test starts from: a bench of its own run
// id on the test database (its schemas dropped at the end), and the fake
// Stripe with an adapter for it.
func peerBench(t *testing.T) (*bench, *pgxpool.Pool, *mocks.Stripe, *stripe.Provider) {
	t.Helper()
	pool := testkit.NewPool(t)
	b := &bench{pgURL: testkit.URL(t), admin: pool, run: strings.ToLower(rand.Text()[:8])}
	t.Cleanup(b.dropSchemas)
	fake, psp, err := newFake()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	return b, pool, fake, psp
}
