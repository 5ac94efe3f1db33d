package model

import (
	"strconv"
	"time"

	"github.com/queuegen/queuegen/internal/spec"
)

// Periodic is a job pushed on a schedule with a fixed payload.
type Periodic struct {
	Name string
	// Every or Cron: exactly one is set.
	Every time.Duration
	Cron  string
	// JSON is the payload document of a queue whose payload is an
	// application's Go type; it is decoded when the scheduler starts.
	JSON string
	// Values are the fixed fields of a payload struct queuegen declares,
	// in field order; fields left out get their zero value.
	Values []Value
}

// Value is the fixed value of one payload field.
type Value struct {
	Field *Field
	// One of these is set, by the field's type: String for string
	// fields, Int for integers, Float for floating point, Bool for bool.
	String string
	Int    int64
	Float  float64
	Bool   bool
}

// periodic builds a periodic job; the spec has checked its values against
// the payload's fields.
func periodic(q *Queue, pj *spec.Periodic) *Periodic {
	out := &Periodic{Name: pj.Name, Every: pj.Every, Cron: pj.Cron}
	if !q.Payload.Declare {
		out.JSON = pj.JSON
		return out
	}
	for _, f := range q.Payload.Fields {
		raw, ok := pj.Payload[f.Name]
		if !ok {
			continue
		}
		v := Value{Field: f}
		switch f.Type.Elem().Ident.Name {
		case "string":
			v.String = raw
		case "bool":
			v.Bool = raw == "true"
		case "float32", "float64":
			v.Float, _ = strconv.ParseFloat(raw, 64)
		default:
			v.Int, _ = strconv.ParseInt(raw, 10, 64)
		}
		out.Values = append(out.Values, v)
	}
	return out
}
