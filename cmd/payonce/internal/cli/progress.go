package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress shows how far a phase of a command is (the demo's phases,
// reconcile's passes): a line redrawn in place on a terminal, plain lines
// otherwise (one per finished phase, and the notes given to report).
type progress struct {
	w   io.Writer
	tty bool
	// plainRedraw redraws with a carriage return and spaces instead of the
	// ANSI erase-line sequence, for NO_COLOR (no escape sequences at all).
	plainRedraw bool
	drawn       int // length of the line last drawn, for plainRedraw

	mu      sync.Mutex
	label   string
	count   int
	total   int
	note    string
	due     time.Time // shown as a countdown after the note
	started time.Time
	ticker  *time.Ticker
	quit    chan struct{}
	wg      sync.WaitGroup
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, tty: isTerminal(w)}
}

// App.newProgress is newProgress honouring the environment: TERM=dumb (a
// terminal that cannot move the cursor) gets plain lines, and NO_COLOR (any
// non-empty value, https://no-color.org) a line redrawn without escape
// sequences.
func (a *App) newProgress(w io.Writer) *progress {
	p := newProgress(w)
	if a.Env("TERM") == "dumb" {
		p.tty = false
	}
	p.plainRedraw = a.Env("NO_COLOR") != ""
	return p
}

// start begins a phase of total steps (0: no bar, only the note).
func (p *progress) start(label string, total int) {
	p.stop()
	p.mu.Lock()
	p.label, p.count, p.total, p.note, p.due, p.started = label, 0, total, "", time.Time{}, time.Now()
	p.mu.Unlock()
	if !p.tty {
		return
	}
	p.ticker = time.NewTicker(100 * time.Millisecond)
	p.quit = make(chan struct{})
	p.wg.Add(1)
	go func(t *time.Ticker, quit chan struct{}) {
		defer p.wg.Done()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				p.draw()
			}
		}
	}(p.ticker, p.quit)
}

func (p *progress) add(n int) {
	p.mu.Lock()
	p.count += n
	p.mu.Unlock()
}

// status sets the note shown after the bar, with a countdown to due when
// it is set.
func (p *progress) status(note string, due time.Time) {
	p.mu.Lock()
	p.note, p.due = note, due
	p.mu.Unlock()
}

// report is status on a terminal; elsewhere, where nothing is redrawn, it
// prints the note (and when due is) as a plain line of its own.
func (p *progress) report(note string, due time.Time) {
	if p.tty {
		p.status(note, due)
		return
	}
	if !due.IsZero() {
		note += fmt.Sprintf(", next check in %s", max(time.Until(due), 0).Round(100*time.Millisecond))
	}
	fmt.Fprintf(p.w, "payonce: %s\n", note)
}

func (p *progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redraw(p.line())
}

// redraw replaces the line on the terminal with line ("" clears it).
// Called with mu held.
func (p *progress) redraw(line string) {
	if !p.plainRedraw {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	pad := max(p.drawn-len(line), 0)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
	if line == "" {
		fmt.Fprint(p.w, "\r")
	}
	p.drawn = len(line)
}

func (p *progress) line() string {
	el := time.Since(p.started).Round(100 * time.Millisecond)
	note := p.note
	if !p.due.IsZero() {
		note += fmt.Sprintf(", next check in %s", max(time.Until(p.due), 0).Round(100*time.Millisecond))
	}
	if p.total == 0 {
		return fmt.Sprintf("%-12s %s  %s", p.label, el, note)
	}
	const width = 30
	filled := min(width, p.count*width/p.total)
	bar := strings.Repeat("=", filled)
	if filled < width {
		bar += ">" + strings.Repeat(" ", width-filled-1)
	}
	return fmt.Sprintf("%-12s [%s] %d/%d  %s  %s", p.label, bar, p.count, p.total, el, note)
}

// done ends the phase, leaving summary (if any) as a plain line.
func (p *progress) done(summary string) {
	p.stop()
	p.mu.Lock()
	el := time.Since(p.started).Round(100 * time.Millisecond)
	if p.tty {
		p.redraw("")
	}
	p.mu.Unlock()
	if summary != "" {
		fmt.Fprintf(p.w, "%s (%s)\n", summary, el)
	}
}

// stop ends the redrawing goroutine, if any.
func (p *progress) stop() {
	if p.quit == nil {
		return
	}
	close(p.quit)
	p.ticker.Stop()
	p.wg.Wait()
	p.quit, p.ticker = nil, nil
}
