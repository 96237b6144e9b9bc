package crashsuite

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envRequirePostgres, set to 1, turns a missing PostgreSQL into a failure
// instead of a skip (as everywhere in this repository).
const envRequirePostgres = "PAYONCE_REQUIRE_POSTGRES"

// pgCluster is a private PostgreSQL cluster for the suite: its own data
// directory and port, so that restarting it disturbs nobody else (the
// machine's shared cluster serves other packages' tests in parallel).
type pgCluster struct {
	bin  string // the version's bin directory
	dir  string // owned by postgres: data/, the socket and the log
	data string
	port int
}

// skipOrFail skips the test, or fails it when PAYONCE_REQUIRE_POSTGRES=1.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(envRequirePostgres) == "1" {
		t.Fatal(msg + " (" + envRequirePostgres + "=1 makes this a failure)")
	}
	t.Skip(msg)
}

// startPostgres initdbs and starts a private cluster as user postgres on a
// free 127.0.0.1 port. It is stopped (immediately) and removed when the test
// ends. Without the server binaries, the postgres user or runuser (root),
// the test is skipped saying what is needed.
func startPostgres(t *testing.T) *pgCluster {
	t.Helper()
	const need = "the crash suite starts a private PostgreSQL cluster: it needs the server binaries " +
		"(/usr/lib/postgresql/<version>/bin/initdb and pg_ctl, e.g. apt-get install postgresql), " +
		"a system user postgres, and to run as root (runuser -u postgres)"
	inits, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(inits) == 0 {
		skipOrFail(t, "%s: no initdb found", need)
	}
	sort.Slice(inits, func(i, j int) bool { return pgVersion(inits[i]) > pgVersion(inits[j]) })
	c := &pgCluster{bin: filepath.Dir(inits[0])}
	if _, err := os.Stat(filepath.Join(c.bin, "pg_ctl")); err != nil {
		skipOrFail(t, "%s: %v", need, err)
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		skipOrFail(t, "%s: runuser not found", need)
	}
	if os.Geteuid() != 0 {
		skipOrFail(t, "%s: running as uid %d", need, os.Geteuid())
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		skipOrFail(t, "%s: %v", need, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)

	sweepStale(t, c.bin)
	// Not t.TempDir: its parent is private to root, and postgres must
	// reach the data directory.
	c.dir, err = os.MkdirTemp("", pgDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	// The driver's pid, for sweepStale: a driver killed before its cleanup
	// ran (go test -timeout, SIGKILL) leaves its cluster running.
	if err := os.WriteFile(filepath.Join(c.dir, driverPIDFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(c.dir) })
	if err := os.Chown(c.dir, uid, gid); err != nil {
		skipOrFail(t, "%s: chown %s: %v", need, c.dir, err)
	}
	if err := os.Chmod(c.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c.data = filepath.Join(c.dir, "data")
	if out, err := c.asPostgres(2*time.Minute, "initdb", "-D", c.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"); err != nil {
		skipOrFail(t, "%s: initdb as postgres failed: %v\n%s", need, err, out)
	}

	t.Cleanup(c.stop) // also if a start below times out with the server up
	// A free port may be taken between the probe and the start: try a few.
	for try := 0; ; try++ {
		c.port = freePort(t)
		out, err := c.pgCtl(2*time.Minute, "start")
		if err == nil {
			break
		}
		if try == 4 {
			t.Fatalf("starting the private PostgreSQL cluster: %v\n%s\n%s", err, out, c.log())
		}
	}
	return c
}

const (
	pgDirPrefix   = "payonce-crashsuite-pg-"
	driverPIDFile = "driver.pid"
)

// sweepStale stops and removes the private clusters of earlier runs whose
// driver is gone without cleaning up.
func sweepStale(t *testing.T, bin string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), pgDirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, driverPIDFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil {
			continue // unreadable, or its driver still runs
		}
		old := &pgCluster{bin: bin, dir: dir, data: filepath.Join(dir, "data")}
		old.stop()
		_ = os.RemoveAll(dir)
		t.Logf("removed the private PostgreSQL cluster %s left by driver pid %d", dir, pid)
	}
}

func pgVersion(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// URL is the cluster's connection URL (database postgres).
func (c *pgCluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// options are the server's command-line options: this port, the socket in
// the private directory, TCP on 127.0.0.1 only, and no durability (a test
// cluster: a crash of the machine loses nothing worth keeping, and the
// shared disk is spared).
func (c *pgCluster) options() string {
	return fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "+
		"-c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB", c.port, c.dir)
}

func (c *pgCluster) pgCtl(timeout time.Duration, action string, extra ...string) (string, error) {
	// -l always: a server started (or restarted) without a log file writes
	// to pg_ctl's output, and holds our pipe open for as long as it runs.
	args := append([]string{"pg_ctl", "-D", c.data, "-l", filepath.Join(c.dir, "log"), "-w",
		"-t", strconv.Itoa(int(timeout / time.Second)), "-o", c.options()}, extra...)
	return c.asPostgres(timeout+10*time.Second, append(args, action)...)
}

// Restart stops the server (fast: sessions are disconnected), keeps it
// down while down() runs, and starts it again.
func (c *pgCluster) Restart(down func()) error {
	if out, err := c.pgCtl(2*time.Minute, "stop", "-m", "fast"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s\n%s", err, out, c.log())
	}
	down()
	if out, err := c.pgCtl(2*time.Minute, "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, c.log())
	}
	return nil
}

// stop stops the server at once; if pg_ctl cannot, it kills the postmaster
// named in postmaster.pid.
func (c *pgCluster) stop() {
	if _, err := os.Stat(filepath.Join(c.data, "postmaster.pid")); err != nil {
		return // not running
	}
	if _, err := c.pgCtl(30*time.Second, "stop", "-m", "immediate"); err == nil {
		return
	}
	b, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])); err == nil && pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// asPostgres runs a binary of the cluster's version as user postgres.
func (c *pgCluster) asPostgres(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, args[0])}, args[1:]...)...)
	cmd.Dir = c.dir
	if c.dir == "" {
		cmd.Dir = os.TempDir()
	}
	// pg_ctl's server outlives the command: it must not hold our pipes.
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *pgCluster) log() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
