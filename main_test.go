package payonce_test

import (
	"os"
	"testing"
)

// TestMain runs the tests, except in a child process started by a
// reconciler proof test or the drain benchmark (reconcile_child_test.go):
// there PAYONCE_RECONCILE_CHILD is set, and the test binary runs one
// Reconciler until idle and reports what it did. (The crash tests and their
// child processes live in internal/crashsuite.)
func TestMain(m *testing.M) {
	if os.Getenv(reconEnvChild) != "" {
		os.Exit(reconcileChild())
	}
	os.Exit(m.Run())
}
