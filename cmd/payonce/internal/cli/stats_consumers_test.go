package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// The feed consumers of Stats in both forms of "payonce stats": a consumer
// behind by 90s and one caught up; none prints no section, and --json has
// an empty list.
func TestStatsConsumers(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	st := ledger.Stats{Consumers: []ledger.ConsumerLag{
		{Name: "orders", Cursor: "0.7", CursorAt: now.Add(-2 * time.Minute), UpdatedAt: now.Add(-time.Minute), Behind: now.Add(-90 * time.Second)},
		{Name: "refunds", Cursor: "", UpdatedAt: now.Add(-time.Hour)},
	}}
	var out bytes.Buffer
	printStats(&out, st, now)
	text := out.String()
	require.Contains(t, text, "feed consumers")
	require.Regexp(t, `orders\s+1m30s\s+2026-12-04T11:58:00Z\s+2026-12-04T11:59:00Z\s+0\.7`, text)
	require.Regexp(t, `refunds\s+caught up\s+-\s+2026-12-04T11:00:00Z\s+-`, text)

	raw, err := json.Marshal(statsToJSON("test", st, now))
	require.NoError(t, err)
	var obj struct {
		Consumers []map[string]any `json:"consumers"`
	}
	require.NoError(t, json.Unmarshal(raw, &obj))
	require.Len(t, obj.Consumers, 2)
	require.Equal(t, "orders", obj.Consumers[0]["name"])
	require.EqualValues(t, 90, obj.Consumers[0]["lag_seconds"])
	require.Equal(t, "2026-12-04T11:58:30Z", obj.Consumers[0]["behind"])
	require.Equal(t, "2026-12-04T11:58:00Z", obj.Consumers[0]["cursor_at"])
	require.Nil(t, obj.Consumers[1]["behind"], "caught up: null")
	require.Nil(t, obj.Consumers[1]["cursor_at"], "nothing applied yet: null")
	require.EqualValues(t, 0, obj.Consumers[1]["lag_seconds"])

	out.Reset()
	printStats(&out, ledger.Stats{}, now)
	require.NotContains(t, out.String(), "feed consumers")
	raw, err = json.Marshal(statsToJSON("test", ledger.Stats{}, now))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"consumers":[]`)
}
