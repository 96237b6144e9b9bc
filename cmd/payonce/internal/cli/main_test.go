package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/cmd/payonce/internal/cli"
	"github.com/payonce/payonce/internal/testkit"
)

// raceEnabled is set by race_test.go when the tests run with -race; the
// binary is then built with -race too.
var raceEnabled bool

// binary is the payonce binary TestMain builds once.
var binary string

// envCoverDir, when set, builds the binary with coverage instrumentation of
// internal/cli and makes every run write its counters there (merge them with
// "go tool covdata").
const envCoverDir = "PAYONCE_CLI_COVERDIR"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "payonce-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "payonce")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	if os.Getenv(envCoverDir) != "" {
		args = append(args, "-cover", "-coverpkg=github.com/payonce/payonce/cmd/payonce/internal/cli,github.com/payonce/payonce/cmd/payonce")
	}
	cmd := exec.Command("go", append(args, "github.com/payonce/payonce/cmd/payonce")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building the payonce binary: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary (or of Main) printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// jsonObject decodes stdout as one JSON object.
func (r result) jsonObject(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &m), "stdout is not one JSON object:\n%s", r)
	return m
}

// jsonLines decodes stdout as JSON lines.
func (r result) jsonLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "line is not a JSON object: %q\n%s", line, r)
		out = append(out, m)
	}
	return out
}

// scrubbedEnv is the process environment without the variables payonce
// reads, so that the developer's own settings never leak into a test, with
// env added.
func scrubbedEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PAYONCE_") && name != envCoverDir || name == "STRIPE_API_KEY" ||
			strings.HasPrefix(name, "YOOKASSA_") || strings.HasPrefix(name, "CHECKOUT_") {
			continue
		}
		out = append(out, kv)
	}
	if dir := os.Getenv(envCoverDir); dir != "" {
		out = append(out, "GOCOVERDIR="+dir)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// runBinary runs the payonce binary as a real process with env added to a
// scrubbed environment.
func runBinary(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = scrubbedEnv(env)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "running payonce %v: %v", args, err)
		code = ee.ExitCode()
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// runningBinary is the payonce binary started by startBinary.
type runningBinary struct {
	cmd *exec.Cmd
	// first is the first line it printed to stderr.
	first string
	// rest receives the rest of its stderr once the stream closes; it is
	// read as it comes, so that a long run never blocks on a full pipe.
	rest chan string
}

// startBinary starts the payonce binary as a real process with env added
// to a scrubbed environment (killed when the test ends, or after a
// minute) and waits for its first line on stderr.
func startBinary(t *testing.T, env map[string]string, args ...string) *runningBinary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = scrubbedEnv(env)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stderr)
	require.True(t, sc.Scan(), "no output from payonce %v", args)
	b := &runningBinary{cmd: cmd, first: sc.Text(), rest: make(chan string, 1)}
	go func() {
		var rest strings.Builder
		for sc.Scan() {
			rest.WriteString(sc.Text() + "\n")
		}
		b.rest <- rest.String()
	}()
	return b
}

// stop sends sig, waits for a clean exit (status 0) and returns what the
// process printed to stderr after its first line.
func (b *runningBinary) stop(t *testing.T, sig syscall.Signal) string {
	t.Helper()
	require.NoError(t, b.cmd.Process.Signal(sig))
	rest := <-b.rest
	require.NoError(t, b.cmd.Wait(), "stderr after the first line:\n%s", rest)
	return rest
}

// runMain runs the command line in this process through cli.Main.
func runMain(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := cli.Main(ctx, args, func(k string) string { return env[k] }, &out, &errb)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// target is one ledger a test runs against.
type target struct {
	name   string
	ledger string // --ledger value
	schema string // --schema value, "" for SQLite
}

// env returns the environment naming the target's ledger.
func (tg target) env() map[string]string {
	env := map[string]string{"PAYONCE_LEDGER": tg.ledger}
	if tg.schema != "" {
		env["PAYONCE_SCHEMA"] = tg.schema
	}
	return env
}

func sqliteTarget(t *testing.T) target {
	return target{name: "sqlite", ledger: "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")}
}

// pgTarget returns a fresh schema in the test database, or skips.
func pgTarget(t *testing.T) target {
	pool := testkit.NewPool(t)
	return target{name: "postgres", ledger: testkit.URL(t), schema: testkit.NewSchema(t, pool)}
}

// eachLedger runs fn against SQLite and PostgreSQL (skipped without a test
// database unless it is required).
func eachLedger(t *testing.T, fn func(t *testing.T, tg target)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, sqliteTarget(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, pgTarget(t))
	})
}

// with returns env plus the given pairs.
func with(env map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(env)+len(kv)/2)
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// usageCase is a command line (args, with env) that must exit 2 naming
// every want on stderr.
type usageCase struct {
	name string
	env  map[string]string
	args []string
	want []string
}

// requireUsageErrors runs each case in parallel with run, which checks
// what the case's own test adds, and checks that it exits 2 with every want
// on stderr.
func requireUsageErrors(t *testing.T, cases []usageCase, run func(*testing.T, usageCase) result) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, tc)
			require.Equal(t, 2, r.code, "%s", r)
			for _, w := range tc.want {
				require.Contains(t, r.stderr, w, "%s", r)
			}
		})
	}
}
