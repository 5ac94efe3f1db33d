// Package cli holds the tests of queuegen's commands that need generated
// code beside them: a job the e2e fixture's generated accessors claimed,
// seen by stats and the actions. The commands' other tests are in
// internal/cli, in the product module, which cannot import this module's
// generated trees.
package cli
