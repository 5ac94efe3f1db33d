package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// progress reports long work as it goes: on a terminal by rewriting one
// line in place, elsewhere (a log, a CI job) with a plain line each time.
type progress struct {
	w        io.Writer
	terminal bool
	last     int // length of the line on the terminal
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

// line reports the current state.
func (p *progress) line(s string) {
	if !p.terminal {
		fmt.Fprintln(p.w, s)
		return
	}
	fmt.Fprintf(p.w, "\r%s%s", s, strings.Repeat(" ", max(0, p.last-len(s))))
	p.last = len(s)
}

// end leaves the terminal's line for what follows.
func (p *progress) end() {
	if p.terminal && p.last > 0 {
		fmt.Fprintln(p.w)
		p.last = 0
	}
}
