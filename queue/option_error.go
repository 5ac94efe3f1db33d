package queue

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ErrOption is wrapped by every *OptionError: errors.Is(err, ErrOption)
// tells a bad option from a database error.
var ErrOption = errors.New("queue: option value out of range")

// OptionError is a worker, push, claim or maintainer option given a value
// outside its range. Nothing ran: a worker's Run and a Maintainer's Run
// return it before any statement, and Push, PushMany and Claim before
// theirs.
type OptionError struct {
	// Option is the option's name, as in "StatsInterval".
	Option string
	// Value is the value it was given.
	Value any
	// Want says what it accepts, as in "must be positive".
	Want string
}

// Error reads like "queue: StatsInterval(0s): must be positive".
func (e *OptionError) Error() string {
	var v string
	switch x := e.Value.(type) {
	case nil:
		v = "nil"
	case optionArgs:
		v = string(x)
	case string:
		v = fmt.Sprintf("%q", x)
	case *slog.Logger:
		if x == nil {
			v = "nil"
		} else {
			v = "logger"
		}
	case time.Time:
		v = x.Format(time.RFC3339Nano)
	default:
		v = fmt.Sprint(x)
	}
	return fmt.Sprintf("queue: %s(%s): %s", e.Option, v, e.Want)
}

// Unwrap returns ErrOption.
func (e *OptionError) Unwrap() error { return ErrOption }

func badOption(option string, value any, want string) error {
	return &OptionError{Option: option, Value: value, Want: want}
}

// positive refuses a duration of zero or less.
func positive(option string, d time.Duration) error {
	if d <= 0 {
		return badOption(option, d, "must be positive")
	}
	return nil
}

// notNegative refuses a negative duration.
func notNegative(option string, d time.Duration) error {
	if d < 0 {
		return badOption(option, d, "must not be negative")
	}
	return nil
}

// atLeastOne refuses a count below 1.
func atLeastOne(option string, n int) error {
	if n < 1 {
		return badOption(option, n, "must be at least 1")
	}
	return nil
}

// optionArgs is the arguments of an option that takes several, as written.
type optionArgs string
