package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/payonce/payonce/ledger"
)

// storedErrorTimes is how long the operations whose key held a stored error
// (a replayed 500: ledger.ReviewCodeStoredError) took to reach review,
// counted from their first attempt: minutes, where waiting for the key
// window would take the whole --key-ttl.
type storedErrorTimes struct {
	Count      int     `json:"count"`
	P50Seconds float64 `json:"p50_seconds"`
	MaxSeconds float64 `json:"max_seconds"`
}

// storedErrorStats reads the first attempt of every operation in review for
// a stored error among ops.
func storedErrorStats(ctx context.Context, store ledger.Store, ops []ledger.Operation) (storedErrorTimes, error) {
	var took []time.Duration
	for _, op := range ops {
		if op.Status != ledger.StatusManualReview || op.ReviewCode != ledger.ReviewCodeStoredError {
			continue
		}
		_, atts, err := store.Get(ctx, op.ID)
		if err != nil {
			return storedErrorTimes{}, fmt.Errorf("reading the attempts of %s: %w", op.ID, err)
		}
		if len(atts) == 0 || op.ReviewAt.IsZero() {
			continue
		}
		took = append(took, op.ReviewAt.Sub(atts[0].StartedAt))
	}
	return storedErrorTimesOf(took), nil
}

// storedErrorTimesOf summarises the durations: the median (the lower of the
// two middle ones) and the longest.
func storedErrorTimesOf(took []time.Duration) storedErrorTimes {
	if len(took) == 0 {
		return storedErrorTimes{}
	}
	slices.Sort(took)
	return storedErrorTimes{Count: len(took), P50Seconds: took[(len(took)-1)/2].Seconds(), MaxSeconds: took[len(took)-1].Seconds()}
}

// print writes the report's line, when there is anything to say.
func (s storedErrorTimes) print(w io.Writer) {
	if s.Count == 0 {
		return
	}
	sec := func(f float64) string {
		return (time.Duration(f * float64(time.Second))).Round(time.Millisecond).String()
	}
	fmt.Fprintf(w, "stored errors: %d reached review in p50 %s / max %s (from the first attempt)\n", s.Count, sec(s.P50Seconds), sec(s.MaxSeconds))
}
