package adyen_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
)

// streamReport writes a Settlement details report of n payment rows (a
// settlement and, every tenth, a refund) through a pipe, generated as it
// is read: the reader never has the whole file.
func streamReport(t testing.TB, n int) io.Reader { return streamReportFor(t, n, merchant) }

// streamReportFor is streamReport for the merchant account account.
func streamReportFor(t testing.TB, n int, account string) io.Reader {
	pr, pw := io.Pipe()
	header := reportHeader(t)
	go func() {
		w := bufio.NewWriter(pw)
		fmt.Fprintln(w, header)
		for i := range n {
			psp := fmt.Sprintf("88%014d", i)
			ref := fmt.Sprintf("0b9e4a52-1c7f-5d3e-9a1b-%012d", i)
			created := fmt.Sprintf("2026-03-%02d %02d:%02d:%02d", 1+i/86400%28, i/3600%24, i/60%60, i%60)
			if i%10 == 9 {
				fmt.Fprintln(w, reportLine(account, psp, ref, created, "Refunded", "89"+psp[2:], "EUR", "5.00", "", ref))
				continue
			}
			fmt.Fprintln(w, reportLine(account, psp, ref, created, "Settled", "87"+psp[2:], "EUR", "", "19.99", ""))
		}
		pw.CloseWithError(w.Flush())
	}()
	return pr
}

// readReportPeak reads a report of rows payment rows and returns the heap
// before, its peak (HeapAlloc sampled every 10,000 rows, after a GC
// before) and the bytes allocated in all.
func readReportPeak(t testing.TB, rows int) (base, peak, allocated uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak, allocated = ms.HeapAlloc, ms.HeapAlloc, ms.TotalAlloc
	n := 0
	err := provider(t).ListObjects(context.Background(), nil, payonce.AuditQuery{From: allTime.From, To: allTime.To, Report: streamReport(t, rows)},
		func(payonce.AuditObject) error {
			if n++; n%10_000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, rows, n)
	return base, peak, ms.TotalAlloc - allocated
}

// TestAuditReportBoundedHeap: the reader holds one row at a time: a report
// of 200,000 rows is read with a heap that does not grow with it. The
// heap's figure for 1,000,000 rows is BenchmarkAuditReportMillionRows'.
func TestAuditReportBoundedHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 200,000-row report")
	}
	base, peak, all := readReportPeak(t, 200_000)
	t.Logf("200,000 rows: heap before %.1f MiB, peak %.1f MiB, allocated in all %.0f MiB", mib(base), mib(peak), mib(all))
	// 16 MiB is several times what one row and the reader's buffers hold,
	// and far below the 200,000 rows' own size (allocated in all).
	require.Less(t, peak-min(peak, base), uint64(16<<20), "the heap grows with the report")
}

// BenchmarkAuditReportMillionRows reads a 1,000,000-row report and reports
// the peak heap (peak-MiB) and the rows read per second.
func BenchmarkAuditReportMillionRows(b *testing.B) {
	const rows = 1_000_000
	for b.Loop() {
		_, peak, _ := readReportPeak(b, rows)
		b.ReportMetric(mib(peak), "peak-MiB")
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
