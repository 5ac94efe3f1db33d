// Package templates holds the text/template files of what queuegen renders
// itself: the Go accessor of a queue (queue.go.tmpl, shared by every
// engine), the starter spec, and each engine's query, sqlc and package
// templates in a directory named after the engine. They are embedded in
// the binary; package render executes them.
package templates

import "embed"

// FS holds every template, by path.
//
//go:embed *.tmpl */*.tmpl
var FS embed.FS
