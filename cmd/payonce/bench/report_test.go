package main

import (
	"bytes"
	"strings"
	"testing"
)

// The issue's c=32 figures: pgbench 49 + 8 µs per commit, raw POST 93 µs,
// Charge 334 + 306 µs.
func floorReport() *report {
	return &report{
		Ceiling: []pgbenchResult{
			{Clients: 1, TPS: 3000, PGCPUPerTxUS: 120, ClientCPUPerTxUS: 30},
			{Clients: 8, TPS: 15000, PGCPUPerTxUS: 50, ClientCPUPerTxUS: 9},
			{Clients: 32, TPS: 20000, PGCPUPerTxUS: 49, ClientCPUPerTxUS: 8},
		},
		Raw: loadResult{Name: "raw POST", Clients: 1, Ops: 100, SelfCPUPerOpUS: 160},
		RawAt: []loadResult{
			{Name: "raw POST", Clients: 8, Ops: 100, SelfCPUPerOpUS: 95},
			{Name: "raw POST", Clients: 32, Ops: 100, SelfCPUPerOpUS: 93},
		},
		Charge: []loadResult{
			{Clients: 1, Ops: 100, PGCPUPerOpUS: 470, SelfCPUPerOpUS: 700},
			{Clients: 8, Ops: 100, PGCPUPerOpUS: 120, SelfCPUPerOpUS: 150},
			{Clients: 32, Ops: 100, PGCPUPerOpUS: 334, SelfCPUPerOpUS: 306},
		},
	}
}

func rowNamed(t *testing.T, r *report, prefix string) row {
	t.Helper()
	for _, x := range r.Rows {
		if strings.HasPrefix(x.Metric, prefix) {
			return x
		}
	}
	t.Fatalf("no row %q in %v", prefix, r.Rows)
	return row{}
}

func TestReportFloor(t *testing.T) {
	r := floorReport()
	r.build()

	f := rowNamed(t, r, "CPU floor c=32")
	if want := "2 × (49 + 8 µs) + 93 µs = 207 µs (PostgreSQL 98 µs + client 109 µs)"; f.Value != want {
		t.Errorf("floor c=32 = %q, want %q", f.Value, want)
	}
	ch := rowNamed(t, r, "Charge CPU per op c=32")
	if want := "334 + 306 µs = 640 µs = 3.1 × floor"; ch.Value != want {
		t.Errorf("Charge CPU c=32 = %q, want %q", ch.Value, want)
	}
	if ch.Goal != "≤ 1.5 × floor (310 µs)" || ch.Met != "no" {
		t.Errorf("Charge CPU c=32 goal %q met %q, want ≤ 1.5 × floor (310 µs), no", ch.Goal, ch.Met)
	}
	// c=8: 2 × (50 + 9) + 95 = 213 µs; 270 µs = 1.27 × floor.
	if ch := rowNamed(t, r, "Charge CPU per op c=8"); ch.Met != "yes" || !strings.HasSuffix(ch.Value, "= 1.3 × floor") {
		t.Errorf("Charge CPU c=8 = %q met %q, want 1.3 × floor, yes", ch.Value, ch.Met)
	}
	// c=1 is shown without a goal.
	if ch := rowNamed(t, r, "Charge CPU per op c=1"); ch.Met != "" || ch.Goal != "—" {
		t.Errorf("Charge CPU c=1 goal %q met %q, want none", ch.Goal, ch.Met)
	}
	if len(r.Floor) != 3 || r.Floor[2].FloorUS != 207 || r.Floor[2].Ratio < 3.09 || r.Floor[2].Ratio > 3.1 {
		t.Errorf("Floor = %+v", r.Floor)
	}
	// The raw POST of each level is in its CPU row.
	if v := rowNamed(t, r, "CPU per op c=32").Value; !strings.Contains(v, "raw POST 0 + 93 µs") {
		t.Errorf("CPU per op c=32 = %q, want the raw POST's 93 µs", v)
	}

	var out bytes.Buffer
	r.print(&out)
	if !strings.Contains(out.String(), "| Charge CPU per op c=32: PostgreSQL + client") {
		t.Errorf("the table has no Charge CPU row:\n%s", out.String())
	}
}

func TestReportFloorMissing(t *testing.T) {
	r := floorReport()
	r.RawAt = nil                 // no raw POST at 8 and 32
	r.Ceiling[0].PGCPUPerTxUS = 0 // backends' CPU not readable at 1
	r.build()
	if len(r.Floor) != 0 {
		t.Errorf("Floor = %+v, want none", r.Floor)
	}
	for _, x := range r.Rows {
		if strings.HasPrefix(x.Metric, "CPU floor") || strings.HasPrefix(x.Metric, "Charge CPU per op") {
			t.Errorf("row %q without its figures", x.Metric)
		}
	}
}

// The goals of the latency, round-trip and drain rows: p50 added latency
// within 1.5 commits (p99 shown without a goal), two round trips per Charge,
// and a drain at 0.8 × Charge's throughput at 32 callers or more.
func TestReportIssueGoals(t *testing.T) {
	r := floorReport()
	r.Raw.P50MS, r.Raw.P99MS = 0.10, 0.30
	r.Commit = loadResult{P50MS: 0.20, P99MS: 0.40}
	r.Charge[0].P50MS, r.Charge[0].P99MS, r.Charge[0].RoundTripsPerOp = 0.35, 1.0, 2
	r.Charge[2].OpsPerSec = 2000
	r.Drain = []drainResult{
		{Backlog: 20000, Reconcilers: 1, OpsPerSec: 1700},
		{Backlog: 20000, Reconcilers: 4, OpsPerSec: 1500},
	}
	r.build()

	// 0.25 ms added over a 0.20 ms commit: 1.25 commits, within 1.5.
	if x := rowNamed(t, r, "added by Charge on PostgreSQL, p50"); x.Met != "yes" || x.Goal != "≤ 1.5 × commit (0.300 ms)" {
		t.Errorf("p50 row = %+v, want goal ≤ 1.5 × commit (0.300 ms), met", x)
	}
	if x := rowNamed(t, r, "added by Charge on PostgreSQL, p99"); x.Met != "" || x.Goal != "—" {
		t.Errorf("p99 row = %+v, want no goal", x)
	}
	if x := rowNamed(t, r, "PostgreSQL round trips per Charge"); x.Met != "yes" || x.Goal != "= 2" {
		t.Errorf("round trips row = %+v, want = 2, met", x)
	}
	r.Charge[0].RoundTripsPerOp = 3
	r.Rows = nil
	r.build()
	if x := rowNamed(t, r, "PostgreSQL round trips per Charge"); x.Met != "no" {
		t.Errorf("3 round trips met the goal: %+v", x)
	}
	// 1,700 / 2,000 = 0.85 (met); 1,500 / 2,000 = 0.75 (not met).
	if x := rowNamed(t, r, "drain 20,000 pending, 1 reconciler"); x.Met != "yes" || !strings.Contains(x.Value, "= 0.85 × Charge c=32") ||
		x.Goal != "≥ 0.8 × Charge c=32 (1,600 ops/s)" {
		t.Errorf("drain 1 row = %+v", x)
	}
	if x := rowNamed(t, r, "drain 20,000 pending, 4 reconcilers"); x.Met != "no" {
		t.Errorf("drain 4 row = %+v, want not met", x)
	}
}
