package payonce_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// What the safety costs: BenchmarkCharge runs payonce.Client.Charge (journal
// in the ledger, send, record the outcome) and BenchmarkRawPOST sends the
// same form-encoded PaymentIntent request with plain net/http, both against
// the zero-latency fake Stripe without faults. Each operation uses a new
// order id. Besides ns/op, B/op and allocs/op, each case reports ops/s and
// the p50 and p99 latency of one operation in µs.
//
// allocs/op and B/op count every allocation of the process: the in-process
// fake Stripe's (identical in both benchmarks), the ledger driver's and, for
// SQLite, the pure-Go database engine's. The fake keeps every object for its
// truth report, so keep -benchtime modest (e.g. -benchtime 2000x).
//
//	PAYONCE_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	  go test -run '^$' -bench 'Charge|RawPOST' -benchtime 2000x -count 3 .

// benchConcurrency are the numbers of concurrent callers measured.
var benchConcurrency = []int{1, 32}

// benchTransport is the transport of both benchmarks: the pooled transport
// the Client uses when Config.HTTPClient is nil (go-cleanhttp), keep-alives
// on, with room for one idle connection per concurrent caller. The stock
// MaxIdleConnsPerHost is GOMAXPROCS+1; with 32 callers on a small machine
// most connections would be closed after one request, and the raw POST
// would measure TCP set-up more than the request.
func benchTransport() *http.Transport {
	tr := cleanhttp.DefaultPooledTransport()
	tr.MaxIdleConnsPerHost = 64
	return tr
}

// benchSetup is setup for benchmarks (setup takes a *testing.T): a fake
// Stripe on the real clock, the Stripe adapter, a fresh ledger and a client
// on a pooled keep-alive transport. Everything is closed when b's current
// run ends.
func benchSetup(b *testing.B, o setupOpts) *bundle {
	b.Helper()
	// The store first: a PostgreSQL run skips before anything is started.
	store := newStore(b, o.postgres)
	fake := mocks.NewStripe(o.fake)
	b.Cleanup(fake.Close)
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL()})
	require.NoError(b, err)
	cfg := payonce.Config{Provider: psp, Store: store}
	if o.config != nil {
		o.config(&cfg)
	}
	client, err := payonce.New(cfg)
	require.NoError(b, err)
	return &bundle{fake: fake, store: store, psp: psp, client: client, ctx: b.Context()}
}

// pooledHTTP makes the client send through a pooled keep-alive transport.
func pooledHTTP(cfg *payonce.Config) {
	cfg.HTTPClient = &http.Client{Transport: benchTransport()}
}

func BenchmarkCharge(b *testing.B) {
	for _, store := range []string{"sqlite", "postgres"} {
		b.Run("store="+store, func(b *testing.B) {
			for _, c := range benchConcurrency {
				b.Run("c="+strconv.Itoa(c), func(b *testing.B) {
					benchCharge(b, store == "postgres", c)
				})
			}
		})
	}
}

func benchCharge(b *testing.B, postgres bool, c int) {
	env := benchSetup(b, setupOpts{postgres: postgres, config: pooledHTTP})
	orders := benchIDs("order", b.N)
	op := func(order string) error {
		res, err := env.client.Charge(env.ctx, charge(order, 1999))
		if err != nil {
			return err
		}
		if res.Status != payonce.ResultSucceeded || res.Attempts != 1 {
			return fmt.Errorf("charge %s: status %s after %d attempts", order, res.Status, res.Attempts)
		}
		return nil
	}
	warm := benchIDs("warm", 2*c)
	runConcurrent(b, c, len(warm), func(i int) error { return op(warm[i]) })

	measure(b, c, func(i int) error { return op(orders[i]) })
	checkOnePaymentEach(b, env.fake, len(warm)+b.N)
}

func BenchmarkRawPOST(b *testing.B) {
	for _, c := range benchConcurrency {
		b.Run("c="+strconv.Itoa(c), func(b *testing.B) {
			benchRawPOST(b, c)
		})
	}
}

// benchRawPOST sends what Charge sends for one attempt, without the ledger
// and without payonce's HTTP stack (retries, breaker): the adapter builds the
// request (the same body and headers, Idempotency-Key included) and a plain
// http.Client on the same transport settings sends it. Reading the answer
// and decoding the PaymentIntent's id and status is what any integration
// does too.
func benchRawPOST(b *testing.B, c int) {
	fake := mocks.NewStripe(mocks.StripeOptions{})
	b.Cleanup(fake.Close)
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL()})
	require.NoError(b, err)
	hc := &http.Client{Transport: benchTransport()}
	ctx := b.Context()

	// The keys Charge would use for these orders, computed outside the
	// timer: a raw integration brings its own.
	keysFor := func(orders []string) []string {
		keys := make([]string, len(orders))
		for i, o := range orders {
			id, err := payonce.Identity{Provider: psp.Name(), Kind: payonce.KindCharge, References: []string{o}}.OperationID()
			require.NoError(b, err)
			keys[i] = id
		}
		return keys
	}
	orders := benchIDs("order", b.N)
	keys := keysFor(orders)
	op := func(order, key string) error {
		p := charge(order, 1999)
		req, err := psp.NewRequest(ctx, payonce.SendRequest{OperationID: key, Key: key, Request: payonce.Request{
			Kind: payonce.KindCharge, Amount: p.Amount, Currency: p.Currency, References: []string{order},
			PaymentMethod: p.PaymentMethod,
		}})
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, payonce.MaxBodyBytes+1))
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		var pi struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(body, &pi); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || pi.Status != "succeeded" || pi.ID == "" {
			return fmt.Errorf("POST %s: HTTP %d, status %q", order, resp.StatusCode, pi.Status)
		}
		return nil
	}
	warm := benchIDs("warm", 2*c)
	warmKeys := keysFor(warm)
	runConcurrent(b, c, len(warm), func(i int) error { return op(warm[i], warmKeys[i]) })

	measure(b, c, func(i int) error { return op(orders[i], keys[i]) })
	checkOnePaymentEach(b, fake, len(warm)+b.N)
}

// benchIDs returns n ids new to any ledger: a random prefix keeps runs apart.
func benchIDs(kind string, n int) []string {
	prefix := kind + "-" + rand.Text()[:10] + "-"
	ids := make([]string, n)
	for i := range ids {
		ids[i] = prefix + strconv.Itoa(i)
	}
	return ids
}

// measure times b.N operations run by c workers and reports ops/s and the
// p50 and p99 latency of one operation. The timer covers the operations
// only: setup, warm-up and checks happen outside it.
func measure(b *testing.B, c int, op func(i int) error) {
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	lat := runConcurrent(b, c, b.N, op)
	elapsed := time.Since(start)
	b.StopTimer()

	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(percentile(lat, 50).Seconds()*1e6, "p50-µs")
	b.ReportMetric(percentile(lat, 99).Seconds()*1e6, "p99-µs")
}

// runConcurrent runs op(0) ... op(n-1) on c workers, each taking the next
// index until none is left, and returns every operation's latency. The
// first error stops the workers and fails tb.
func runConcurrent(tb testing.TB, c, n int, op func(i int) error) []time.Duration {
	lat := make([]time.Duration, n)
	var (
		next   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
	)
	for range min(c, n) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := time.Now()
				err := op(i)
				lat[i] = time.Since(t)
				if err != nil {
					if failed.CompareAndSwap(false, true) {
						tb.Errorf("operation %d: %v", i, err)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		tb.FailNow()
	}
	return lat
}

// percentile returns the p-th percentile (nearest rank) of sorted values.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*p + 99) / 100 // ceil(n·p/100)
	return sorted[max(rank, 1)-1]
}

// checkOnePaymentEach verifies, outside the timer, that the fake created
// exactly want payments, one per operation id.
func checkOnePaymentEach(b *testing.B, fake *mocks.Stripe, want int) {
	b.Helper()
	truth := fake.Truth()
	byOp := truth.ChargesBy(stripe.MetaOperation)
	require.Len(b, truth.Payments, want, "payments created")
	require.Len(b, byOp, want, "operations charged")
	for id, n := range byOp {
		require.Equal(b, 1, n, "charges of operation %s", id)
	}
}
