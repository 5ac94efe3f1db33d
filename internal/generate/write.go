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

	"github.com/queuegen/queuegen/internal/textdiff"
)

// Change is one difference between the generated files and the disk.
type Change struct {
	Path string
	// Kind is "add", "update" or "remove".
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
	for _, dir := range []string{o.Model.GoDir, o.Model.QueriesDir} {
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
// writes nothing.
func (o *Output) Write() ([]Change, error) {
	changes, err := o.Plan()
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		p := o.abs(c.Path)
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
