package queueimpl

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/queuegen/queuegen/queue"
)

func TestResolvePush(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o, err := ResolvePush(25, []queue.PushOption{queue.RunAfter(at), queue.Priority(3), queue.UniqueKey("k"), queue.MaxAttempts(4), queue.Delay(time.Second), queue.PushedAt(at)})
	if err != nil || *o.RunAfter != at || o.Priority != 3 || *o.UniqueKey != "k" || o.MaxAttempts != 4 || o.Delay != time.Second || *o.Now != at {
		t.Errorf("ResolvePush = %+v, %v", o, err)
	}
	if o, err := ResolvePush(25, nil); err != nil || o.MaxAttempts != 25 {
		t.Errorf("no options gave %d, %v; want the queue default 25", o.MaxAttempts, err)
	}
	// MaxAttempts(0) used to fall back to the queue's default silently.
	if _, err := ResolvePush(25, []queue.PushOption{queue.MaxAttempts(0)}); !errors.Is(err, queue.ErrOption) || !strings.Contains(err.Error(), "MaxAttempts(0)") {
		t.Errorf("MaxAttempts(0) = %v, want an error naming it", err)
	}
	if o, _ := ResolvePush(1, []queue.PushOption{queue.UniqueKey("k")}); !errors.Is(CheckPushMany(o), queue.ErrPushManyOption) {
		t.Errorf("CheckPushMany with a unique key = %v", CheckPushMany(o))
	}
	if o, _ := ResolvePush(1, []queue.PushOption{queue.RunAfter(at), queue.Priority(1)}); CheckPushMany(o) != nil {
		t.Errorf("CheckPushMany with RunAfter = %v", CheckPushMany(o))
	}
}

func TestResolveClaim(t *testing.T) {
	if o, err := ResolveClaim(time.Minute, nil); err != nil || o.Lease != time.Minute || o.Now != nil {
		t.Errorf("default claim options = %+v, %v", o, err)
	}
	now := time.Now()
	if o, err := ResolveClaim(time.Minute, []queue.ClaimOption{queue.LeaseFor(time.Hour), queue.ClaimAt(now)}); err != nil || o.Lease != time.Hour || !o.Now.Equal(now) {
		t.Errorf("claim options = %+v, %v", o, err)
	}
	// LeaseFor(0) used to fall back to the queue's lease silently.
	if _, err := ResolveClaim(time.Minute, []queue.ClaimOption{queue.LeaseFor(0)}); !errors.Is(err, queue.ErrOption) {
		t.Errorf("LeaseFor(0) = %v, want an error", err)
	}
}

func TestValues(t *testing.T) {
	if ErrorText(nil) == "" || ErrorText(errors.New("x")) != "x" {
		t.Errorf("ErrorText")
	}
	// What a database would refuse (and with it the whole failure) is made
	// storable; a long text is cut on a character boundary, and says so.
	if got := ErrorText(errors.New("a\x00b\xffc")); got != `a\x00b`+"\uFFFD"+"c" {
		t.Errorf("ErrorText of NUL and invalid UTF-8 = %q", got)
	}
	long := ErrorText(errors.New(strings.Repeat("é", MaxErrorText)))
	if len(long) > MaxErrorText || !utf8.ValidString(long) || !strings.HasSuffix(long, " more bytes)") {
		t.Errorf("ErrorText of %d bytes = %d bytes, valid %v, ends %q", 2*MaxErrorText, len(long), utf8.ValidString(long), long[len(long)-30:])
	}
	if got := EmptyIfNil[int](nil); got == nil || len(got) != 0 {
		t.Errorf("EmptyIfNil(nil) = %#v", got)
	}
	if got := *Ptr(3); got != 3 {
		t.Errorf("Ptr(3) = %d", got)
	}
}

func TestMarshalJSONRefusesInvalidUTF8(t *testing.T) {
	type inner struct{ Tags []string }
	type payload struct {
		Name  string
		In    *inner
		Meta  map[string]string
		Bytes []byte
	}
	ok := payload{Name: "é", In: &inner{Tags: []string{"a"}}, Meta: map[string]string{"k": "v"}, Bytes: []byte{0xff}}
	if _, err := MarshalJSON(ok); err != nil {
		t.Errorf("valid payload refused: %v", err)
	}
	for name, p := range map[string]payload{
		"payload.Name":         {Name: "\xff"},
		"payload.In.Tags[1]":   {In: &inner{Tags: []string{"a", "b\xfe"}}},
		"payload.Meta[k]":      {Meta: map[string]string{"k": "\xc3"}},
		"payload.Meta (a key)": {Meta: map[string]string{"\xc3": "v"}},
	} {
		_, err := MarshalJSON(p)
		if err == nil || !strings.Contains(err.Error(), name+" holds invalid UTF-8") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestCheckLength counts each engine's unit: bytes of UTF-8 (PostgreSQL's
// index), characters (MySQL's VARCHAR), UTF-16 code units (SQL Server's
// NVARCHAR, where a character beyond the BMP takes two).
func TestCheckLength(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		v    *string
		max  int
		unit string
		n    int // 0: taken
	}{
		{nil, 1, "bytes", 0},
		{s("ab"), 2, "bytes", 0},
		{s("abc"), 2, "bytes", 3},
		{s("éé"), 3, "bytes", 4},
		{s("éé"), 2, "characters", 0},
		{s("ééé"), 2, "characters", 3},
		{s("😀é"), 2, "characters", 0},
		{s("😀é"), 2, "UTF-16 code units", 3},
		{s("éé"), 2, "UTF-16 code units", 0},
	}
	for _, c := range cases {
		err := CheckLength("unique key", c.v, c.max, c.unit, "the column")
		var tl *queue.TooLongError
		if c.n == 0 && err != nil || c.n != 0 && (!errors.As(err, &tl) || tl.Length != c.n || !errors.Is(err, queue.ErrTooLong)) {
			t.Errorf("%v at most %d %s: %v, want length %d", c.v, c.max, c.unit, err, c.n)
		}
	}
}
