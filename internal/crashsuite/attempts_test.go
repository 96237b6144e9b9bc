package crashsuite

import (
	"strings"
	"testing"
	"time"

	"github.com/payonce/payonce/ledger"
)

// The summary line reports the most attempts one operation made, which
// operation, the bound, and how many operations needed how many attempts.
func TestSummaryAttemptsPerOperation(t *testing.T) {
	var s summary
	for _, op := range []ledger.Operation{
		{ID: "op-b", Kind: "charge", References: []string{"order-2"}, Attempts: 1},
		{ID: "op-a", Kind: "charge", References: []string{"order-1"}, Attempts: 1},
		{ID: "op-c", Kind: "refund", References: []string{"order-1", "1"}, Attempts: 2},
		{ID: "op-d", Kind: "charge", References: []string{"order-3"}, Attempts: 4},
		{ID: "op-f", Kind: "refund", References: []string{"order-9", "1"}, Attempts: 33},
		{ID: "op-e", Kind: "refund", References: []string{"order-8", "1"}, Attempts: 33},
		{ID: "op-g", Kind: "charge", References: []string{"order-4"}, Attempts: 6},
		{ID: "op-h", Kind: "charge", References: []string{"order-5"}},
	} {
		s.addAttempts(op)
	}
	if s.maxAttempts != 33 || s.maxAttemptsOp != "refund order-8/1 op-e" {
		t.Fatalf("max %d by %q, want 33 by the lower of the two (refund order-8/1 op-e)", s.maxAttempts, s.maxAttemptsOp)
	}
	line := s.line("unit", 1, suiteStats{}, time.Second)
	for _, want := range []string{
		"max_attempts=33 (refund order-8/1 op-e; bound 12)",
		"attempts_per_op{0=1 1=2 2=1 3-5=1 6+=3}",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("summary line lacks %q:\n%s", want, line)
		}
	}
	for n, want := range map[int]string{0: "0", 1: "1", 2: "2", 3: "3-5", 5: "3-5", 6: "6+", 100: "6+"} {
		if got := attemptBucket(n); got != want {
			t.Errorf("attemptBucket(%d) = %q, want %q", n, got, want)
		}
	}
}
