package modgraph_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// libraryModule is the module this package belongs to.
const libraryModule = "github.com/payonce/payonce"

// forbidden are module path prefixes that must not appear in the library
// module's graph, each with the module that holds what needs it.
var forbidden = []struct{ prefix, home string }{
	{"github.com/riverqueue/", "riverpayonce, and cmd/payonce (the bench's River peer)"},
	{"github.com/prometheus/", "cmd/payonce (the reconciler's /metrics)"},
	{"go.opentelemetry.io/otel/sdk", "cmd/payonce (the metrics exporter and the SDK-backed telemetry tests)"},
	{"go.opentelemetry.io/otel/exporters/", "cmd/payonce (the metrics exporter)"},
	{"golang.org/x/term", "cmd/payonce (the demo's terminal output)"},
}

// goList runs the go command in this package's directory on the library
// module alone: GOWORK=off, so that the workspace's other modules (whose
// requirements are allowed to be larger) do not count, and GOPROXY=off, so
// that the test reads only the module cache the build already filled.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH (%v): it is needed to read the module graph", err)
	}
	cmd := exec.Command(gobin, append([]string{"list"}, args...)...)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// TestLibraryModuleGraph fails if River, Prometheus, the OpenTelemetry SDK
// or an exporter, or golang.org/x/term is in the library module's graph
// (go list -m all), where every importer of payonce would inherit it.
func TestLibraryModuleGraph(t *testing.T) {
	if got := strings.TrimSpace(goList(t, "-m")); got != libraryModule {
		t.Fatalf("go list -m = %q, want %q: the test must run in the library module", got, libraryModule)
	}
	mods := strings.Split(strings.TrimSpace(goList(t, "-m", "all")), "\n")
	t.Logf("%d modules in the library module's graph", len(mods))
	for _, line := range mods {
		path, _, _ := strings.Cut(line, " ")
		for _, f := range forbidden {
			if strings.HasPrefix(path, f.prefix) {
				t.Errorf("%s is in the library module's graph: it belongs in %s", line, f.home)
			}
		}
	}
}
