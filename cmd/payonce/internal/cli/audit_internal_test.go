package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// The table and the JSON of a report: one line per difference, an
// unattributed object named so, every class counted (0 included), the
// truncation said.
func TestPrintAudit(t *testing.T) {
	from := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	rep := payonce.AuditReport{Provider: "stripe", From: from, To: from.Add(24 * time.Hour),
		Directions: "provider → ledger: PaymentIntents", Objects: 7, Operations: 5, Unattributed: 1,
		Counts: map[ledger.FindingClass]int{ledger.FindingStatusDiffers: 2},
		Differences: []payonce.AuditDifference{
			{Class: ledger.FindingStatusDiffers, OperationID: "op-1", ProviderRef: "pi_1", Kind: payonce.KindCharge,
				LedgerStatus: ledger.StatusFailed, ProviderState: payonce.AuditSucceeded, Detail: "ledger failed,\nprovider succeeded"},
			{ProviderRef: "pi_x", Kind: payonce.KindCharge, ProviderState: payonce.AuditSucceeded, Detail: "no metadata"},
		},
		Truncated: true,
	}
	var out bytes.Buffer
	printAudit(&out, rep, false)
	text := out.String()
	require.Contains(t, text, "audit of stripe from 2026-12-03T00:00:00Z to 2026-12-04T00:00:00Z")
	require.Regexp(t, `status_differs\s+charge\s+op-1\s+pi_1\s+failed\s+succeeded\s+ledger failed, provider succeeded`, text)
	require.Regexp(t, `unattributed\s+charge\s+-\s+pi_x\s+-\s+succeeded\s+no metadata`, text)
	require.Contains(t, text, "only the first 2 differences are listed")
	require.Regexp(t, `status_differs\s+2\n`, text)
	require.Regexp(t, `missing_at_provider\s+0\n`, text)
	require.Regexp(t, `provider objects read\s+7\n`, text)
	require.Regexp(t, `ledger operations read\s+5\n`, text)
	require.Regexp(t, `unattributed objects\s+1\n`, text)
	require.Contains(t, text, "provider → ledger: PaymentIntents")
	require.Contains(t, text, "recorded as findings")

	out.Reset()
	printAudit(&out, rep, true)
	require.Contains(t, out.String(), "--dry-run: nothing recorded")

	raw, err := json.Marshal(auditToJSON(rep, true))
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(raw, &obj))
	require.Equal(t, "stripe", obj["provider"])
	require.Equal(t, "2026-12-03T00:00:00Z", obj["from"])
	require.Equal(t, true, obj["differs"])
	require.Equal(t, true, obj["dry_run"])
	require.Equal(t, true, obj["truncated"])
	require.EqualValues(t, 7, obj["objects"])
	require.EqualValues(t, 1, obj["unattributed"])
	counts := obj["counts"].(map[string]any)
	require.Len(t, counts, len(ledger.FindingClasses))
	require.EqualValues(t, 2, counts["status_differs"])
	require.EqualValues(t, 0, counts["duplicated"])
	diffs := obj["differences"].([]any)
	require.Len(t, diffs, 2)
	d0 := diffs[0].(map[string]any)
	require.Equal(t, map[string]any{"class": "status_differs", "operation_id": "op-1", "provider_ref": "pi_1", "kind": "charge",
		"ledger_status": "failed", "provider_state": "succeeded", "detail": "ledger failed,\nprovider succeeded"}, d0)
	require.Equal(t, "", diffs[1].(map[string]any)["class"])

	// Nothing differs: said, and no table.
	out.Reset()
	printAudit(&out, payonce.AuditReport{Provider: "stripe", From: from, To: from.Add(time.Hour), Objects: 3}, false)
	require.Contains(t, out.String(), "the ledger and the provider agree")
	require.NotContains(t, out.String(), "CLASS")
	raw, err = json.Marshal(auditToJSON(payonce.AuditReport{}, false))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"differences":[]`)
	require.Contains(t, string(raw), `"differs":false`)
}

func TestParseAuditTime(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-12-01T00:00:00Z":      time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		"2026-12-01T03:00:00+03:00": time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		"-24h":                      now.Add(-24 * time.Hour),
		"90m":                       now.Add(-90 * time.Minute),
		"-7d":                       now.Add(-7 * 24 * time.Hour),
	} {
		got, err := parseAuditTime("from", in, now)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%s: %s, want %s", in, got, want)
	}
	for _, bad := range []string{"", "yesterday", "2026-12-01", "--24h", "-1x"} {
		_, err := parseAuditTime("from", bad, now)
		require.Error(t, err, "%q", bad)
	}
}

// Open findings in both forms of "payonce stats": a section per provider
// and class, none when nothing is open; --json lists them (empty, not
// null).
func TestStatsFindings(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	st := ledger.Stats{Findings: []ledger.FindingCount{
		{Provider: "stripe", Class: ledger.FindingStatusDiffers, Open: 3},
		{Provider: "yookassa", Class: ledger.FindingUnknownToLedger, Open: 1},
	}}
	var out bytes.Buffer
	printStats(&out, st, now)
	require.Contains(t, out.String(), "open audit findings")
	require.Regexp(t, `stripe\s+status_differs\s+3\n`, out.String())
	require.Regexp(t, `yookassa\s+unknown_to_ledger\s+1\n`, out.String())

	raw, err := json.Marshal(statsToJSON("test", st, now))
	require.NoError(t, err)
	var obj struct {
		Findings []map[string]any `json:"findings"`
	}
	require.NoError(t, json.Unmarshal(raw, &obj))
	require.Equal(t, []map[string]any{
		{"provider": "stripe", "class": "status_differs", "open": float64(3)},
		{"provider": "yookassa", "class": "unknown_to_ledger", "open": float64(1)},
	}, obj.Findings)

	out.Reset()
	printStats(&out, ledger.Stats{}, now)
	require.NotContains(t, out.String(), "audit findings")
	raw, err = json.Marshal(statsToJSON("test", ledger.Stats{}, now))
	require.NoError(t, err)
	require.Contains(t, string(raw), `"findings":[]`)
}
