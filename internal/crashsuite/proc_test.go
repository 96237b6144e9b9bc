package crashsuite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ledgerErrorMark is in every log line about a failed ledger call (the
// ledgerpg package names itself in its errors).
const ledgerErrorMark = "ledgerpg: "

// child is one child process (one incarnation of the fake or a worker).
type child struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *output
	stderr *output
	done   chan struct{} // closed once the process has exited and been waited for
	// killed is set before the driver kills or stops the process on purpose.
	killed  bool
	waitErr error // valid after done
}

// output collects what a child writes: every line of stdout, and the head
// and tail of stderr (a race report or a panic is kept whatever follows).
type output struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	head  []byte
	limit int // 0: keep everything
	// marks counts the lines holding each marker given to count, over
	// everything written (not only what is kept); partial lines at a write
	// boundary may be missed, which a statistic tolerates.
	marks map[string]int
}

// count returns how many written lines held mark; the first call starts
// counting, so call it once before the child starts writing.
func (o *output) count(mark string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.marks == nil {
		o.marks = map[string]int{}
	}
	if _, ok := o.marks[mark]; !ok {
		o.marks[mark] = 0
	}
	return o.marks[mark]
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.limit > 0 && len(o.head) < o.limit {
		n := min(len(p), o.limit-len(o.head))
		o.head = append(o.head, p[:n]...)
	}
	for m := range o.marks {
		o.marks[m] += bytes.Count(p, []byte(m))
	}
	o.buf.Write(p)
	if o.limit > 0 && o.buf.Len() > 2*o.limit {
		tail := append([]byte(nil), o.buf.Bytes()[o.buf.Len()-o.limit:]...)
		o.buf.Reset()
		o.buf.Write(tail)
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.limit == 0 || len(o.head) < o.limit {
		return o.buf.String()
	}
	return string(o.head) + "\n[...]\n" + o.buf.String()
}

// line returns the first complete stdout line starting with prefix.
func (o *output) line(prefix string) (string, bool) {
	s := o.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		for _, l := range strings.Split(s[:i], "\n") {
			if strings.HasPrefix(l, prefix) {
				return l, true
			}
		}
	}
	return "", false
}

// startChild starts the test binary in mode with cfg. The process is
// killed when the test ends if it still runs; its stdin is a pipe the
// child watches, so that it also ends if the driver dies.
func startChild(t *testing.T, name, mode string, cfg childConfig) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &child{name: name, stdout: &output{}, stderr: &output{limit: 64 << 10}, done: make(chan struct{})}
	c.stderr.count(ledgerErrorMark)
	c.stdout.count(markerCallRetry)
	c.cmd = exec.Command(exe, "-test.run=^$")
	c.cmd.Env = append(os.Environ(), envMode+"="+mode, envConfig+"="+string(js))
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	c.cmd.WaitDelay = 10 * time.Second
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		if !c.exited() {
			c.killed = true
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *child) describe() string {
	state := "running"
	if c.exited() {
		state = fmt.Sprintf("exited: %v", c.waitErr)
	}
	return fmt.Sprintf("%s (pid %d, %s)\n--- stdout:\n%s\n--- stderr:\n%s", c.name, c.cmd.Process.Pid, state, c.stdout.String(), c.stderr.String())
}

// kill sends SIGKILL and waits until the process is gone.
func (c *child) kill(t *testing.T) {
	t.Helper()
	c.killed = true
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not die of SIGKILL", c.describe())
	}
}

// terminate asks the process to stop (SIGTERM) and waits for a clean exit;
// after timeout it is killed and the test fails.
func (c *child) terminate(t *testing.T, timeout time.Duration) {
	t.Helper()
	if c.exited() {
		return
	}
	c.killed = true
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		if c.cmd.ProcessState.ExitCode() != exitOK {
			t.Errorf("%s stopped with %v", c.describe(), c.waitErr)
		}
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Errorf("%s did not stop within %v of SIGTERM", c.describe(), timeout)
	}
}

// unexpectedExit reports a child that exited although nobody stopped it.
func (c *child) unexpectedExit() error {
	if c.exited() && !c.killed {
		return fmt.Errorf("%s exited on its own", c.describe())
	}
	return nil
}

// waitLine waits for a stdout line starting with prefix.
func (c *child) waitLine(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if l, ok := c.stdout.line(prefix); ok {
			return l
		}
		if c.exited() {
			t.Fatalf("%s exited before printing %s", c.describe(), prefix)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s from %s", prefix, c.describe())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
