package childproc

import (
	"context"
	"strings"
	"testing"
	"time"
)

// sh starts a shell child running script.
func sh(t *testing.T, script string) *Proc {
	t.Helper()
	p, err := Start(context.Background(), Spec{Name: "sh", Path: "/bin/sh", Args: []string{"-c", script}, Env: []string{"CHILDPROC_X=42"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

func TestLinesAskAndExit(t *testing.T) {
	p := sh(t, `echo "READY $CHILDPROC_X"; read q; echo "ANSWER $q"; echo oops >&2; exit 3`)
	l, err := p.WaitLine("READY", 10*time.Second)
	if err != nil || l != "READY 42" {
		t.Fatalf("WaitLine: %q, %v", l, err)
	}
	if l, err = p.Ask("hello", "ANSWER", 10*time.Second); err != nil || l != "ANSWER hello" {
		t.Fatalf("Ask: %q, %v", l, err)
	}
	if err := p.Wait(10 * time.Second); err == nil || p.ExitCode() != 3 {
		t.Fatalf("Wait: %v, exit code %d", err, p.ExitCode())
	}
	if err := p.UnexpectedExit(); err == nil {
		t.Fatal("an exit nobody asked for is unexpected")
	}
	if !strings.Contains(p.Describe(), "oops") {
		t.Fatalf("Describe shows no stderr: %s", p.Describe())
	}
	if _, err := p.WaitLine("NEVER", time.Second); err == nil {
		t.Fatal("WaitLine after the exit must fail")
	}
}

func TestKillTerminateTimeout(t *testing.T) {
	p := sh(t, `trap 'exit 0' TERM; echo UP; while :; do sleep 0.05; done`)
	if _, err := p.WaitLine("UP", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Terminate(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.UnexpectedExit() != nil {
		t.Fatal("a terminated child did not exit on its own")
	}

	k := sh(t, `echo UP; exec sleep 60`)
	if _, err := k.WaitLine("UP", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := k.Wait(50 * time.Millisecond); err == nil || k.Exited() {
		t.Fatal("Wait must time out on a running child")
	}
	if err := k.Kill(); err != nil || k.ExitCode() != -1 {
		t.Fatalf("Kill: %v, exit code %d", err, k.ExitCode())
	}

	s, err := Start(context.Background(), Spec{Name: "timed", Path: "/bin/sh", Args: []string{"-c", "exec sleep 60"}, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(10 * time.Second); err == nil || s.ExitCode() != -1 {
		t.Fatalf("the Timeout kills the child: %v, exit code %d", err, s.ExitCode())
	}
}

func TestOutputLimitAndCount(t *testing.T) {
	o := NewOutput(8)
	o.Count("MARK")
	for range 10 {
		_, _ = o.Write([]byte("MARK 0123456789\n"))
	}
	if n := o.Count("MARK"); n != 10 {
		t.Fatalf("counted %d marks, want 10", n)
	}
	s := o.String()
	if !strings.HasPrefix(s, "MARK 012") || !strings.Contains(s, "[...]") || len(s) > 64 {
		t.Fatalf("kept %q", s)
	}
}
