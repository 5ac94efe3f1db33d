package sqlserver

import "github.com/queuegen/queuegen/internal/gocode"

// The engine's side of the Go code queuegen writes for its queries
// (engine.QueryCoder): the types of the parameters and columns the
// templates use, and how go-mssqldb must be sent times and JSON.

var (
	int16Type = gocode.Int16
	int32Type = gocode.Int32
	int64Type = gocode.Int64
	timePtr   = timeTime.Ptr()
	stringPtr = gocode.String.Ptr()
)

// params are the Go types of the parameters the templates write.
var params = map[string]gocode.Type{
	"id":                     int64Type,
	"attempt":                int32Type,
	"limit":                  int32Type,
	"node":                   gocode.String,
	"message":                gocode.String,
	"now":                    timePtr,
	"run_after":              timePtr,
	"delay_us":               int64Type,
	"lease_us":               int64Type,
	"priority":               int16Type,
	"max_attempts":           int32Type,
	"unique_key":             stringPtr,
	"paused":                 gocode.Bool,
	"name":                   gocode.String,
	"tick":                   timeTime,
	"jobs":                   gocode.String,
	"fences":                 gocode.String,
	"batch":                  gocode.String,
	"succeeded_retention_us": int64Type,
	"dead_retention_us":      int64Type,
	"concurrency":            int32Type,
	"running":                int32Type,
	"host":                   gocode.String,
	"pid":                    int32Type,
	"started_at":             timeTime,
	"heartbeat_ms":           int32Type,
	"older_than_us":          int64Type,
	"claimed_at":             timeTime,
	"claimed_jobs":           int32Type,
	"keys":                   gocode.String,
}

// columns are the Go types of the bookkeeping columns (bookkeeping) and
// of the result columns the templates name with AS.
var columns = map[string]gocode.Type{
	"id":           int64Type,
	"state":        gocode.String,
	"attempt":      int32Type,
	"max_attempts": int32Type,
	"priority":     int16Type,
	"run_after":    timeTime,
	"created_at":   timeTime,
	"attempted_at": timePtr,
	"finished_at":  timePtr,
	"locked_by":    stringPtr,
	"locked_until": timePtr,
	"errors":       gocode.String,
	"failures":     stringPtr,
	"unique_key":   stringPtr,
	"name":         gocode.String,
	"paused":       gocode.Bool,
	"depth":        int64Type,
	"busy":         int64Type,
	"expired":      int64Type,
	"recent":       int64Type,
	"moved":        int64Type,
}

// ParamType is the Go type of parameter @name.
func (Engine) ParamType(name string) (gocode.Type, bool) {
	t, ok := params[name]
	return t, ok
}

// ColumnType is the Go type of column name.
func (Engine) ColumnType(name string) (gocode.Type, bool) {
	t, ok := columns[name]
	return t, ok
}

// Arg converts times to DATETIME2 in UTC, dates to DATE (the date the
// time.Time shows, in its own location), and JSON documents to text (see
// mssqlimpl.DateTime2, Date and JSONText).
func (Engine) Arg(t gocode.Type, sqlType string) gocode.Ident {
	switch {
	case t.Slices > 0:
		return gocode.Ident{}
	case sqlType == "DATE" && t.IsPointer():
		return Runtime.Ident("NullDate")
	case sqlType == "DATE":
		return Runtime.Ident("Date")
	case t.IsPointer() && t.Elem().Is(timeTime.Ident):
		return Runtime.Ident("NullDateTime2")
	case t.Is(timeTime.Ident):
		return Runtime.Ident("DateTime2")
	case t.IsPointer() && t.Elem().Is(jsonRaw.Ident):
		return Runtime.Ident("NullJSONText")
	case t.Is(jsonRaw.Ident):
		return Runtime.Ident("JSONText")
	}
	return gocode.Ident{}
}

// Scan reads JSON documents, which go-mssqldb returns as text, into
// json.RawMessage (see mssqlimpl.ScanJSON).
func (Engine) Scan(t gocode.Type) gocode.Ident {
	switch {
	case t.Is(jsonRaw.Ident):
		return Runtime.Ident("ScanJSON")
	case t.IsPointer() && t.Elem().Is(jsonRaw.Ident):
		return Runtime.Ident("ScanNullJSON")
	}
	return gocode.Ident{}
}

// Header says queuegen wrote the Go, sqlc having no SQL Server engine.
func (Engine) Header() string {
	return "// Go code for the queries, written by queuegen (sqlc has no SQL Server engine)."
}
