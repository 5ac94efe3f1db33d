package queueimpl

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuegen/queuegen/queue"
)

// TestFailures pairs errors with the failures column as each engine
// writes it: by the index each object names, errors from before the
// column with no time, a panic's stack split off, and a column that is
// NULL, JSON null or not such an array leaving every time unknown. It
// catches pairing by position (errors from before the column shift every
// time onto the wrong error) and a parse that refuses an engine's times.
func TestFailures(t *testing.T) {
	stack := "goroutine 7 [running]:\nmain.handler()\n\t/app/main.go:12 +0x1d\n"
	errs := []string{"from before", "smtp: 451", "panic: boom\n" + stack, "timeout"}
	doc := `[{"at": "2026-11-26T10:00:00.5+01:00", "attempt": 2, "error": 1},
	         {"at": "2026-11-26T09:01:00.123456Z", "attempt": 3, "error": 2},
	         {"at": "2026-11-26T09:02:00.1234567Z", "attempt": 4, "error": 3},
	         {"at": "2026-11-26T09:03:00Z", "attempt": 9, "error": 7}]`
	got := Failures(errs, []byte(doc))
	want := []queue.Failure{
		{Error: "from before"},
		{At: time.Date(2026, 11, 26, 9, 0, 0, 500e6, time.UTC), Attempt: 2, Error: "smtp: 451"},
		{At: time.Date(2026, 11, 26, 9, 1, 0, 123456e3, time.UTC), Attempt: 3, Error: "panic: boom", Stack: stack},
		{At: time.Date(2026, 11, 26, 9, 2, 0, 123456700, time.UTC), Attempt: 4, Error: "timeout"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d failures, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].At.Equal(want[i].At) || got[i].Attempt != want[i].Attempt || got[i].Error != want[i].Error || got[i].Stack != want[i].Stack {
			t.Errorf("failure %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, doc := range []string{"", "null", "[]", "{}", `"x"`, "[1, 2]"} {
		for i, f := range Failures(errs[:2], []byte(doc)) {
			if !f.At.IsZero() || f.Attempt != 0 || f.Error != errs[i] {
				t.Errorf("failures %q: %+v", doc, f)
			}
		}
	}
	if f := Failures(nil, []byte(doc)); len(f) != 0 {
		t.Errorf("no errors: %+v", f)
	}
}

// TestPanicTextCapped: the text kept for a panic, value and stack, is cut
// to 16 KiB as every error's, and its stack still splits off.
func TestPanicTextCapped(t *testing.T) {
	text := ErrorText(errors.New("panic: boom\ngoroutine 1 [running]:\n" + strings.Repeat("frame\n", 10000)))
	if len(text) > MaxErrorText {
		t.Errorf("%d bytes kept, want at most %d", len(text), MaxErrorText)
	}
	f := Failures([]string{text}, nil)
	if f[0].Error != "panic: boom" || !strings.HasPrefix(f[0].Stack, "goroutine 1 [running]:") || !strings.HasSuffix(f[0].Stack, "more bytes)") {
		t.Errorf("%q / %q…", f[0].Error, f[0].Stack[:40])
	}
}
