package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode keeps test-only code out of the shipped binary:
// the demo imports package mocks, so mocks must not import httpmock (its
// responders live in mocks/mockhttp, imported by tests only) nor anything
// else that pulls in package testing.
func TestBinaryLinksNoTestCode(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH: cannot list the binary's dependencies")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "testing" || strings.Contains(dep, "httpmock") {
			t.Errorf("cmd/payonce links %s: test-only code reached the binary", dep)
		}
	}
}
