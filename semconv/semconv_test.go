package semconv_test

import (
	"strings"
	"testing"

	"github.com/payonce/payonce/semconv"
)

// Every metric name is payonce's, listed once, and the list is a copy.
func TestMetricNames(t *testing.T) {
	names := semconv.MetricNames()
	seen := map[string]bool{}
	for _, n := range names {
		if !strings.HasPrefix(n, "payonce.") {
			t.Errorf("metric %q lacks the payonce. prefix", n)
		}
		if seen[n] {
			t.Errorf("metric %q listed twice", n)
		}
		seen[n] = true
	}
	if len(names) != 16 {
		t.Errorf("%d metric names, want 16", len(names))
	}
	names[0] = "changed"
	if semconv.MetricNames()[0] != semconv.MetricCallDuration {
		t.Error("MetricNames hands out a shared slice")
	}
}
