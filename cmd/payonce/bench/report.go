package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Goals the figures are held to.
const (
	goalRatio         = 0.7 // Charge ops/s over the ceiling
	goalCommits       = 2.5 // p50 latency added on PostgreSQL, in commits (one durable, one lazy)
	goalSQLiteAddedMS = 0.3 // latency added on SQLite
	goalCPUFloor      = 2.0 // Charge CPU per op over the floor, at c > 1
	goalRoundTrips    = 2   // PostgreSQL round trips per Charge: one commit before the send, one after
	goalDrain         = 0.8 // drain ops/s over Charge's at goalDrainClients
	goalDrainClients  = 32
	goalOverRiver     = 0.8 // Charge CPU per op over the River peer's per job, at goalPeerClients
	goalOverJournal   = 1.3 // Charge CPU per op over the journal peer's per op, at goalPeerClients
	goalPeerClients   = 32
)

// report is everything measured, and the table built from it.
type report struct {
	Machine machine       `json:"machine"`
	Options reportOptions `json:"options"`
	// Ceiling holds pgbench's one-row commit runs; Pair, with --pair, its
	// durable-plus-lazy commit pairs.
	Ceiling []pgbenchResult `json:"ceiling"`
	Pair    []pgbenchResult `json:"pair,omitempty"`
	// Charge holds Charge on PostgreSQL per concurrency level (c=1 from the
	// interleaved latency run); SQLite, Raw and Commit are at c=1. RawAt
	// holds the raw POST at each level above 1 (run after Charge's).
	Charge []loadResult  `json:"charge"`
	SQLite loadResult    `json:"sqlite"`
	Raw    loadResult    `json:"raw_post"`
	RawAt  []loadResult  `json:"raw_post_by_level,omitempty"`
	Commit loadResult    `json:"pg_commit"`
	Drain  []drainResult `json:"drain"`
	Feed   []feedResult  `json:"feed,omitempty"`
	// The peers, per concurrency level (c=1 from the interleaved latency
	// run): the River job and the hand-rolled journal.
	River   []loadResult   `json:"river,omitempty"`
	Journal []loadResult   `json:"journal,omitempty"`
	Floor   []cpuFloor     `json:"cpu_floor,omitempty"`
	Rows    []row          `json:"rows"`
	Notes   []string       `json:"notes"`
	Goals   map[string]any `json:"goals"`
}

type reportOptions struct {
	Duration    string `json:"duration"`
	Concurrency []int  `json:"concurrency"`
	Backlog     int    `json:"backlog"`
	Reconcilers []int  `json:"reconcilers"`
	Pair        bool   `json:"pair"`
	Feed        bool   `json:"feed"`
	Peers       bool   `json:"peers"`
	// RiverFetchCooldown is --river-fetch-cooldown ("0s": River's default).
	RiverFetchCooldown string `json:"river_fetch_cooldown,omitempty"`
}

// row is one line of the table. Met is "yes", "no" or "" (no goal).
type row struct {
	Metric string `json:"metric"`
	Value  string `json:"value"`
	Goal   string `json:"goal"`
	Met    string `json:"met"`
}

func (r *report) add(metric, value string) {
	r.Rows = append(r.Rows, row{Metric: metric, Value: value, Goal: "—"})
}

func (r *report) addGoal(metric, value, goal string, met bool) {
	m := "no"
	if met {
		m = "yes"
	}
	r.Rows = append(r.Rows, row{Metric: metric, Value: value, Goal: goal, Met: m})
}

func (r *report) ceiling(c int) (pgbenchResult, bool) {
	for _, x := range r.Ceiling {
		if x.Clients == c {
			return x, true
		}
	}
	return pgbenchResult{}, false
}

// cpuFloor is the least CPU one Charge can cost at a concurrency level, from
// figures measured in the same run: two pgbench one-row commits (the
// backends' CPU and pgbench's, per commit) and one raw POST to the fake
// (this process's CPU per POST: net/http client and the in-process fake).
// Charge's CPU per op is its backends' plus this process's.
type cpuFloor struct {
	Clients int `json:"clients"`
	// Per pgbench commit, and per raw POST, in µs.
	CommitPGUS     float64 `json:"commit_pg_cpu_us"`
	CommitClientUS float64 `json:"commit_client_cpu_us"`
	RawPOSTUS      float64 `json:"raw_post_cpu_us"`
	// FloorUS = 2 × (CommitPGUS + CommitClientUS) + RawPOSTUS.
	FloorUS float64 `json:"floor_us"`
	// Charge's CPU per op (PostgreSQL backends + this process) and its
	// ratio to FloorUS.
	ChargePGUS   float64 `json:"charge_pg_cpu_us"`
	ChargeSelfUS float64 `json:"charge_self_cpu_us"`
	Ratio        float64 `json:"ratio"`
}

// rawAt is the raw POST measured at concurrency c: the latency run's at 1.
func (r *report) rawAt(c int) (loadResult, bool) {
	if c == 1 {
		return r.Raw, r.Raw.Ops > 0
	}
	for _, x := range r.RawAt {
		if x.Clients == c {
			return x, x.Ops > 0
		}
	}
	return loadResult{}, false
}

// floor computes the CPU floor at c, when pgbench, the raw POST and Charge
// were all measured there and the backends' CPU could be read.
func (r *report) floor(c int) (cpuFloor, bool) {
	ceil, ok1 := r.ceiling(c)
	raw, ok2 := r.rawAt(c)
	ch, ok3 := r.chargeAt(c)
	if !ok1 || !ok2 || !ok3 || ceil.PGCPUPerTxUS == 0 || ch.PGCPUPerOpUS == 0 {
		return cpuFloor{}, false
	}
	f := cpuFloor{
		Clients: c, CommitPGUS: ceil.PGCPUPerTxUS, CommitClientUS: ceil.ClientCPUPerTxUS, RawPOSTUS: raw.SelfCPUPerOpUS,
		ChargePGUS: ch.PGCPUPerOpUS, ChargeSelfUS: ch.SelfCPUPerOpUS,
	}
	f.FloorUS = 2*(f.CommitPGUS+f.CommitClientUS) + f.RawPOSTUS
	if f.FloorUS > 0 {
		f.Ratio = (f.ChargePGUS + f.ChargeSelfUS) / f.FloorUS
	}
	return f, f.FloorUS > 0
}

// build fills Rows and Notes from the measurements.
func (r *report) build() {
	r.Goals = map[string]any{
		"charge_over_ceiling_min":     goalRatio,
		"pg_added_latency_commits":    goalCommits,
		"sqlite_added_latency_ms":     goalSQLiteAddedMS,
		"charge_cpu_over_floor_max":   goalCPUFloor,
		"pg_round_trips_per_charge":   goalRoundTrips,
		"drain_over_charge_min":       goalDrain,
		"charge_cpu_over_river_max":   goalOverRiver,
		"charge_cpu_over_journal_max": goalOverJournal,
	}
	for _, c := range r.Ceiling {
		r.add(fmt.Sprintf("ceiling c=%d: pgbench one-row commits / 2", c.Clients),
			fmt.Sprintf("%s ops/s (pgbench %s tps, avg %s)", num(c.TPS/2), num(c.TPS), msStr(c.LatencyMS)))
	}
	for _, p := range r.Pair {
		r.add(fmt.Sprintf("pgbench c=%d: durable + lazy commit pairs", p.Clients),
			fmt.Sprintf("%s pairs/s (avg %s; CPU per pair %s + %s)", num(p.TPS), msStr(p.LatencyMS), us(p.PGCPUPerTxUS), us(p.ClientCPUPerTxUS)))
	}
	for _, ch := range r.Charge {
		ceil, ok := r.ceiling(ch.Clients)
		metric := fmt.Sprintf("Charge on PostgreSQL c=%d", ch.Clients)
		if !ok || ceil.TPS == 0 {
			r.add(metric, num(ch.OpsPerSec)+" ops/s")
			continue
		}
		ratio := ch.OpsPerSec / (ceil.TPS / 2)
		r.addGoal(metric, fmt.Sprintf("%s ops/s = %.2f × ceiling", num(ch.OpsPerSec), ratio),
			fmt.Sprintf("≥ %.1f × ceiling (%s ops/s)", goalRatio, num(goalRatio*ceil.TPS/2)), ratio >= goalRatio)
	}

	if r.Raw.Ops > 0 {
		r.add("raw POST to the fake c=1: p50 / p99", pair(r.Raw.P50MS, r.Raw.P99MS))
		commit := pair(r.Commit.P50MS, r.Commit.P99MS)
		if c1, ok := r.ceiling(1); ok {
			commit += fmt.Sprintf(" (pgbench avg %s)", msStr(c1.LatencyMS))
		}
		r.add("one PostgreSQL commit c=1 (pgx): p50 / p99", commit)
		if pg, ok := r.chargeAt(1); ok {
			r.add("Charge on PostgreSQL c=1: p50 / p99", pair(pg.P50MS, pg.P99MS))
			r.addedRow("added by Charge on PostgreSQL, p50", pg.P50MS-r.Raw.P50MS, r.Commit.P50MS, true)
			r.addedRow("added by Charge on PostgreSQL, p99", pg.P99MS-r.Raw.P99MS, r.Commit.P99MS, false)
		}
		r.add("Charge on SQLite c=1: p50 / p99", pair(r.SQLite.P50MS, r.SQLite.P99MS))
		for _, p := range []struct {
			name       string
			charge, rw float64
		}{{"p50", r.SQLite.P50MS, r.Raw.P50MS}, {"p99", r.SQLite.P99MS, r.Raw.P99MS}} {
			added := p.charge - p.rw
			r.addGoal("added by Charge on SQLite, "+p.name, msStr(added), fmt.Sprintf("≤ %s", msStr(goalSQLiteAddedMS)), added <= goalSQLiteAddedMS)
		}
		if pg, ok := r.chargeAt(1); ok {
			r.add("where a PostgreSQL Charge's time goes, c=1 (means)", split(pg))
			r.addGoal("PostgreSQL round trips per Charge", fmt.Sprintf("%.1f (pgbench: 1 per commit)", pg.RoundTripsPerOp),
				fmt.Sprintf("= %d", goalRoundTrips), pg.RoundTripsPerOp <= goalRoundTrips)
		}
		r.add("where a SQLite Charge's time goes, c=1 (means)", split(r.SQLite))
	}
	for _, ch := range r.Charge {
		if ch.Clients == 1 {
			continue
		}
		v := fmt.Sprintf("%s / %s (%s round trips)", msStr(ch.BeginMeanMS), msStr(ch.FinishMeanMS), strconv.FormatFloat(ch.RoundTripsPerOp, 'f', 1, 64))
		r.add(fmt.Sprintf("Charge on PostgreSQL c=%d: mean Begin / Finish", ch.Clients), v)
	}
	for _, f := range r.Feed {
		v := fmt.Sprintf("%s entries/s in %s pages/s (page p50 %s", num(float64(f.Entries)/f.Seconds), num(float64(f.Pages)/f.Seconds), msStr(f.PageP50MS))
		if f.PGCPUPageUS > 0 {
			v += fmt.Sprintf(", backend CPU %s per page", us(f.PGCPUPageUS))
		}
		r.add(fmt.Sprintf("settlement feed read beside Charge c=%d", f.Clients), v+")")
	}
	for _, c := range r.Ceiling {
		v := fmt.Sprintf("pgbench commit %s + %s", us(c.PGCPUPerTxUS), us(c.ClientCPUPerTxUS))
		busy := pct(c.CPU.MachineBusy)
		if ch, ok := r.chargeAt(c.Clients); ok {
			v += fmt.Sprintf("; Charge %s + %s", us(ch.PGCPUPerOpUS), us(ch.SelfCPUPerOpUS))
			busy += " / " + pct(ch.CPU.MachineBusy)
		}
		if raw, ok := r.rawAt(c.Clients); ok {
			v += fmt.Sprintf("; raw POST 0 + %s", us(raw.SelfCPUPerOpUS))
		}
		r.add(fmt.Sprintf("CPU per op c=%d: PostgreSQL backends + client process", c.Clients), v+"; machine busy "+busy)
	}
	r.Floor = nil
	for _, c := range r.Ceiling {
		f, ok := r.floor(c.Clients)
		if !ok {
			continue
		}
		r.Floor = append(r.Floor, f)
		r.add(fmt.Sprintf("CPU floor c=%d: 2 pgbench commits + 1 raw POST", f.Clients),
			fmt.Sprintf("2 × (%s + %s) + %s = %s (PostgreSQL %s + client %s)", strings.TrimSuffix(us(f.CommitPGUS), " µs"),
				us(f.CommitClientUS), us(f.RawPOSTUS), us(f.FloorUS), us(2*f.CommitPGUS), us(2*f.CommitClientUS+f.RawPOSTUS)))
		metric := fmt.Sprintf("Charge CPU per op c=%d: PostgreSQL + client", f.Clients)
		value := fmt.Sprintf("%s + %s = %s = %.1f × floor", strings.TrimSuffix(us(f.ChargePGUS), " µs"), us(f.ChargeSelfUS),
			us(f.ChargePGUS+f.ChargeSelfUS), f.Ratio)
		if f.Clients == 1 {
			// The goal is for concurrent callers: at c=1 the figures carry
			// each process's wake-up per request, which batching cannot
			// share.
			r.add(metric, value)
			continue
		}
		r.addGoal(metric, value, fmt.Sprintf("≤ %.1f × floor (%s)", goalCPUFloor, us(goalCPUFloor*f.FloorUS)), f.Ratio <= goalCPUFloor)
	}

	r.peerRows()
	r.walRows()

	for _, d := range r.Drain {
		s := "s"
		if d.Reconcilers == 1 {
			s = ""
		}
		metric := fmt.Sprintf("drain %s pending, %d reconciler%s", num(float64(d.Backlog)), d.Reconcilers, s)
		value := fmt.Sprintf("%s ops/s (%.1f s; %.1f round trips, CPU %s + %s per op; machine busy %s)", num(d.OpsPerSec), d.Seconds,
			d.RoundTripsPerOp, us(d.PGCPUPerOpUS), us(d.SelfCPUPerOpUS), pct(d.CPU.MachineBusy))
		if ch, ok := r.chargeAt(goalDrainClients); ok && ch.OpsPerSec > 0 {
			ratio := d.OpsPerSec / ch.OpsPerSec
			r.addGoal(metric, fmt.Sprintf("%s = %.2f × Charge c=%d", value, ratio, goalDrainClients),
				fmt.Sprintf("≥ %.1f × Charge c=%d (%s ops/s)", goalDrain, goalDrainClients, num(goalDrain*ch.OpsPerSec)), ratio >= goalDrain)
		} else {
			r.add(metric, value)
		}
		r.add(fmt.Sprintf("  peak memory, %d reconciler%s: heap in use / VmHWM", d.Reconcilers, s),
			fmt.Sprintf("%.1f MB / %.1f MB (before: %.1f MB / %.1f MB; fake child: %.0f MB)", d.PeakHeapMB, d.PeakRSSMB, d.BaseHeapMB, d.BaseRSSMB, d.FakeRSSMB))
	}

	r.Notes = []string{
		"ceiling = pgbench tps / 2: an operation needs two commits (Begin journals the attempt, Finish records the outcome). " +
			"pgbench's transactions are all durable (synchronous_commit=on); payonce's second commit, Finish, is lazily durable " +
			"(synchronous_commit=off for that transaction), so the ceiling counts one flush more per operation than payonce waits for." +
			ifThen(len(r.Pair) > 0, " The pair rows run that shape in pgbench: an insert, then BEGIN, SET LOCAL synchronous_commit TO OFF, an update, COMMIT (five round trips, as many as a Charge's)."),
		"added latency = Charge's percentile minus the raw POST's (no ledger, same fake, same transport settings); at c=1 the raw POST, the commit loop " +
			"and both Charges run in 250 ms turns, so background load touches them alike (Charge's c=1 ops/s come from those turns).",
		"the fake Stripe runs in this process for Charge and raw POST, and in a child process for the drain: the drain's heap and VmHWM are the reconcilers' " +
			"(with the pgx pool), not the fake's, which keeps every object it creates (its own peak RSS is shown as \"fake child\").",
		"CPU per op: CPU time of the PostgreSQL backends serving the run (from /proc, found by application_name) + of the client process " +
			"(pgbench; or this program: payonce, pgx, net/http and the in-process fake, whose share the raw POST row shows), per operation; " +
			"machine busy is all cores, other work included (pgbench / Charge).",
		"CPU floor = 2 × a pgbench one-row commit's CPU (backends + pgbench, per commit) + a raw POST's CPU (this process: net/http and the in-process fake, " +
			"whose share Charge carries too), at the same concurrency and in the same run (the raw POST at c > 1 runs right after Charge, " +
			"against the same fake): the least CPU an operation of two commits and one request can cost. The goal (≤ " + strconv.FormatFloat(goalCPUFloor, 'f', 1, 64) + " × floor) applies at c > 1 (at c=1 each request also pays the wake-ups of idle processes).",
		"every run checks that each operation succeeded with one attempt and that the fake holds exactly one payment per operation.",
	}
	if len(r.River)+len(r.Journal) > 0 {
		r.Notes = append(r.Notes,
			"River peer: each operation is an order transaction (BEGIN, insert the order row, InsertTx the charge job, COMMIT) and the job, "+
				"worked by a River worker that POSTs the raw POST's request with the key derived from the order id; River's defaults "+
				"(FetchCooldown 100 ms unless --river-fetch-cooldown, FetchPollInterval 1 s, the batch completer, which persists completions "+
				"every 250 ms while fewer than 100 wait) with MaxWorkers = the callers. At c=1 an operation is timed "+
				"from BEGIN until River's job_completed event (sent once the completer has marked the row completed), each order after an untimed pause "+
				"drawn uniformly from the completer's 250 ms period (orders arriving at random moments, not just after a flush). At c > 1 the callers insert "+
				"while the workers drain, with at most 25 pending jobs per caller (a steady state: River's defaults run at most MaxWorkers jobs "+
				"per 100 ms fetch); jobs/s are the jobs completed within the duration, and CPU, round trips and WAL within it are divided by "+
				"them (River's background work, its LISTEN and maintenance, included).",
			"journal peer: one table (idempotency_key primary key, a unique index on order_id); per charge an autocommit INSERT ... ON CONFLICT "+
				"DO NOTHING of the IN_PROGRESS row (durable), the POST, then UPDATE to DONE with the response in a transaction with "+
				"synchronous_commit off, sent as one pipeline (BEGIN, SET LOCAL, UPDATE, COMMIT). A repeated key reads the row: DONE returns "+
				"the stored response, IN_PROGRESS re-sends with the same key.")
	}
	if slices.ContainsFunc(r.Rows, func(x row) bool { return strings.HasPrefix(x.Metric, "WAL per op") }) {
		r.Notes = append(r.Notes,
			"WAL per op: the WAL between pg_current_wal_insert_lsn() before and after each measured run that touched the run's own schema "+
				"(its tables, indexes, sequences, TOAST) plus the other records of the same transactions, commit records included, read with "+
				"pg_walinspect, over its operations (without pg_walinspect: the whole server's pg_wal_lsn_diff, other writers included).")
	}
	if r.Machine.Load1AtStart > float64(r.Machine.Cores) || r.Machine.Load1AtEnd > float64(r.Machine.Cores) {
		r.Notes = append(r.Notes, fmt.Sprintf("the machine was busy with other work (load %s at start, %s at end, %d cores): figures are lower and noisier than on an idle host.",
			r.Machine.LoadAtStart, r.Machine.LoadAtEnd, r.Machine.Cores))
	}
}

// addedRow is a PostgreSQL added-latency row, in commits at the same
// percentile; with goal, held to goalCommits (the goal is for p50).
func (r *report) addedRow(metric string, added, commit float64, goal bool) {
	limit := goalCommits * commit
	value := msStr(added)
	if commit > 0 {
		value += fmt.Sprintf(" = %.1f commits", added/commit)
	}
	if !goal {
		r.add(metric, value)
		return
	}
	r.addGoal(metric, value, fmt.Sprintf("≤ %.1f × commit (%s)", goalCommits, msStr(limit)), added <= limit)
}

func (r *report) chargeAt(c int) (loadResult, bool) {
	for _, x := range r.Charge {
		if x.Clients == c {
			return x, true
		}
	}
	return loadResult{}, false
}

// print writes the machine, the table and the notes as Markdown.
func (r *report) print(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "payonce bench: %s, %d cores; %s; PostgreSQL %s (%s); %s\n", m.CPU, m.Cores, m.Go, m.Postgres, m.PGSettings, m.PGBench)
	fmt.Fprintf(w, "load average %s at start, %s at end; --duration %s --concurrency %s --backlog %d --reconcilers %s%s\n\n",
		m.LoadAtStart, m.LoadAtEnd, r.Options.Duration, joinInts(r.Options.Concurrency), r.Options.Backlog,
		joinInts(r.Options.Reconcilers), ifThen(r.Options.Pair, " --pair")+ifThen(r.Options.Feed, " --feed")+
			ifThen(r.Options.RiverFetchCooldown != "" && r.Options.RiverFetchCooldown != "0s", " --river-fetch-cooldown "+r.Options.RiverFetchCooldown)+
			ifThen(!r.Options.Peers, " --peers=false"))
	widths := [4]int{len("metric"), len("value"), len("goal"), len("met?")}
	for _, x := range r.Rows {
		for i, s := range []string{x.Metric, x.Value, x.Goal, x.Met} {
			widths[i] = max(widths[i], runeLen(s))
		}
	}
	line := func(cells ...string) {
		var b strings.Builder
		for i, s := range cells {
			b.WriteString("| ")
			b.WriteString(s)
			b.WriteString(strings.Repeat(" ", widths[i]-runeLen(s)+1))
		}
		b.WriteString("|\n")
		_, _ = io.WriteString(w, b.String())
	}
	line("metric", "value", "goal", "met?")
	line(strings.Repeat("-", widths[0]), strings.Repeat("-", widths[1]), strings.Repeat("-", widths[2]), strings.Repeat("-", widths[3]))
	for _, x := range r.Rows {
		line(x.Metric, x.Value, x.Goal, x.Met)
	}
	fmt.Fprintln(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
}

func runeLen(s string) int { return len([]rune(s)) }

func ifThen(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// split says where one Charge's mean time goes: Begin, Finish, and the rest
// (the HTTP request and the client's own work).
func split(x loadResult) string {
	rest := x.MeanMS - x.BeginMeanMS - x.FinishMeanMS
	return fmt.Sprintf("Begin %s, Finish %s, rest (HTTP + client) %s of %s", msStr(x.BeginMeanMS), msStr(x.FinishMeanMS), msStr(rest), msStr(x.MeanMS))
}

// num formats a rate with thousands separators and no decimals (one
// decimal below 10).
func num(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// msStr formats milliseconds with three significant decimals below 1 ms.
func msStr(v float64) string {
	switch {
	case v < 1 && v > -1:
		return strconv.FormatFloat(v, 'f', 3, 64) + " ms"
	case v < 10 && v > -10:
		return strconv.FormatFloat(v, 'f', 2, 64) + " ms"
	default:
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	}
}

func pair(a, b float64) string {
	return strings.TrimSuffix(msStr(a), " ms") + " / " + msStr(b)
}

func us(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " µs" }

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + " %" }

func (r *report) riverAt(c int) (loadResult, bool)   { return resultAt(r.River, c) }
func (r *report) journalAt(c int) (loadResult, bool) { return resultAt(r.Journal, c) }

func resultAt(rs []loadResult, c int) (loadResult, bool) {
	for _, x := range rs {
		if x.Clients == c {
			return x, x.Ops > 0
		}
	}
	return loadResult{}, false
}

// cpuPerOp is an operation's CPU, PostgreSQL backends + client process, in
// µs; false when the backends' share could not be read.
func cpuPerOp(x loadResult) (float64, bool) {
	return x.PGCPUPerOpUS + x.SelfCPUPerOpUS, x.PGCPUPerOpUS > 0
}

// peerCPU is the value of a peer's CPU cell: "backends + client = total µs".
func peerCPU(x loadResult) string {
	return fmt.Sprintf("%s + %s = %s", strings.TrimSuffix(us(x.PGCPUPerOpUS), " µs"), us(x.SelfCPUPerOpUS), us(x.PGCPUPerOpUS+x.SelfCPUPerOpUS))
}

// busyStr is "; machine busy N %" when it was measured at c > 1: CPU per
// operation rises with contention on a saturated machine, and River's
// defaults cap its rate (MaxWorkers jobs per 100 ms fetch) well below what
// saturates it, so the peers' rows say how busy the machine was, as the
// CPU rows do for pgbench and Charge. At c=1 the turns of all workloads
// share the figure.
func busyStr(x loadResult) string {
	if x.Clients <= 1 || x.CPU.MachineBusy == 0 {
		return ""
	}
	return "; machine busy " + pct(x.CPU.MachineBusy)
}

// bytes formats WAL bytes per operation.
func bytesStr(v float64) string { return num(v) + " B" }

// peerRows adds the peers' rows: per level their rate, CPU, round trips
// and WAL per operation, at c=1 their latency, and Charge's CPU over
// theirs (held to goalOverRiver and goalOverJournal at goalPeerClients).
func (r *report) peerRows() {
	if len(r.River)+len(r.Journal) == 0 {
		return
	}
	levels := []int{}
	for _, x := range append(append([]loadResult{}, r.Journal...), r.River...) {
		if !slices.Contains(levels, x.Clients) {
			levels = append(levels, x.Clients)
		}
	}
	slices.Sort(levels)
	for _, c := range levels {
		if j, ok := r.journalAt(c); ok {
			r.add(fmt.Sprintf("journal peer c=%d: ops/s, CPU per op (PostgreSQL + client)", c),
				fmt.Sprintf("%s ops/s; %s; %.1f round trips", num(j.OpsPerSec), peerCPU(j), j.RoundTripsPerOp)+busyStr(j))
		}
		if v, ok := r.riverAt(c); ok {
			value := fmt.Sprintf("%s jobs/s; %s; %.1f round trips", num(v.OpsPerSec), peerCPU(v), v.RoundTripsPerOp)
			if c > 1 && v.Inserted > 0 {
				value += fmt.Sprintf("; %s inserted", num(float64(v.Inserted)))
			}
			r.add(fmt.Sprintf("River peer c=%d: jobs/s, CPU per job (PostgreSQL + client)", c), value+busyStr(v))
		}
	}
	if j, ok := r.journalAt(1); ok {
		r.add("journal peer c=1: p50 / p99", pair(j.P50MS, j.P99MS))
		r.addedRow("added by the journal peer, p50", j.P50MS-r.Raw.P50MS, r.Commit.P50MS, false)
	}
	if v, ok := r.riverAt(1); ok {
		r.add("River peer c=1: p50 / p99 (order tx to job completed)", pair(v.P50MS, v.P99MS))
		r.addedRow("added by the River peer, p50", v.P50MS-r.Raw.P50MS, r.Commit.P50MS, false)
	}
	for _, c := range levels {
		ch, ok := r.chargeAt(c)
		chCPU, chOK := cpuPerOp(ch)
		if !ok || !chOK {
			continue
		}
		v, _ := r.riverAt(c)
		j, _ := r.journalAt(c)
		for _, p := range []struct {
			name string
			res  loadResult
			goal float64
		}{{"River's CPU per job", v, goalOverRiver}, {"the journal's CPU per op", j, goalOverJournal}} {
			peer, peerOK := cpuPerOp(p.res)
			if p.res.Ops == 0 || !peerOK {
				continue
			}
			ratio := chCPU / peer
			metric := fmt.Sprintf("Charge CPU per op c=%d ÷ %s", c, p.name)
			value := fmt.Sprintf("%s ÷ %s = %.2f", us(chCPU), us(peer), ratio)
			if c != goalPeerClients {
				r.add(metric, value)
				continue
			}
			r.addGoal(metric, value, fmt.Sprintf("≤ %.1f (%s)", p.goal, us(p.goal*peer)), ratio <= p.goal)
		}
	}
}

// walRows adds, per level, the WAL bytes per operation of each workload
// that measured them.
func (r *report) walRows() {
	for _, ceil := range r.Ceiling {
		c := ceil.Clients
		var parts []string
		if ceil.WALBytesPerTx > 0 {
			parts = append(parts, "pgbench commit "+bytesStr(ceil.WALBytesPerTx))
		}
		ch, _ := r.chargeAt(c)
		j, _ := r.journalAt(c)
		v, _ := r.riverAt(c)
		for _, x := range []struct {
			name string
			res  loadResult
		}{{"Charge", ch}, {"journal", j}, {"River job", v}} {
			if x.res.WALBytesPerOp > 0 {
				parts = append(parts, x.name+" "+bytesStr(x.res.WALBytesPerOp))
			}
		}
		if len(parts) > 0 {
			r.add(fmt.Sprintf("WAL per op c=%d", c), strings.Join(parts, "; "))
		}
	}
}
