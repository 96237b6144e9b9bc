package ledgerpg_test

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helpers of the measuring tests and benchmarks of this package
// (BenchmarkChargeCost, TestOneTableProto).

// envInt is the integer in the environment variable name, or def when it
// is unset.
func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(tb, err, name)
	return n
}

// quantile is the q-quantile of xs, interpolated linearly.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (s[i+1]-s[i])*(pos-float64(i))
}

// schedNS is the CPU time process pid has run, in nanoseconds (the first
// field of /proc/PID/schedstat).
func schedNS(tb testing.TB, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		tb.Skipf("cannot read the backend's CPU time (server on another host?): %v", err)
	}
	f := strings.Fields(string(raw))
	ns, err := strconv.ParseInt(f[0], 10, 64)
	require.NoError(tb, err)
	return ns
}
