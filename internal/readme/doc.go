// Package readme tests that the README's examples work when copied: every
// spec in it parses and builds, and every Go snippet compiles against the
// example's generated queues (examples/mailer).
package readme
