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
	if ch.Goal != "≤ 2.0 × floor (414 µs)" || ch.Met != "no" {
		t.Errorf("Charge CPU c=32 goal %q met %q, want ≤ 2.0 × floor (414 µs), no", ch.Goal, ch.Met)
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
// within 2.5 commits (p99 shown without a goal), two round trips per Charge,
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

	// 0.25 ms added over a 0.20 ms commit: 1.25 commits, within 2.5.
	if x := rowNamed(t, r, "added by Charge on PostgreSQL, p50"); x.Met != "yes" || x.Goal != "≤ 2.5 × commit (0.500 ms)" {
		t.Errorf("p50 row = %+v, want goal ≤ 2.5 × commit (0.500 ms), met", x)
	}
	// 0.55 ms added: 2.75 commits, over 2.5.
	r.Charge[0].P50MS = 0.65
	r.Rows = nil
	r.build()
	if x := rowNamed(t, r, "added by Charge on PostgreSQL, p50"); x.Met != "no" || x.Value != "0.550 ms = 2.8 commits" {
		t.Errorf("p50 row = %+v, want 0.550 ms = 2.8 commits, not met", x)
	}
	r.Charge[0].P50MS = 0.35
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

// Charge's CPU per op over each peer's, held to 0.8 (River) and 1.3 (the
// journal) at 32 callers and shown without a goal at other levels; the
// peers' rows, their latency at c=1 and the WAL per op of every workload.
func TestReportPeers(t *testing.T) {
	r := floorReport() // Charge c=32: 334 + 306 = 640 µs; c=8: 270 µs
	r.Raw.P50MS = 0.10
	r.Commit = loadResult{P50MS: 0.20, WALBytesPerOp: 230}
	r.Ceiling[2].WALBytesPerTx = 238
	r.Charge[2].WALBytesPerOp = 2960
	r.Journal = []loadResult{
		{Name: "journal", Clients: 1, Ops: 50, OpsPerSec: 900, P50MS: 0.60, P99MS: 2, PGCPUPerOpUS: 200, SelfCPUPerOpUS: 300, RoundTripsPerOp: 2},
		{Name: "journal", Clients: 8, Ops: 100, OpsPerSec: 2000, PGCPUPerOpUS: 150, SelfCPUPerOpUS: 150, RoundTripsPerOp: 2},
		{Name: "journal", Clients: 32, Ops: 100, OpsPerSec: 2500, PGCPUPerOpUS: 250, SelfCPUPerOpUS: 250, RoundTripsPerOp: 2, WALBytesPerOp: 1800},
	}
	r.River = []loadResult{
		{Name: "River", Clients: 1, Ops: 20, OpsPerSec: 4.4, P50MS: 230, P99MS: 300, PGCPUPerOpUS: 3000, SelfCPUPerOpUS: 3000, RoundTripsPerOp: 8},
		{Name: "River", Clients: 32, Ops: 1600, Inserted: 1620, OpsPerSec: 320, PGCPUPerOpUS: 500, SelfCPUPerOpUS: 300, RoundTripsPerOp: 4.5, WALBytesPerOp: 2900},
	}
	r.build()

	// 640 / 800 = 0.80: met (≤ 0.8). 640 / 500 = 1.28: met (≤ 1.3).
	if x := rowNamed(t, r, "Charge CPU per op c=32 ÷ River's CPU per job"); x.Met != "yes" || x.Value != "640 µs ÷ 800 µs = 0.80" || x.Goal != "≤ 0.8 (640 µs)" {
		t.Errorf("River ratio row = %+v", x)
	}
	if x := rowNamed(t, r, "Charge CPU per op c=32 ÷ the journal's CPU per op"); x.Met != "yes" || x.Value != "640 µs ÷ 500 µs = 1.28" || x.Goal != "≤ 1.3 (650 µs)" {
		t.Errorf("journal ratio row = %+v", x)
	}
	// c=8: 270 / 300 = 0.90, no goal; no River at 8, so no River row.
	if x := rowNamed(t, r, "Charge CPU per op c=8 ÷ the journal's"); x.Met != "" || x.Value != "270 µs ÷ 300 µs = 0.90" {
		t.Errorf("journal ratio c=8 row = %+v, want 0.90 without a goal", x)
	}
	for _, x := range r.Rows {
		if strings.HasPrefix(x.Metric, "Charge CPU per op c=8 ÷ River") || strings.HasPrefix(x.Metric, "River peer c=8") {
			t.Errorf("row %q without River at 8 callers", x.Metric)
		}
	}
	// A higher Charge CPU misses both goals.
	r.Charge[2].PGCPUPerOpUS = 434 // 740 µs: 0.93 × River, 1.48 × journal
	r.Rows = nil
	r.build()
	if x := rowNamed(t, r, "Charge CPU per op c=32 ÷ River's"); x.Met != "no" {
		t.Errorf("River ratio row = %+v, want not met", x)
	}
	if x := rowNamed(t, r, "Charge CPU per op c=32 ÷ the journal's"); x.Met != "no" {
		t.Errorf("journal ratio row = %+v, want not met", x)
	}

	if x := rowNamed(t, r, "River peer c=32"); x.Value != "320 jobs/s; 500 + 300 µs = 800 µs; 4.5 round trips; 1,620 inserted" {
		t.Errorf("River c=32 row = %q", x.Value)
	}
	if x := rowNamed(t, r, "journal peer c=1: ops/s"); x.Value != "900 ops/s; 200 + 300 µs = 500 µs; 2.0 round trips" {
		t.Errorf("journal c=1 row = %q", x.Value)
	}
	// How busy the machine was, beside each peer's CPU at c > 1.
	r.River[1].CPU.MachineBusy, r.Journal[2].CPU.MachineBusy = 0.41, 0.99
	r.Rows = nil
	r.build()
	if x := rowNamed(t, r, "River peer c=32"); x.Value != "320 jobs/s; 500 + 300 µs = 800 µs; 4.5 round trips; 1,620 inserted; machine busy 41 %" {
		t.Errorf("River c=32 row = %q", x.Value)
	}
	if x := rowNamed(t, r, "journal peer c=32"); !strings.HasSuffix(x.Value, "; machine busy 99 %") {
		t.Errorf("journal c=32 row = %q", x.Value)
	}
	// Added latency in commits, without a goal: 0.50 ms over 0.20 ms.
	if x := rowNamed(t, r, "added by the journal peer, p50"); x.Value != "0.500 ms = 2.5 commits" || x.Met != "" {
		t.Errorf("journal added row = %+v", x)
	}
	if x := rowNamed(t, r, "River peer c=1: p50 / p99"); x.Value != "230.0 / 300.0 ms" {
		t.Errorf("River latency row = %q", x.Value)
	}
	if x := rowNamed(t, r, "WAL per op c=32"); x.Value != "pgbench commit 238 B; Charge 2,960 B; journal 1,800 B; River job 2,900 B" {
		t.Errorf("WAL row = %q", x.Value)
	}
	if r.Goals["charge_cpu_over_river_max"] != goalOverRiver || r.Goals["charge_cpu_over_journal_max"] != goalOverJournal {
		t.Errorf("Goals = %v", r.Goals)
	}
}

// Without peers (--peers=false) the table has none of their rows.
func TestReportNoPeers(t *testing.T) {
	r := floorReport()
	r.build()
	for _, x := range r.Rows {
		if strings.Contains(x.Metric, "peer") || strings.Contains(x.Metric, "÷") || strings.HasPrefix(x.Metric, "WAL per op") {
			t.Errorf("row %q without peers", x.Metric)
		}
	}
}
