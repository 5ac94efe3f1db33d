// Package textdiff writes the difference between two texts as a unified
// diff, the format of `git diff` and `diff -u`: hunks of changed lines
// with three lines of context, headed by the line ranges they cover.
package textdiff

import (
	"fmt"
	"strings"
)

// Context is how many unchanged lines surround each change.
const Context = 3

// Unified returns the unified diff that turns a into b, with file names
// from and to in its header, or "" when they are equal.
func Unified(from, to, a, b string) string {
	if a == b {
		return ""
	}
	x, y := lines(a), lines(b)
	ops := diff(x, y)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	for _, h := range hunks(ops) {
		var ac, bc int
		for _, o := range h {
			if o.kind != '+' {
				ac++
			}
			if o.kind != '-' {
				bc++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", span(h[0].ai, ac), span(h[0].bi, bc))
		for _, o := range h {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
	}
	return out.String()
}

// span is a hunk header's range: start,count, 1-based; an empty range
// starts at the line before it.
func span(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if count == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// op is one line of the edit script: ' ' kept, '-' removed, '+' added;
// ai and bi are its 0-based positions in a and b (of the next line, for
// the side it is not on).
type op struct {
	kind   byte
	text   string
	ai, bi int
}

// diff is the shortest edit script from x to y (longest common
// subsequence by dynamic programming over the lines that differ; the
// common prefix and suffix are set aside first, so generated files that
// differ in a few places cost little).
func diff(x, y []string) []op {
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	mx, my := x[pre:len(x)-suf], y[pre:len(y)-suf]
	n, m := len(mx), len(my)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if mx[i] == my[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	for i := range pre {
		ops = append(ops, op{' ', x[i], i, i})
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && mx[i] == my[j]:
			ops = append(ops, op{' ', mx[i], pre + i, pre + j})
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, op{'+', my[j], pre + i, pre + j})
			j++
		default:
			ops = append(ops, op{'-', mx[i], pre + i, pre + j})
			i++
		}
	}
	for k := range suf {
		ops = append(ops, op{' ', x[len(x)-suf+k], len(x) - suf + k, len(y) - suf + k})
	}
	return ops
}

// hunks groups the changes with their context; changes closer than twice
// the context share a hunk.
func hunks(ops []op) [][]op {
	var out [][]op
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-Context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*Context {
				end = min(len(ops), end+Context)
				break
			}
			end = run
		}
		out = append(out, ops[start:end])
		i = end
	}
	return out
}
