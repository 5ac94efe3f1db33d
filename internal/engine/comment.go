package engine

import "strings"

// CommentWidth is the width generated SQL comments are wrapped to,
// counting the comment marker.
const CommentWidth = 78

// Comment wraps text into SQL comment lines ("-- …") of at most
// CommentWidth characters; a word longer than the width stays whole.
// Paragraphs in text are separated by "\n". No text, no lines.
func Comment(text string) []string {
	if text == "" {
		return nil
	}
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		lines = append(lines, Wrap("-- ", para, CommentWidth)...)
	}
	return lines
}

// Wrap splits text into lines of at most width characters, each starting
// with prefix.
func Wrap(prefix, text string, width int) []string {
	words := strings.Fields(text)
	if len(words) == 0 {
		return []string{strings.TrimRight(prefix, " ")}
	}
	var lines []string
	line := prefix + words[0]
	for _, w := range words[1:] {
		if len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = prefix + w
			continue
		}
		line += " " + w
	}
	return append(lines, line)
}

// FailuresComment is the comment of every engine's failures column, the
// bookkeeping beside errors: one object per error recorded since the
// column exists, appended by the statement that appends the error.
const FailuresComment = "when and at which attempt each error was recorded: {at, attempt, error (its index in errors)}; NULL before the first, and errors recorded before the column existed have none"

// NodesComment is what every engine's nodes table says of itself, after
// its name.
const NodesComment = " records the worker processes (nodes) of each queue: one row per node and queue, " +
	"written by the worker when it starts and on each node heartbeat, deleted when it stops " +
	"gracefully. A row whose heartbeat is older than a few of its intervals is a node that " +
	"died: the jobs its node id still leases come back when their leases expire."
