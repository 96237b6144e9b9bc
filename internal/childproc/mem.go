package childproc

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// What a process measures of itself, so that a child reports its own
// memory figures (the reconciler alone, without the parent's fake).

// HeapPeaks keeps the highest heap figures sampled.
type HeapPeaks struct {
	mu                   sync.Mutex
	inuse, alloc, livest uint64
}

// Run samples every period (20 ms when period <= 0) until the returned
// stop is called; stop samples once more.
func (m *HeapPeaks) Run(period time.Duration) (stop func()) {
	if period <= 0 {
		period = 20 * time.Millisecond
	}
	m.Sample()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				m.Sample()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		m.Sample()
	}
}

// Sample reads runtime.MemStats and keeps the highest HeapInuse and
// HeapAlloc.
func (m *HeapPeaks) Sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inuse = max(m.inuse, ms.HeapInuse)
	m.alloc = max(m.alloc, ms.HeapAlloc)
}

// Live forces a collection and keeps the heap that survived it.
func (m *HeapPeaks) Live() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.livest = max(m.livest, ms.HeapAlloc)
}

// Peaks returns the highest HeapInuse, HeapAlloc and live heap (after a
// forced collection, see Live) sampled.
func (m *HeapPeaks) Peaks() (inuse, alloc, live uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inuse, m.alloc, m.livest
}

// VmHWMKiB reads this process's peak resident set size in KiB from
// /proc/self/status; 0 where there is no such file.
func VmHWMKiB() int64 { return procStatusKiB("VmHWM:") }

// VmRSSKiB reads this process's resident set size in KiB; 0 where there is
// no /proc/self/status.
func VmRSSKiB() int64 { return procStatusKiB("VmRSS:") }

func procStatusKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// ResetPeakRSS resets this process's VmHWM to its current RSS (Linux; a
// no-op elsewhere).
func ResetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }
