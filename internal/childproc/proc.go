package childproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Spec says how to start a child.
type Spec struct {
	// Name names the child in Describe and in errors.
	Name string
	// Path is the program; empty runs this process's own executable again
	// (os.Executable), as a test binary re-executing itself does.
	Path string
	// Args are the program's arguments, e.g. "-test.run=^$" for a test
	// binary that must run no test.
	Args []string
	// Env is added to this process's environment.
	Env []string
	// Timeout, when set, kills the child that long after it started.
	Timeout time.Duration
	// StderrLimit keeps the head and tail of stderr only (see NewOutput);
	// 0 keeps everything.
	StderrLimit int
	// Stderr, when set, receives a copy of the child's stderr as it comes.
	Stderr io.Writer
}

// Proc is one running (or exited) child. Its stdin is a pipe: a child that
// watches its stdin ends when the parent closes it or dies.
type Proc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *Output
	stderr *Output
	done   chan struct{} // closed once the child has exited and been waited for
	// stopped is set before the parent kills or stops the child on purpose.
	stopped bool
	waitErr error // valid after done
}

// killWait bounds the wait for a child to die of SIGKILL.
const killWait = 30 * time.Second

// Start starts the child. ctx ending kills it (as exec.CommandContext
// does). The caller ends it with Stop when done (a test: in t.Cleanup).
func Start(ctx context.Context, s Spec) (*Proc, error) {
	path := s.Path
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		path = exe
	}
	cancel := context.CancelFunc(func() {})
	if s.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
	}
	p := &Proc{name: s.Name, stdout: NewOutput(0), stderr: NewOutput(s.StderrLimit), done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, path, s.Args...)
	p.cmd.Env = append(os.Environ(), s.Env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if s.Stderr != nil {
		p.cmd.Stderr = io.MultiWriter(p.stderr, s.Stderr)
	}
	p.cmd.WaitDelay = 10 * time.Second
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		cancel()
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting %s: %w", s.Name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		cancel()
		close(p.done)
	}()
	return p, nil
}

// Name is the Spec's Name.
func (p *Proc) Name() string { return p.name }

// Stdout is what the child wrote to stdout.
func (p *Proc) Stdout() *Output { return p.stdout }

// Stderr is what the child wrote to stderr (head and tail with a
// StderrLimit).
func (p *Proc) Stderr() *Output { return p.stderr }

// Exited reports whether the child has exited and been waited for.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the error of the child's exit (nil for status 0), once Exited.
func (p *Proc) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.waitErr
}

// ExitCode is the child's exit code once Exited, -1 if a signal ended it
// or it still runs.
func (p *Proc) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Describe names the child, its pid and state, and shows its output, for a
// failure message.
func (p *Proc) Describe() string {
	state := "running"
	if p.Exited() {
		state = fmt.Sprintf("exited: %v", p.waitErr)
	}
	return fmt.Sprintf("%s (pid %d, %s)\n--- stdout:\n%s\n--- stderr:\n%s", p.name, p.cmd.Process.Pid, state, p.stdout.String(), p.stderr.String())
}

// WriteLine writes line and a newline to the child's stdin.
func (p *Proc) WriteLine(line string) error {
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		return fmt.Errorf("writing to %s: %w", p.name, err)
	}
	return nil
}

// CloseStdin closes the child's stdin: a child reading it sees its end.
func (p *Proc) CloseStdin() error { return p.stdin.Close() }

// WaitLine waits for a stdout line starting with prefix and returns it. It
// fails if the child exits first or timeout passes.
func (p *Proc) WaitLine(prefix string, timeout time.Duration) (string, error) {
	return p.waitLineAfter(0, prefix, timeout)
}

// Ask writes line to the child's stdin and waits for the first stdout line
// starting with prefix that the child printed after it was asked.
func (p *Proc) Ask(line, prefix string, timeout time.Duration) (string, error) {
	n := len(p.stdout.Lines())
	if err := p.WriteLine(line); err != nil {
		return "", err
	}
	return p.waitLineAfter(n, prefix, timeout)
}

func (p *Proc) waitLineAfter(n int, prefix string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		if lines := p.stdout.Lines(); len(lines) > n {
			if l, ok := firstWithPrefix(lines[n:], prefix); ok {
				return l, nil
			}
		}
		if p.Exited() {
			return "", fmt.Errorf("%s exited before printing %s\n%s", p.name, prefix, p.Describe())
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("timed out waiting for %s from %s", prefix, p.Describe())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Wait waits for the child to exit on its own and returns Err; it fails if
// timeout passes first (the child still runs).
func (p *Proc) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.waitErr
	case <-time.After(timeout):
		return fmt.Errorf("timed out waiting for %s to exit\n%s", p.name, p.Describe())
	}
}

// Kill sends SIGKILL and waits until the child is gone. It fails only if
// the child does not go away; a child that had already exited is not an
// error (check Exited first where that matters).
func (p *Proc) Kill() error {
	p.stopped = true
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("%s did not die of SIGKILL", p.Describe())
	}
}

// Terminate asks the child to stop (SIGTERM) and waits for a clean exit
// (status 0); after timeout it is killed and an error returned. A child
// that has exited already is left alone.
func (p *Proc) Terminate(timeout time.Duration) error {
	if p.Exited() {
		return nil
	}
	p.stopped = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.cmd.ProcessState.ExitCode() != 0 {
			return fmt.Errorf("%s stopped with %v", p.Describe(), p.waitErr)
		}
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %v of SIGTERM", p.Describe(), timeout)
	}
}

// Stop kills the child if it still runs and waits for it: the cleanup at
// the end of a test or a run.
func (p *Proc) Stop() {
	if !p.Exited() {
		p.stopped = true
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// UnexpectedExit reports a child that exited although nobody stopped it.
func (p *Proc) UnexpectedExit() error {
	if p.Exited() && !p.stopped {
		return errors.New(p.Describe() + " exited on its own")
	}
	return nil
}
