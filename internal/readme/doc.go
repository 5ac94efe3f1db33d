// Package readme tests that the README's examples work when copied: every
// spec in it parses and builds, and every Go snippet compiles against the
// example's generated queues (examples/mailer). It also holds the product
// module to the layout the README describes: no fixture in it.
package readme
