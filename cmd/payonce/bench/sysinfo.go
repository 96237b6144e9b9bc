package main

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// machine describes where the figures were taken.
type machine struct {
	CPU          string  `json:"cpu"`
	Cores        int     `json:"cores"`
	Go           string  `json:"go"`
	Postgres     string  `json:"postgres"`
	PGBench      string  `json:"pgbench"`
	PGSettings   string  `json:"pg_settings"`
	LoadAtStart  string  `json:"load_at_start"`
	LoadAtEnd    string  `json:"load_at_end"`
	Load1AtStart float64 `json:"load1_at_start"`
	Load1AtEnd   float64 `json:"load1_at_end"`
}

// cpuModel returns the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// loadAvg returns the 1, 5 and 15 minute load averages as printed by
// /proc/loadavg, and the 1-minute one as a number.
func loadAvg() (string, float64) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a", 0
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a", 0
	}
	one, _ := strconv.ParseFloat(f[0], 64)
	return strings.Join(f[:3], " "), one
}

// pgInfo returns the server's version and the settings that decide what a
// commit costs.
func pgInfo(ctx context.Context, conn *pgx.Conn) (version, settings string, err error) {
	if err = conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return "", "", err
	}
	var parts []string
	for _, name := range []string{"fsync", "synchronous_commit", "wal_sync_method", "commit_delay", "max_connections"} {
		var v string
		if err = conn.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
			return "", "", err
		}
		parts = append(parts, name+"="+v)
	}
	return version, strings.Join(parts, " "), nil
}

// cpuMark is a point in time for measuring CPU use over an interval.
type cpuMark struct {
	wall      time.Time
	busy, all uint64        // machine-wide jiffies from /proc/stat
	self      time.Duration // this process's user+system CPU time
}

func markCPU() cpuMark {
	m := cpuMark{wall: time.Now()}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) > 4 && f[0] == "cpu" {
			for i, s := range f[1:] {
				v, _ := strconv.ParseUint(s, 10, 64)
				m.all += v
				if i != 3 && i != 4 { // idle, iowait
					m.busy += v
				}
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		m.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return m
}

// cpuUse is what the machine and this process spent between two marks.
type cpuUse struct {
	// MachineBusy is the share of all cores' time not idle (0-1).
	MachineBusy float64 `json:"machine_busy"`
	// SelfCores is this process's CPU time over wall time: cores used by
	// the client, the in-process fake and the drivers.
	SelfCores float64 `json:"self_cores"`
}

func (m cpuMark) since(start cpuMark) cpuUse {
	var u cpuUse
	if d := m.all - start.all; d > 0 {
		u.MachineBusy = float64(m.busy-start.busy) / float64(d)
	}
	if w := m.wall.Sub(start.wall); w > 0 {
		u.SelfCores = float64(m.self-start.self) / float64(w)
	}
	return u
}

// backendCPU measures the CPU time PostgreSQL's backends spend serving the
// connections of one application_name, from /proc/<pid>/stat of each
// backend (the server must run on this host, as --pg's 127.0.0.1 does).
// Backends already connected when it starts count from then; backends
// that connect later count from their start. With a poll period, it keeps
// sampling so that backends which exit before finish (pgbench's) are
// counted up to their last sample.
type backendCPU struct {
	admin *pgxpool.Pool
	app   string

	mu         sync.Mutex
	base, last map[int]uint64 // pid -> utime+stime in clock ticks
	missing    bool           // a backend's /proc entry could not be read
	done       chan struct{}
	wg         sync.WaitGroup
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

func startBackendCPU(ctx context.Context, admin *pgxpool.Pool, app string, poll time.Duration) *backendCPU {
	b := &backendCPU{admin: admin, app: app, base: map[int]uint64{}, last: map[int]uint64{}, done: make(chan struct{})}
	b.sample(ctx, true)
	if poll > 0 {
		b.wg.Go(func() {
			t := time.NewTicker(poll)
			defer t.Stop()
			for {
				select {
				case <-b.done:
					return
				case <-t.C:
					b.sample(ctx, false)
				}
			}
		})
	}
	return b
}

func (b *backendCPU) sample(ctx context.Context, first bool) {
	rows, err := b.admin.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", b.app)
	if err != nil {
		return
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pid := range pids {
		ticks, ok := procTicks(int(pid))
		if !ok {
			b.missing = true
			continue
		}
		if _, seen := b.last[int(pid)]; !seen && first {
			b.base[int(pid)] = ticks
		}
		b.last[int(pid)] = ticks
	}
}

// finish takes a last sample, stops polling and returns the CPU time
// spent; ok is false when the backends' /proc entries could not be read
// (a server on another host or in another PID namespace).
func (b *backendCPU) finish(ctx context.Context) (time.Duration, bool) {
	b.sample(ctx, false)
	close(b.done)
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	var ticks uint64
	for pid, t := range b.last {
		ticks += t - b.base[pid]
	}
	return time.Duration(ticks) * clockTick, !b.missing && len(b.last) > 0
}

// procTicks reads utime+stime of a PostgreSQL process.
func procTicks(pid int) (uint64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || !strings.Contains(s[:i], "(postgres") {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// After the command: state is field 3 of the line, utime 14, stime 15.
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}
