package payonce_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMESnippetIsExample keeps the README's "library in N lines" snippet
// compiled: it must be exactly the body of ExampleClient_Charge, which go
// test compiles and runs.
func TestREADMESnippetIsExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_charge_test.go")
	if err != nil {
		t.Fatal(err)
	}

	_, section, ok := strings.Cut(string(readme), "\n## The library in ")
	if !ok {
		t.Fatal(`README.md has no "## The library in" section`)
	}
	_, snippet, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal("the README's library section has no go code block")
	}
	snippet, _, ok = strings.Cut(snippet, "```\n")
	if !ok {
		t.Fatal("the README's go code block is not closed")
	}

	_, body, ok := strings.Cut(string(src), "func ExampleClient_Charge() {\n")
	if !ok {
		t.Fatal("example_charge_test.go has no ExampleClient_Charge")
	}
	body, _, ok = strings.Cut(body, "\t// Output:")
	if !ok {
		t.Fatal("ExampleClient_Charge has no Output comment")
	}
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	want := strings.Join(lines, "\n")

	if snippet != want {
		t.Errorf("the README's snippet differs from ExampleClient_Charge's body; make it:\n%s", want)
	}
}
