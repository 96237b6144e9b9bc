package main

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce/internal/childproc"
	"github.com/payonce/payonce/ledger"
)

// feedPageLimit is the page a consumer reads: ledger.DefaultFeedLimit.
const feedPageLimit = ledger.DefaultFeedLimit

// feedResult is what a settlement-feed consumer read beside Charge at one
// concurrency level (--feed).
type feedResult struct {
	Clients     int     `json:"clients"`
	Entries     int64   `json:"entries"`
	Pages       int64   `json:"pages"`
	Seconds     float64 `json:"seconds"`
	PageP50MS   float64 `json:"page_p50_ms"`
	PGCPUPageUS float64 `json:"pg_cpu_per_page_us,omitempty"`
}

// feedConsumer reads a ledger's settlement feed as a service does, from
// the start, in pages of feedPageLimit, until stopped: each page with new
// entries makes them durable first (a small write and a WAL flush), which
// is what the feed's durability costs beside Charge.
type feedConsumer struct {
	pool    *pgxpool.Pool
	cpu     *backendCPU
	start   time.Time
	cancel  context.CancelFunc
	done    chan error
	entries atomic.Int64
	lat     []time.Duration // pages with entries; read once done
}

// startFeed opens a pool of one connection on the ledger of schema, as a
// separate consumer process would, and starts reading.
func (b *bench) startFeed(ctx context.Context, schema string, clients int) (*feedConsumer, error) {
	app := b.appName(fmt.Sprintf("feed-c%d", clients))
	pool, store, err := childproc.OpenLedger(ctx, b.pgURL, schema, func(cfg *pgxpool.Config) {
		cfg.MaxConns, cfg.MinConns = 1, 1
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &feedConsumer{pool: pool, cancel: cancel, done: make(chan error, 1), start: time.Now()}
	f.cpu = startBackendCPU(ctx, b.admin, app, 0)
	go func() {
		var cursor ledger.FeedCursor
		for ctx.Err() == nil {
			t := time.Now()
			page, err := store.Feed(ctx, ledger.FeedParams{After: cursor, Limit: feedPageLimit})
			if err != nil {
				if ctx.Err() == nil {
					f.done <- fmt.Errorf("feed consumer: %w", err)
					return
				}
				break
			}
			if len(page) == 0 {
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			f.lat = append(f.lat, time.Since(t))
			f.entries.Add(int64(len(page)))
			cursor = page[len(page)-1].Cursor
		}
		f.done <- nil
	}()
	return f, nil
}

// stop ends the consumer and returns what it read.
func (f *feedConsumer) stop(ctx context.Context, clients int) (feedResult, error) {
	wall := time.Since(f.start)
	f.cancel()
	err := <-f.done
	cpu, cpuOK := f.cpu.finish(ctx)
	f.pool.Close()
	slices.Sort(f.lat)
	r := feedResult{Clients: clients, Entries: f.entries.Load(), Pages: int64(len(f.lat)), Seconds: wall.Seconds(),
		PageP50MS: ms(percentile(f.lat, 50))}
	if cpuOK && r.Pages > 0 {
		r.PGCPUPageUS = float64(cpu.Microseconds()) / float64(r.Pages)
	}
	return r, err
}
