package mocks_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
)

// TestNoSDKImport keeps package mocks a fake of the providers, not a part
// of the SDK it tests: it imports neither the root package nor any of its
// subpackages but its own.
func TestNoSDKImport(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH: cannot list the package's dependencies")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/payonce/payonce/mocks").Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/payonce/payonce" ||
			strings.HasPrefix(dep, "github.com/payonce/payonce/") && !strings.HasPrefix(dep, "github.com/payonce/payonce/mocks") {
			t.Errorf("package mocks depends on %s", dep)
		}
	}
}

// The fakes accept request bodies as large as the largest answer the
// client reads, a limit each package defines for itself.
func TestMaxBodyBytesIsTheClients(t *testing.T) {
	t.Parallel()
	require.Equal(t, payonce.MaxBodyBytes, mocks.MaxBodyBytes)
}
