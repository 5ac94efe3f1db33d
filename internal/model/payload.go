package model

import (
	"fmt"

	"github.com/queuegen/queuegen/internal/catalog"
	"github.com/queuegen/queuegen/internal/engine"
	"github.com/queuegen/queuegen/internal/gocode"
	"github.com/queuegen/queuegen/internal/spec"
)

// Payload is a queue's payload: its Go type, and the columns it is stored
// in (one per field, or one JSON document).
type Payload struct {
	// Type is the payload's Go type: a struct queuegen declares, or a
	// named type of the application's.
	Type gocode.Type
	// Declare is true when queuegen declares the struct, with Fields.
	Declare bool
	// Fields are the struct's fields: one per payload column (the base
	// table's extra columns first, for an inheriting queue), or one per
	// field of a JSON payload declared in the spec.
	Fields []*Field
	// JSON is the column holding a JSON payload; nil for column payloads.
	JSON *Field
	// Columns are the payload's own table columns (a JSON payload's one).
	Columns []*catalog.Column
	// Inputs are what Push writes: the payload columns with their fields,
	// or the JSON column.
	Inputs []*Field
}

// finite reports whether a field of Go type t is a float of an engine
// that stores no NaN or infinity.
func finite(eng engine.Engine, t gocode.Type) bool {
	_, ok := eng.(engine.FiniteFloats)
	e := t.Elem()
	return ok && !t.IsSlice() && (e.Is(gocode.Float32.Ident) || e.Is(gocode.Float64.Ident))
}

// Finite are the inputs pushes check for NaN and infinities
// (Field.Finite).
func (p *Payload) Finite() []*Field {
	var out []*Field
	for _, f := range p.Inputs {
		if f.Finite {
			out = append(out, f)
		}
	}
	return out
}

// Exact are the fields the reads of jobs select exactly too
// (Field.Exact).
func (p *Payload) Exact() []*Field {
	var out []*Field
	for _, f := range p.Fields {
		if f.Exact != "" {
			out = append(out, f)
		}
	}
	return out
}

// ExactName is the result column that reads the field's column exactly.
func (f *Field) ExactName() string { return "exact_" + f.Name }

// ExactGoName is sqlc's field of ExactName.
func (f *Field) ExactGoName() string { return spec.GoName(f.ExactName()) }

// ExactVar is a Go variable's name for the exact read.
func (f *Field) ExactVar() string { return "exact" + f.GoName }

// Defaulted are the inputs whose column has a default: a push that leaves
// such a field unset gets the default.
func (p *Payload) Defaulted() []*Field {
	var out []*Field
	for _, f := range p.Inputs {
		if f.Default != "" {
			out = append(out, f)
		}
	}
	return out
}

// Input is the input whose column is named column, or nil.
func (p *Payload) Input(column string) *Field {
	for _, f := range p.Inputs {
		if f.Name == column {
			return f
		}
	}
	return nil
}

// Field is a field of a payload struct, or the JSON column.
type Field struct {
	// Name is the column's name, or the JSON key.
	Name string
	// GoName is the struct field's name (and sqlc's for the column).
	GoName string
	// Type is the field's Go type.
	Type gocode.Type
	// Tag is a JSON payload field's struct tag, e.g. `json:"to"`.
	Tag string
	// EmptyIfNil is true for a NOT NULL column without a default whose Go
	// type is a slice: a nil slice would be sent as NULL, so an empty one
	// is sent instead.
	EmptyIfNil bool
	// NullJSONIfNil is true for a NOT NULL jsonb column without a default:
	// nil is sent as the JSON document null.
	NullJSONIfNil bool
	// Nullable is true when the column or JSON field may be NULL.
	Nullable bool
	// SQLType is the column's type as the engine writes it.
	SQLType string
	// ColumnType is the Go type of the column in sqlc's row (Type but
	// for a NOT NULL column with a default, which Type makes a pointer).
	ColumnType gocode.Type
	// Finite is true for a float column of an engine that stores no NaN
	// or infinity (engine.FiniteFloats): pushes refuse them.
	Finite bool
	// Exact is the expression that reads the column exactly where the
	// engine's protocol would not (engine.ExactReader), or "": the reads
	// of jobs select it too, as ExactName.
	Exact string
	// Default is the column's DEFAULT expression as the engine writes it,
	// or "". A field with a default is unset when it is nil (a pointer,
	// slice or byte slice) or not Valid (types that carry their own NULL),
	// and a push that leaves it unset gets the default.
	Default string
}

// IsJSON reports whether the field is a JSON document (json.RawMessage).
func (f *Field) IsJSON() bool { return f.Type.Is(jsonRaw.Ident) }

// Unset is how a field with a default is tested for being unset: "nil"
// (pointer, slice) or "valid" (a type with a Valid field).
func (f *Field) Unset() string {
	if f.Type.CanBeNil() {
		return "nil"
	}
	return "valid"
}

func (m *Model) payload(s *spec.Spec, sq *spec.Queue, goName string) *Payload {
	eng := m.Engine
	p := &Payload{}
	if j := sq.Payload.JSON; j != nil {
		col := &catalog.Column{Name: j.Column, Type: eng.Column(&spec.Column{Name: j.Column, Type: spec.Type{Name: "jsonb"}}).Type, NotNull: true, Comment: "the payload, encoded as JSON", JSON: true}
		p.Columns = []*catalog.Column{col}
		p.JSON = &Field{Name: j.Column, GoName: spec.GoName(j.Column), Type: jsonRaw}
		p.Inputs = []*Field{p.JSON}
		if g := j.GoType; g != nil {
			p.Type = gocode.Named(gocode.ImportPath(g.Import).Ident(g.Type))
			return p
		}
		p.Type, p.Declare = gocode.Named(gocode.Local(goName+"Payload")), true
		for _, f := range j.Fields {
			tag := f.Name
			if f.Nullable {
				tag += ",omitempty"
			}
			p.Fields = append(p.Fields, &Field{Name: f.Name, GoName: spec.GoName(f.Name), Type: jsonGoType(f.Type, f.Nullable),
				Tag: fmt.Sprintf("`json:%q`", tag), Nullable: f.Nullable})
		}
		return p
	}
	p.Type, p.Declare = gocode.Named(gocode.Local(goName+"Payload")), true
	field := func(c *spec.Column) *Field {
		col := eng.Column(c)
		// A field with a default takes the Go type of a nullable column:
		// unset, it gets the default.
		t := eng.GoType(c.Type, c.Nullable || c.HasDefault())
		exact := ""
		if r, ok := eng.(engine.ExactReader); ok && r.ReadExactly(c.Type) {
			exact = r.ExactExpr(c.Name)
		}
		return &Field{Name: c.Name, GoName: spec.GoName(c.Name), Type: t, Nullable: c.Nullable,
			SQLType: col.Type, Exact: exact, Default: col.Default, Finite: finite(eng, t), ColumnType: eng.GoType(c.Type, c.Nullable),
			EmptyIfNil:    !c.Nullable && !c.HasDefault() && t.IsSlice() && !(c.Type.Name == "jsonb" && !c.Type.Array),
			NullJSONIfNil: !c.Nullable && !c.HasDefault() && c.Type.Name == "jsonb" && !c.Type.Array}
	}
	if sq.Inherits {
		for _, c := range s.Base.Columns {
			p.Fields = append(p.Fields, field(c))
			if !eng.Inheritance() {
				p.Columns = append(p.Columns, eng.Column(c))
			}
		}
	}
	for _, c := range sq.Payload.Columns {
		p.Columns = append(p.Columns, eng.Column(c))
		p.Fields = append(p.Fields, field(c))
	}
	p.Inputs = p.Fields
	return p
}

var (
	jsonNumber = gocode.Named(gocode.JSON.Ident("Number"))
	jsonRaw    = gocode.Nilable(gocode.JSON.Ident("RawMessage"))
	timeTime   = gocode.Named(gocode.Time.Ident("Time"))
)

// jsonGoType is the Go type of a field of a generated JSON payload struct:
// what encoding/json reads the field's values into. It does not depend on
// the engine: the document is JSON in every database.
func jsonGoType(t spec.Type, nullable bool) gocode.Type {
	var inner gocode.Type
	switch t.Name {
	case "text", "varchar", "uuid", "date":
		inner = gocode.String
	case "smallint":
		inner = gocode.Int16
	case "integer":
		inner = gocode.Int32
	case "bigint":
		inner = gocode.Int64
	case "boolean":
		inner = gocode.Bool
	case "real":
		inner = gocode.Float32
	case "double precision":
		inner = gocode.Float64
	case "numeric":
		inner = jsonNumber
	case "timestamptz":
		inner = timeTime
	case "jsonb":
		return jsonRaw
	case "bytea":
		return gocode.Bytes
	default:
		panic("model: unhandled type " + t.Name)
	}
	if t.Array {
		return inner.SliceOf()
	}
	if nullable {
		return inner.Ptr()
	}
	return inner
}
