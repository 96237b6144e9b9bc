package crashsuite

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/payonce/payonce/internal/childproc"
)

// ledgerErrorMark is in every log line about a failed ledger call (the
// ledgerpg package names itself in its errors).
const ledgerErrorMark = "ledgerpg: "

// child is one child process (one incarnation of the fake, a worker, or a
// crash test's charging process), with the test's failures on top of
// childproc's errors.
type child struct{ *childproc.Proc }

// startChild starts the test binary in mode with cfg. The process is
// killed when the test ends if it still runs; its stdin is a pipe the
// child watches, so that it also ends if the driver dies.
func startChild(t *testing.T, name, mode string, cfg childConfig) *child {
	t.Helper()
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := childproc.Start(context.Background(), childproc.Spec{
		Name: name, Args: []string{"-test.run=^$"},
		Env:         []string{envMode + "=" + mode, envConfig + "=" + string(js)},
		StderrLimit: 64 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Counting starts before the child writes.
	p.Stderr().Count(ledgerErrorMark)
	p.Stdout().Count(markerCallRetry)
	t.Cleanup(p.Stop)
	return &child{p}
}

// kill sends SIGKILL and waits until the process is gone.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
}

// terminate asks the process to stop (SIGTERM) and waits for a clean exit;
// after timeout it is killed and the test fails.
func (c *child) terminate(t *testing.T, timeout time.Duration) {
	t.Helper()
	if err := c.Terminate(timeout); err != nil {
		t.Error(err)
	}
}

// waitLine waits for a stdout line starting with prefix.
func (c *child) waitLine(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	l, err := c.WaitLine(prefix, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
