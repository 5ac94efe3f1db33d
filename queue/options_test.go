package queue

import (
	"errors"
	"testing"
)

func TestNotHeldError(t *testing.T) {
	err := error(&NotHeldError{Queue: "email", ID: 7, Attempt: 2})
	if !errors.Is(err, ErrNotHeld) || err.Error() != "queue email: job 7 attempt 2 is no longer held by this caller" {
		t.Errorf("NotHeldError = %v", err)
	}
}
