// Package gocode represents the Go that queuegen generates as values rather
// than as strings assembled by hand: identifiers with the import path they
// come from (Ident), types built from them (Type), and a File that hands
// out each identifier's qualified spelling while recording the imports it
// needs. A generated file is rendered first and its import block is written
// last, from what the body actually used, the way protobuf-go's protogen
// does with GoIdent and GoImportPath.
package gocode

import (
	"fmt"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ImportPath is a Go import path, e.g. "github.com/jackc/pgx/v5".
type ImportPath string

// Ident is a Go identifier in a package. An empty Import names an
// identifier of the generated package itself, or a predeclared one
// (string, int64, …).
type Ident struct {
	Import ImportPath
	Name   string
}

// Ident returns the identifier name in package p.
func (p ImportPath) Ident(name string) Ident { return Ident{Import: p, Name: name} }

// Local is an identifier of the generated package, or a predeclared one.
func Local(name string) Ident { return Ident{Name: name} }

// Type is a Go type built from one identifier: T, *T, []T, [][]T, or a
// generic instantiation T[Args…] (itself possibly a pointer or slice).
type Type struct {
	Ident Ident
	Args  []Type
	// Pointer makes the type *T (after any slices: []*T is not needed).
	Pointer bool
	// Slices is how many [] precede the type.
	Slices int
	// NilKind is true for a named type whose values can be nil (a named
	// slice, map or pointer type, such as json.RawMessage).
	NilKind bool
}

// Nilable is a named type whose values can be nil, e.g. json.RawMessage.
func Nilable(ident Ident) Type { return Type{Ident: ident, NilKind: true} }

// CanBeNil reports whether a value of t can be nil.
func (t Type) CanBeNil() bool { return t.Pointer || t.Slices > 0 || t.NilKind }

// Named is the type spelled by ident alone.
func Named(ident Ident) Type { return Type{Ident: ident} }

// Ptr is *t.
func (t Type) Ptr() Type { t.Pointer = true; return t }

// SliceOf is []t (a slice of t, without t's pointer).
func (t Type) SliceOf() Type { t.Slices, t.Pointer = t.Slices+1, false; return t }

// Elem is t without its pointer or slices.
func (t Type) Elem() Type { t.Slices, t.Pointer = 0, false; return t }

// Of instantiates a generic type with args.
func (t Type) Of(args ...Type) Type { t.Args = args; return t }

// IsPointer reports whether t is *T.
func (t Type) IsPointer() bool { return t.Pointer }

// IsSlice reports whether t is []T.
func (t Type) IsSlice() bool { return t.Slices > 0 }

// Is reports whether t is exactly ident, without pointer or slice.
func (t Type) Is(ident Ident) bool {
	return t.Ident == ident && !t.Pointer && t.Slices == 0 && len(t.Args) == 0
}

// Predeclared Go types.
var (
	String  = Named(Local("string"))
	Bool    = Named(Local("bool"))
	Int16   = Named(Local("int16"))
	Int32   = Named(Local("int32"))
	Int64   = Named(Local("int64"))
	Float32 = Named(Local("float32"))
	Float64 = Named(Local("float64"))
	Byte    = Named(Local("byte"))
	Bytes   = Byte.SliceOf()
)

// Standard-library and runtime identifiers the generated code uses.
const (
	Context ImportPath = "context"
	Errors  ImportPath = "errors"
	JSON    ImportPath = "encoding/json"
	Time    ImportPath = "time"
	Queue   ImportPath = "github.com/queuegen/queuegen/queue"
	// QueueImp is the runtime's engine-neutral part for generated code;
	// each engine names its driver's own (engine.Driver.Runtime).
	QueueImp ImportPath = "github.com/queuegen/queuegen/queue/queueimpl"
)

// File tracks the imports of one generated Go file. Qualify and TypeString
// record each import they are asked about; Imports lists them afterwards.
type File struct {
	// Package is the generated file's own import path, if known; its
	// identifiers are written unqualified.
	Package ImportPath
	names   map[ImportPath]string // import path → name used in this file
	taken   map[string]ImportPath // name → import path
}

// NewFile starts the import set of a file of package pkg.
func NewFile(pkg ImportPath) *File {
	return &File{Package: pkg, names: map[ImportPath]string{}, taken: map[string]ImportPath{}}
}

// Qualify returns ident as written in this file ("pgx.Tx", "EmailPayload")
// and records its import.
func (f *File) Qualify(ident Ident) string {
	if ident.Import == "" || ident.Import == f.Package {
		return ident.Name
	}
	return f.importName(ident.Import) + "." + ident.Name
}

// Use records an import whose identifiers the file writes itself.
func (f *File) Use(p ImportPath) string { return f.importName(p) }

func (f *File) importName(p ImportPath) string {
	if n, ok := f.names[p]; ok {
		return n
	}
	base := PackageName(p)
	name := base
	for i := 2; ; i++ {
		if _, clash := f.taken[name]; !clash && !token.IsKeyword(name) {
			break
		}
		name = base + strconv.Itoa(i)
	}
	f.names[p], f.taken[name] = name, p
	return name
}

// TypeString returns t as written in this file, recording its imports.
func (f *File) TypeString(t Type) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("[]", t.Slices))
	if t.Pointer {
		b.WriteString("*")
	}
	b.WriteString(f.Qualify(t.Ident))
	if len(t.Args) > 0 {
		b.WriteByte('[')
		for i, a := range t.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.TypeString(a))
		}
		b.WriteByte(']')
	}
	return b.String()
}

// Import is one line of an import block.
type Import struct {
	Path ImportPath
	// Name is set when the file refers to the package by another name
	// than PackageName(Path).
	Name string
}

// Imports lists the recorded imports: the standard library first, then
// the rest, each group sorted by path.
func (f *File) Imports() (std, other []Import) {
	for p, n := range f.names {
		imp := Import{Path: p}
		if n != PackageName(p) {
			imp.Name = n
		}
		if isStd(p) {
			std = append(std, imp)
		} else {
			other = append(other, imp)
		}
	}
	sort.Slice(std, func(i, j int) bool { return std[i].Path < std[j].Path })
	sort.Slice(other, func(i, j int) bool { return other[i].Path < other[j].Path })
	return std, other
}

// ImportBlock renders the recorded imports as a Go import declaration,
// or "" when there are none.
func (f *File) ImportBlock() string {
	std, other := f.Imports()
	if len(std)+len(other) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("import (\n")
	line := func(i Import) {
		b.WriteByte('\t')
		if i.Name != "" {
			b.WriteString(i.Name + " ")
		}
		b.WriteString(strconv.Quote(string(i.Path)) + "\n")
	}
	for _, i := range std {
		line(i)
	}
	if len(std) > 0 && len(other) > 0 {
		b.WriteByte('\n')
	}
	for _, i := range other {
		line(i)
	}
	b.WriteString(")\n")
	return b.String()
}

// isStd reports whether p is a standard-library path: no dot in its first
// element.
func isStd(p ImportPath) bool {
	first, _, _ := strings.Cut(string(p), "/")
	return !strings.Contains(first, ".")
}

// PackageName is the name a package is conventionally referred to by: the
// last element of its path, without a major-version element (/v5) or
// suffix (.v3), with characters that cannot appear in a Go identifier
// removed; or the name a known package declares (go-mssqldb's is mssql).
func PackageName(p ImportPath) string {
	if name, ok := packageNames[p]; ok {
		return name
	}
	s := string(p)
	base := path.Base(s)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		base = path.Base(path.Dir(s))
	}
	if i := strings.Index(base, ".v"); i > 0 && strings.Trim(base[i+2:], "0123456789") == "" {
		base = base[:i]
	}
	var b strings.Builder
	for _, r := range base {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || b.Len() > 0 && r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "pkg"
	}
	return b.String()
}

// packageNames are the names of the packages generated code imports whose
// name is not the last element of their path.
var packageNames = map[ImportPath]string{
	"github.com/microsoft/go-mssqldb": "mssql",
}

// Duration renders d as a Go constant expression ("5 * time.Minute"),
// qualifying time in f.
func (f *File) Duration(d time.Duration) string {
	units := []struct {
		d    time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"}}
	for _, u := range units {
		if d != 0 && d%u.d == 0 {
			unit := f.Qualify(Time.Ident(u.name))
			if n := d / u.d; n != 1 {
				return fmt.Sprintf("%d * %s", n, unit)
			}
			return unit
		}
	}
	return fmt.Sprintf("%d", int64(d))
}
