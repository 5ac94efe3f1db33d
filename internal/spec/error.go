package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a spec, at a position, under a key.
type Error struct {
	File   string
	Line   int
	Column int
	// Key is the dotted path of the offending key, e.g.
	// "queues[email].backoff.min".
	Key string
	Msg string
}

// Error formats the problem as file:line:col: key: message.
func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Column, e.Key, e.Msg)
}

// Errors is every problem found in a spec, in file order.
type Errors []*Error

// Error is one problem per line, in file order.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Column < es[j].Column
	})
	return es
}
