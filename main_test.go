package payonce_test

import (
	"os"
	"testing"
)

// TestMain runs the tests, except in a child process:
//   - started by a crash test (crash_test.go): there PAYONCE_CRASH_CHILD is
//     set, and the test binary performs one charge as a separate process
//     instead, so that the parent can kill it with SIGKILL at a chosen
//     moment;
//   - started by a reconciler proof test or the drain benchmark
//     (reconcile_child_test.go): there PAYONCE_RECONCILE_CHILD is set, and
//     the test binary runs one Reconciler until idle and reports what it did.
func TestMain(m *testing.M) {
	if os.Getenv(crashEnvChild) != "" {
		os.Exit(crashChild())
	}
	if os.Getenv(reconEnvChild) != "" {
		os.Exit(reconcileChild())
	}
	os.Exit(m.Run())
}
