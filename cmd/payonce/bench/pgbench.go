package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The ceiling: what PostgreSQL on this machine commits per second when each
// transaction does the least a payment journal entry can do, one durable
// one-row insert. pgbench drives it with a custom script at the same
// numbers of clients as the Charge runs.

// ceilingScript is one transaction: insert a random id or nothing. The
// schema is substituted; the table has a bigint primary key and nothing else.
const ceilingScript = `\set id random(1, 9000000000000000000)
INSERT INTO %s.bench_ceiling (id) VALUES (:id) ON CONFLICT DO NOTHING;
`

// pairScript is one payonce-shaped operation: a durable commit, then a
// second commit with synchronous_commit off, as ledgerpg's Begin and Finish
// do. Only run with --pair.
const pairScript = `\set id random(1, 9000000000000000000)
INSERT INTO %[1]s.bench_ceiling (id) VALUES (:id) ON CONFLICT DO NOTHING;
BEGIN;
SET LOCAL synchronous_commit TO OFF;
UPDATE %[1]s.bench_ceiling SET v = v + 1 WHERE id = :id;
COMMIT;
`

// pgbenchResult is what one pgbench run printed.
type pgbenchResult struct {
	Clients   int     `json:"clients"`
	Script    string  `json:"script"`
	TPS       float64 `json:"tps"`
	LatencyMS float64 `json:"latency_avg_ms"`
	Processed int64   `json:"processed"`
	Failed    int64   `json:"failed"`
	CPU       cpuUse  `json:"cpu"`
	DurationS int     `json:"duration_s"`
	// CPU time per transaction of the backends serving pgbench (sampled
	// every 100 ms; what a backend spent after its last sample is missed)
	// and of pgbench itself, in µs.
	PGCPUPerTxUS     float64 `json:"pg_cpu_per_tx_us,omitempty"`
	ClientCPUPerTxUS float64 `json:"client_cpu_per_tx_us,omitempty"`
	// WAL bytes the server wrote per transaction (the whole server's WAL
	// during the run: other writers are counted too).
	WALBytesPerTx float64 `json:"wal_bytes_per_tx,omitempty"`
}

// parsePGBench reads pgbench's summary. It understands PostgreSQL 14+
// ("tps = N (without initial connection time)") and older output ("tps = N
// (excluding connections establishing)"); a bare "tps = N" is used when
// neither qualifier is present.
func parsePGBench(out string) (pgbenchResult, error) {
	var (
		r       pgbenchResult
		haveTPS bool
	)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "tps = "):
			f := strings.Fields(strings.TrimPrefix(line, "tps = "))
			if len(f) == 0 {
				continue
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return r, fmt.Errorf("pgbench: reading %q: %w", line, err)
			}
			preferred := strings.Contains(line, "without initial connection") || strings.Contains(line, "excluding connections")
			if preferred || !haveTPS {
				r.TPS = v
			}
			haveTPS = true
		case strings.HasPrefix(line, "latency average = "):
			f := strings.Fields(strings.TrimPrefix(line, "latency average = "))
			if len(f) >= 1 {
				v, err := strconv.ParseFloat(f[0], 64)
				if err != nil {
					return r, fmt.Errorf("pgbench: reading %q: %w", line, err)
				}
				if len(f) >= 2 && f[1] == "us" {
					v /= 1000
				}
				r.LatencyMS = v
			}
		case strings.HasPrefix(line, "number of transactions actually processed:"):
			f := strings.Fields(strings.TrimPrefix(line, "number of transactions actually processed:"))
			if len(f) >= 1 {
				r.Processed, _ = strconv.ParseInt(strings.Split(f[0], "/")[0], 10, 64)
			}
		case strings.HasPrefix(line, "number of failed transactions:"):
			f := strings.Fields(strings.TrimPrefix(line, "number of failed transactions:"))
			if len(f) >= 1 {
				r.Failed, _ = strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	if !haveTPS {
		return r, fmt.Errorf("pgbench printed no \"tps = \" line")
	}
	return r, nil
}

// pgbench runs the pgbench binary.
type pgbench struct {
	bin    string
	url    string
	schema string
	dir    string // holds the script files
	admin  *pgxpool.Pool
	app    string   // application_name of pgbench's connections
	walOf  walMeter // nil: WAL not measured
}

// checkPGBench finds the binary and returns its version line.
func checkPGBench(bin string) (path, version string, err error) {
	path, err = exec.LookPath(bin)
	if err != nil {
		return "", "", fmt.Errorf("pgbench not found (%v): install PostgreSQL's client tools (Debian: apt-get install postgresql-client) or pass --pgbench PATH", err)
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %w", path, err)
	}
	return path, strings.TrimSpace(string(out)), nil
}

// run runs script (ceilingScript or pairScript) with clients clients for d
// in prepared mode and parses the summary.
func (p *pgbench) run(ctx context.Context, name, script string, clients int, d time.Duration) (pgbenchResult, error) {
	file := filepath.Join(p.dir, name+".sql")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(script, p.schema)), 0o600); err != nil {
		return pgbenchResult{}, err
	}
	secs := max(1, int(d.Round(time.Second)/time.Second))
	args := []string{
		"-n", // no vacuum: the script uses its own table
		"-f", file,
		"-c", strconv.Itoa(clients),
		"-j", strconv.Itoa(min(clients, runtime.NumCPU())),
		"-T", strconv.Itoa(secs),
		"-M", "prepared",
		p.url,
	}
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Env = append(os.Environ(), "PGAPPNAME="+p.app)
	var lsn string
	walOK := false
	if p.walOf != nil {
		lsn, walOK = walLSN(ctx, p.admin)
	}
	start := markCPU()
	backends := startBackendCPU(ctx, p.admin, p.app, 100*time.Millisecond)
	out, err := cmd.CombinedOutput()
	pgCPU, pgCPUOK := backends.finish(ctx)
	var wal int64
	if walOK {
		wal, walOK = p.walOf(ctx, lsn)
	}
	use := markCPU().since(start)
	if err != nil {
		return pgbenchResult{}, fmt.Errorf("pgbench %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	r, err := parsePGBench(string(out))
	if err != nil {
		return r, fmt.Errorf("%w\n%s", err, out)
	}
	if r.Failed > 0 {
		return r, fmt.Errorf("pgbench: %d failed transactions\n%s", r.Failed, out)
	}
	r.Clients, r.Script, r.CPU, r.DurationS = clients, name, use, secs
	if r.Processed > 0 {
		if pgCPUOK {
			r.PGCPUPerTxUS = float64(pgCPU.Microseconds()) / float64(r.Processed)
		}
		own := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		r.ClientCPUPerTxUS = float64(own.Microseconds()) / float64(r.Processed)
		if walOK {
			r.WALBytesPerTx = float64(wal) / float64(r.Processed)
		}
	}
	return r, nil
}
