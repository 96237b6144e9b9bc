package main

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A workload is one kind of operation (a Charge, a raw POST, a commit)
// measured as latency per operation and operations per second.

// opFunc runs operation number i (unique within its workload) and returns
// its latency: the time of what is measured, which may leave out work done
// beforehand (e.g. deriving the key a raw integration would bring).
type opFunc func(ctx context.Context, i int) (time.Duration, error)

// workload accumulates measurements of one opFunc over one or more
// measured periods.
type workload struct {
	name string
	op   opFunc
	seq  atomic.Int64 // operations started, warm-up included

	lat  []time.Duration
	wall time.Duration
	cpu  cpuAcc
}

func newWorkload(name string, op opFunc) *workload { return &workload{name: name, op: op} }

// started is the number of operations started so far, warm-up included:
// each one that succeeded created one payment at the fake.
func (w *workload) started() int { return int(w.seq.Load()) }

// warm runs n operations on c workers without recording them.
func (w *workload) warm(ctx context.Context, c, n int) error {
	target := w.seq.Load() + int64(n)
	_, err := w.drive(ctx, c, func() bool { return w.seq.Load() < target })
	return err
}

// measure runs the operation on c workers for d and records it.
func (w *workload) measure(ctx context.Context, c int, d time.Duration) error {
	start := markCPU()
	deadline := start.wall.Add(d)
	lat, err := w.drive(ctx, c, func() bool { return time.Now().Before(deadline) })
	end := markCPU()
	if err != nil {
		return err
	}
	w.lat = append(w.lat, lat...)
	w.wall += end.wall.Sub(start.wall)
	w.cpu.add(start, end)
	return nil
}

// drive runs operations on c workers while more() holds and returns their
// latencies. The first error stops every worker.
func (w *workload) drive(ctx context.Context, c int, more func() bool) ([]time.Duration, error) {
	var (
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
		failed   atomic.Bool
		wg       sync.WaitGroup
	)
	// Labelled for --cpuprofile (go tool pprof -tagfocus workload=...).
	lctx := pprof.WithLabels(ctx, pprof.Labels("workload", w.name, "clients", strconv.Itoa(c)))
	for range c {
		wg.Go(func() {
			pprof.SetGoroutineLabels(lctx)
			var mine []time.Duration
			for !failed.Load() && ctx.Err() == nil && more() {
				i := int(w.seq.Add(1) - 1)
				d, err := w.op(lctx, i)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: operation %d: %w", w.name, i, err)
					}
					mu.Unlock()
					failed.Store(true)
					break
				}
				mine = append(mine, d)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return all, firstErr
}

// result summarizes what was measured.
func (w *workload) result(clients int) loadResult {
	lat := slices.Clone(w.lat)
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	r := loadResult{Name: w.name, Clients: clients, Ops: len(lat), Seconds: w.wall.Seconds(), CPU: w.cpu.use()}
	if w.wall > 0 {
		r.OpsPerSec = float64(len(lat)) / w.wall.Seconds()
	}
	if len(lat) > 0 {
		r.MeanMS = ms(sum / time.Duration(len(lat)))
		r.P50MS = ms(percentile(lat, 50))
		r.P99MS = ms(percentile(lat, 99))
	}
	return r
}

// interleave measures every workload at concurrency 1 for d each, in turns
// of slice: a change in the machine's background load then touches all of
// them alike, which matters when their latencies are subtracted.
func interleave(ctx context.Context, ws []measurer, d, slice time.Duration) error {
	for done := time.Duration(0); done < d; done += slice {
		step := min(slice, d-done)
		for _, w := range ws {
			if err := w.measure(ctx, 1, step); err != nil {
				return err
			}
		}
	}
	return nil
}

// measurer is a workload, bare or instrumented.
type measurer interface {
	measure(ctx context.Context, c int, d time.Duration) error
}

// loadResult is one workload's figures.
type loadResult struct {
	Name      string  `json:"name"`
	Clients   int     `json:"clients"`
	Ops       int     `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MeanMS    float64 `json:"mean_ms"`
	P50MS     float64 `json:"p50_ms"`
	P99MS     float64 `json:"p99_ms"`
	CPU       cpuUse  `json:"cpu"`
	// Ledger figures of a Charge workload: mean time in Store.Begin and
	// Store.Finish per operation, and PostgreSQL round trips per operation.
	BeginMeanMS     float64 `json:"begin_mean_ms,omitempty"`
	FinishMeanMS    float64 `json:"finish_mean_ms,omitempty"`
	RoundTripsPerOp float64 `json:"round_trips_per_op,omitempty"`
	// CPU time per operation of the PostgreSQL backends serving the
	// workload, and of this process (client, drivers and the in-process
	// fake), in µs.
	PGCPUPerOpUS   float64 `json:"pg_cpu_per_op_us,omitempty"`
	SelfCPUPerOpUS float64 `json:"self_cpu_per_op_us,omitempty"`
	// WAL bytes per operation written into the workload's own schema over
	// the measured periods (walCounter; the whole server's WAL, other
	// writers included, where pg_walinspect is missing).
	WALBytesPerOp float64 `json:"wal_bytes_per_op,omitempty"`
	// Inserted is, for the River peer at c > 1, the jobs inserted within
	// the measured period (Ops counts those completed within it).
	Inserted int `json:"inserted,omitempty"`
}

// percentile returns the p-th percentile (nearest rank) of sorted values.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*p + 99) / 100 // ceil(n·p/100)
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cpuAcc sums CPU use over several measured periods.
type cpuAcc struct {
	busy, all  uint64
	self, wall time.Duration
}

func (a *cpuAcc) add(start, end cpuMark) {
	a.busy += end.busy - start.busy
	a.all += end.all - start.all
	a.self += end.self - start.self
	a.wall += end.wall.Sub(start.wall)
}

func (a cpuAcc) use() cpuUse {
	var u cpuUse
	if a.all > 0 {
		u.MachineBusy = float64(a.busy) / float64(a.all)
	}
	if a.wall > 0 {
		u.SelfCores = float64(a.self) / float64(a.wall)
	}
	return u
}
