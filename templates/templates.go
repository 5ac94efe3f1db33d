// Package templates holds the text/template files for everything queuegen
// emits: migrations, the schema sqlc reads, queries, sqlc.yaml and the Go
// accessors. They are embedded in the binary; package render executes them.
package templates

import "embed"

// FS holds every template, by file name.
//
//go:embed *.tmpl
var FS embed.FS
