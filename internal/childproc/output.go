package childproc

import (
	"bytes"
	"strings"
	"sync"
)

// Output collects what a child writes to one stream. It is written by
// exec's copying goroutine while the parent reads it. With a Limit it keeps
// the head and the tail of the stream only (a race report or a panic is
// kept whatever follows); it can count the lines holding given marks over
// everything written.
type Output struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	head  []byte
	limit int // 0: keep everything
	// marks counts the lines holding each mark given to Count, over
	// everything written (not only what is kept); partial lines at a write
	// boundary may be missed, which a statistic tolerates.
	marks map[string]int
}

// NewOutput returns an Output that keeps everything, or, with limit > 0,
// the first limit bytes and about the last limit to 2*limit bytes.
func NewOutput(limit int) *Output { return &Output{limit: limit} }

// Count returns how many written lines held mark; the first call starts
// counting, so call it once before the child starts writing.
func (o *Output) Count(mark string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.marks == nil {
		o.marks = map[string]int{}
	}
	if _, ok := o.marks[mark]; !ok {
		o.marks[mark] = 0
	}
	return o.marks[mark]
}

// Write keeps p (see Output).
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.limit > 0 && len(o.head) < o.limit {
		n := min(len(p), o.limit-len(o.head))
		o.head = append(o.head, p[:n]...)
	}
	for m := range o.marks {
		o.marks[m] += bytes.Count(p, []byte(m))
	}
	o.buf.Write(p)
	if o.limit > 0 && o.buf.Len() > 2*o.limit {
		tail := append([]byte(nil), o.buf.Bytes()[o.buf.Len()-o.limit:]...)
		o.buf.Reset()
		o.buf.Write(tail)
	}
	return len(p), nil
}

// String returns what is kept: everything, or the head, a "[...]" line and
// the tail.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.limit == 0 || len(o.head) < o.limit {
		return o.buf.String()
	}
	return string(o.head) + "\n[...]\n" + o.buf.String()
}

// Lines returns the complete lines kept so far.
func (o *Output) Lines() []string {
	s := o.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

// Line returns the first complete line starting with prefix.
func (o *Output) Line(prefix string) (string, bool) {
	return firstWithPrefix(o.Lines(), prefix)
}

func firstWithPrefix(lines []string, prefix string) (string, bool) {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l, true
		}
	}
	return "", false
}
