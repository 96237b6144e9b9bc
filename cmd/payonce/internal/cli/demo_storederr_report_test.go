package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The demo's stored 500s reach review well before their key window
// (--key-ttl 20s) passes, and the report says how long they took.
func TestDemoStoredErrors(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "demo", "--json", "--orders", "100", "--refunds", "10", "--key-ttl", "20s", "--seed", "1")
	checkDemo(t, r, 100, 10)
	var rep struct {
		Total struct {
			InReview int `json:"in_review"`
		} `json:"total"`
		Faults       map[string]int `json:"faults"`
		StoredErrors struct {
			Count      int     `json:"count"`
			P50Seconds float64 `json:"p50_seconds"`
			MaxSeconds float64 `json:"max_seconds"`
		} `json:"stored_errors"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), "%s", r)
	require.Positive(t, rep.Faults["stored_500"], "%s", r)
	se := rep.StoredErrors
	require.Positive(t, se.Count, "%s", r)
	require.LessOrEqual(t, se.Count, rep.Total.InReview)
	require.Positive(t, se.P50Seconds)
	require.LessOrEqual(t, se.P50Seconds, se.MaxSeconds)
	require.Less(t, se.MaxSeconds, 20.0, "a stored error must not wait for the key window: %s", r)
}
