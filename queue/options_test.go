package queue

import (
	"errors"
	"testing"
	"time"
)

func TestResolvePush(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := ResolvePush(25, []PushOption{RunAfter(at), Priority(3), UniqueKey("k"), MaxAttempts(4), Delay(time.Second), PushedAt(at)})
	if *o.RunAfter != at || o.Priority != 3 || *o.UniqueKey != "k" || o.MaxAttempts != 4 || o.Delay != time.Second || *o.Now != at {
		t.Errorf("ResolvePush = %+v", o)
	}
	if o := ResolvePush(25, []PushOption{MaxAttempts(0)}); o.MaxAttempts != 25 {
		t.Errorf("MaxAttempts(0) gave %d, want the queue default 25", o.MaxAttempts)
	}
	if err := ResolvePush(1, []PushOption{UniqueKey("k")}).CheckPushMany(); !errors.Is(err, ErrPushManyOption) {
		t.Errorf("CheckPushMany with a unique key = %v", err)
	}
	if err := ResolvePush(1, []PushOption{RunAfter(at), Priority(1)}).CheckPushMany(); err != nil {
		t.Errorf("CheckPushMany with RunAfter = %v", err)
	}
}

func TestResolveClaim(t *testing.T) {
	if o := ResolveClaim(time.Minute, nil); o.Lease != time.Minute || o.Now != nil {
		t.Errorf("default claim options = %+v", o)
	}
	now := time.Now()
	if o := ResolveClaim(time.Minute, []ClaimOption{LeaseFor(time.Hour), ClaimAt(now)}); o.Lease != time.Hour || !o.Now.Equal(now) {
		t.Errorf("claim options = %+v", o)
	}
}

func TestNotHeldError(t *testing.T) {
	err := error(&NotHeldError{Queue: "email", ID: 7, Attempt: 2})
	if !errors.Is(err, ErrNotHeld) || err.Error() != "queue email: job 7 attempt 2 is no longer held by this caller" {
		t.Errorf("NotHeldError = %v", err)
	}
	if ErrorText(nil) == "" || ErrorText(errors.New("x")) != "x" {
		t.Errorf("ErrorText")
	}
	if got := EmptyIfNil[int](nil); got == nil || len(got) != 0 {
		t.Errorf("EmptyIfNil(nil) = %#v", got)
	}
}
