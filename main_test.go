package payonce_test

import (
	"os"
	"testing"
)

// TestMain runs the tests, except in a child process started by a crash
// test (crash_test.go): there PAYONCE_CRASH_CHILD is set, and the test
// binary performs one charge as a separate process instead, so that the
// parent can kill it with SIGKILL at a chosen moment.
func TestMain(m *testing.M) {
	if os.Getenv(crashEnvChild) != "" {
		os.Exit(crashChild())
	}
	os.Exit(m.Run())
}
