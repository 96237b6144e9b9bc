// Package childproc runs child processes for the project's process-level
// tests and for the bench program: the crash tests and the crash suite
// (internal/crashsuite), the reconciler proof tests of the root package,
// and bench's fake Stripe. It starts a command with extra environment,
// collects its output, waits for a line with a given prefix, kills it with
// SIGKILL or stops it with SIGTERM, and describes it for a failure message.
// It also reads the memory figures a child reports about itself (mem.go).
//
// It does not import testing: every function returns an error, which a
// test wraps with require or t.Fatal. Only tests and bench import it; the
// shipped binary (cmd/payonce) never does.
package childproc
