package queue

import (
	"strings"
	"testing"
)

func explode() { panic("boom: nil map") }

// TestPanicKeepsStack: a panicking handler's error holds the panic's value
// and the stack of the goroutine that panicked, and SplitStack parts them
// again, as the job page and jobs --json show them. It catches a recover
// that drops the stack, or one whose text SplitStack cannot part.
func TestPanicKeepsStack(t *testing.T) {
	err := recovered(func() error { explode(); return nil })
	if err == nil {
		t.Fatal("no error from a panic")
	}
	msg, stack := SplitStack(err.Error())
	if msg != "panic: boom: nil map" {
		t.Errorf("message %q", msg)
	}
	if !strings.HasPrefix(stack, "goroutine ") || !strings.Contains(stack, "queue.explode") {
		t.Errorf("stack %q: want the panicking goroutine's, through explode", stack)
	}
	for _, text := range []string{"smtp: 550", "panic: no stack here", "panicked\ngoroutine 1 [running]:", ""} {
		if m, s := SplitStack(text); m != text || s != "" {
			t.Errorf("SplitStack(%q) = %q, %q: want all message", text, m, s)
		}
	}
}
