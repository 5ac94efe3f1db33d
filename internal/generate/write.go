package generate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/queuegen/queuegen/internal/evolve"
	"github.com/queuegen/queuegen/internal/textdiff"
)

// Change is one difference between the generated files and the disk.
type Change struct {
	Path string
	// Kind is "add", "update" or "remove" ("empty" in what Write did: see
	// Write).
	Kind string
	// Old and New are the contents on disk and as generated (nil when
	// absent).
	Old, New []byte
}

// Plan compares the output with the files under Root. It refuses (an
// error, and nothing to apply) any change to an existing migration file:
// a migration may already have run somewhere, so queuegen never rewrites or
// removes one.
func (o *Output) Plan() ([]Change, error) {
	var changes []Change
	want := map[string]bool{}
	for _, f := range o.Files {
		want[f.Path] = true
		old, err := os.ReadFile(o.abs(f.Path))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			changes = append(changes, Change{Path: f.Path, Kind: "add", New: f.Data})
		case err != nil:
			return nil, err
		case !bytes.Equal(old, f.Data):
			changes = append(changes, Change{Path: f.Path, Kind: "update", Old: old, New: f.Data})
		}
	}
	// Files queuegen generated earlier that it no longer generates. The
	// migrations directory is not swept: migrations are never removed.
	for _, dir := range []string{o.Model.GoDir, o.Model.DBDir, o.Model.QueriesDir} {
		if path.Clean(dir) == path.Clean(o.Model.MigrationsDir) {
			continue
		}
		entries, err := os.ReadDir(o.abs(dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			if e.IsDir() || want[p] {
				continue
			}
			data, err := os.ReadFile(o.abs(p))
			if err != nil {
				return nil, err
			}
			if isGenerated(data) {
				changes = append(changes, Change{Path: p, Kind: "remove", Old: data})
			}
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	var refused []string
	for _, c := range changes {
		if c.Kind != "add" && o.isMigration(c.Path) {
			refused = append(refused, fmt.Sprintf("  %s would be %s", c.Path, map[string]string{"update": "updated", "remove": "removed"}[c.Kind]))
		}
	}
	if len(refused) > 0 {
		return nil, &MigrationChangeError{Lines: refused}
	}
	return changes, nil
}

// MigrationChangeError is returned when the spec changed in a way that
// would rewrite or remove an emitted migration.
type MigrationChangeError struct{ Lines []string }

// Error lists the migrations that would change and what to do instead.
func (e *MigrationChangeError) Error() string {
	return "queuegen never rewrites or removes a migration it emitted (it may already be applied somewhere), and this spec change would:\n" +
		strings.Join(e.Lines, "\n") +
		"\nRestore them from version control; spec changes become new migrations. Nothing was written."
}

func (o *Output) isMigration(p string) bool {
	return path.Dir(p) == path.Clean(o.Model.MigrationsDir) && strings.HasSuffix(p, ".sql")
}

func (o *Output) abs(p string) string {
	return filepath.Join(o.Root, filepath.FromSlash(p))
}

// Write applies the plan: it writes new and changed files and removes
// stale generated ones, returning the changes made. On a refused plan it
// writes nothing. Run by go generate, it empties a stale Go file instead
// of removing it (Kind "empty": a file with its package clause and a
// go:build ignore line), since go generate reads every file of the
// packages it listed; the next generate removes it.
func (o *Output) Write() ([]Change, error) {
	changes, err := o.Plan()
	if err != nil {
		return nil, err
	}
	for i, c := range changes {
		p := o.abs(c.Path)
		if c.Kind == "remove" && strings.HasSuffix(c.Path, ".go") && !IsRetired(c.Old) && underGoGenerate() {
			// go generate listed the package's files before it ran
			// queuegen, and reads each listed file after: removed, this
			// one would fail the run (when its package comes later).
			if err := writeFile(p, retired(c.Old)); err != nil {
				return nil, err
			}
			changes[i].Kind, changes[i].New = "empty", retired(c.Old)
			continue
		}
		if c.Kind == "remove" {
			if err := os.Remove(p); err != nil {
				return nil, err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := writeFile(p, c.New); err != nil {
			return nil, err
		}
	}
	return changes, nil
}

// underGoGenerate reports whether go generate runs this process: it sets
// $GOFILE and $GOPACKAGE for the commands of //go:generate lines.
func underGoGenerate() bool {
	return os.Getenv("GOFILE") != "" && os.Getenv("GOPACKAGE") != ""
}

// retiredLine marks a Go file queuegen no longer generates and emptied
// instead of removing (see Write); the next generate removes it.
const retiredLine = "// queuegen no longer generates this file; the next generate removes it."

// retired is what a stale generated Go file becomes when it cannot be
// removed yet: its package clause, in a file no build includes.
func retired(old []byte) []byte {
	pkg := "main"
	for _, l := range strings.Split(string(old), "\n") {
		if name, ok := strings.CutPrefix(l, "package "); ok {
			pkg = strings.TrimSpace(name)
			break
		}
	}
	return []byte("// Code generated by queuegen. DO NOT EDIT.\n\n//go:build ignore\n\n" + retiredLine + `
// go generate ran queuegen after listing this package's files, and reads
// each one it listed: removed, this file would have failed go generate.

package ` + pkg + "\n")
}

// IsRetired reports whether data is a stale Go file queuegen emptied
// rather than removed, which no build includes and the next generate
// removes: check does not call it stale.
func IsRetired(data []byte) bool {
	return isGenerated(data) && bytes.Contains(data, []byte("\n"+retiredLine+"\n")) && bytes.Contains(data, []byte("\n//go:build ignore\n"))
}

// writeFile replaces p atomically, so an interrupted generate leaves either
// the old file or the new one.
func writeFile(p string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".queuegen-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// Diff renders changes as a unified diff, as git diff does: the generated
// file against what is on disk.
func Diff(changes []Change) string {
	var b strings.Builder
	for _, c := range changes {
		switch c.Kind {
		case "add":
			b.WriteString(textdiff.Unified("/dev/null", "b/"+c.Path, "", string(c.New)))
		case "remove":
			b.WriteString(textdiff.Unified("a/"+c.Path, "/dev/null", string(c.Old), ""))
		default:
			b.WriteString(textdiff.Unified("a/"+c.Path, "b/"+c.Path, string(c.Old), string(c.New)))
		}
	}
	return b.String()
}

// FileMap returns the generated files by path.
func (o *Output) FileMap() map[string][]byte {
	m := make(map[string][]byte, len(o.Files))
	for _, f := range o.Files {
		m[f.Path] = f.Data
	}
	return m
}

// Unfilled checks the migrations on disk for a --manual stub still holding
// a placeholder (see evolve.Unfilled): the first it finds, as an
// *evolve.UnfilledError naming the file from the spec's directory.
func (o *Output) Unfilled() error {
	dir := o.abs(o.Model.MigrationsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if err := evolve.CheckFilled(path.Join(o.Model.MigrationsDir, e.Name()), data); err != nil {
			return err
		}
	}
	return nil
}
