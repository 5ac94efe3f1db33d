package evolve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/queuegen/queuegen/internal/model"
	"github.com/queuegen/queuegen/internal/render"
)

// Options for Next.
type NextOptions struct {
	Options
	// Manual writes a migration stub for the user to fill in, instead of
	// refusing changes queuegen will not write.
	Manual bool
}

// Next decides the migrations for a generate run. root is the spec's
// directory; initial are the rendered migrations of a first run. It returns
// the migration files to write (none when nothing changed; two when a
// change needs a NO TRANSACTION part) and the new state file.
func Next(root string, m *model.Model, initial []render.File, opts NextOptions) ([]render.File, render.File, error) {
	dir := filepath.Join(root, filepath.FromSlash(m.MigrationsDir))
	statePath := path.Join(m.MigrationsDir, StateFile)
	want := FromModel(m)

	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		if existing := sqlFiles(dir); len(existing) > 0 {
			return nil, render.File{}, fmt.Errorf("%s has migrations (%s…) but no %s, the record of what they produce: restore it from version control (queuegen writes it beside the migrations it emits)", m.MigrationsDir, existing[0], StateFile)
		}
		for _, f := range initial {
			want.Migrations = append(want.Migrations, &Migration{File: path.Base(f.Path), SHA256: Hash(f.Data)})
		}
		st, err := stateFile(statePath, want)
		return initial, st, err
	}
	if err != nil {
		return nil, render.File{}, err
	}
	old, err := ParseState(data)
	if err != nil {
		return nil, render.File{}, err
	}
	if err := verify(dir, m.MigrationsDir, old); err != nil {
		return nil, render.File{}, err
	}
	want.Migrations = old.Migrations
	changes, err := Diff(old, m, opts.Options)
	var refused *RefusedError
	if errors.As(err, &refused) && opts.Manual {
		name := render.MigrationName(nextVersion(dir, old), "manual")
		body, err := render.Execute("migration_manual.sql.tmpl", refused)
		if err != nil {
			return nil, render.File{}, err
		}
		want.Migrations = append(want.Migrations, &Migration{File: name, Manual: true})
		st, err := stateFile(statePath, want)
		return []render.File{{Path: path.Join(m.MigrationsDir, name), Data: body}}, st, err
	}
	if err != nil {
		return nil, render.File{}, err
	}
	var files []render.File
	version := nextVersion(dir, old)
	for _, c := range changes {
		name := render.MigrationName(version, c.Name)
		version++
		body, err := render.Execute("migration_change.sql.tmpl", struct {
			Spec   string
			Change *Change
		}{path.Base(filepath.ToSlash(m.Spec.File)), c})
		if err != nil {
			return nil, render.File{}, err
		}
		want.Migrations = append(want.Migrations, &Migration{File: name, SHA256: Hash(body)})
		files = append(files, render.File{Path: path.Join(m.MigrationsDir, name), Data: body})
	}
	st, err := stateFile(statePath, want)
	return files, st, err
}

func stateFile(p string, s *State) (render.File, error) {
	data, err := s.Marshal()
	return render.File{Path: p, Data: data}, err
}

// verify checks that every migration the state records is on disk, and
// that the generated ones are unchanged.
func verify(dir, rel string, s *State) error {
	for _, mig := range s.Migrations {
		data, err := os.ReadFile(filepath.Join(dir, mig.File))
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s/%s was deleted, but databases may have applied it: restore it from version control (queuegen never emits a migration twice)", rel, mig.File)
		}
		if err != nil {
			return err
		}
		if !mig.Manual && Hash(data) != mig.SHA256 {
			return fmt.Errorf("%s/%s was edited after queuegen emitted it, but databases may have applied the original: restore it from version control, and express the change in the spec (or with queuegen generate --manual)", rel, mig.File)
		}
	}
	return nil
}

var versionRE = regexp.MustCompile(`^(\d+)_`)

// sqlFiles lists the .sql files of dir.
func sqlFiles(dir string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
	out := make([]string, len(matches))
	for i, p := range matches {
		out[i] = filepath.Base(p)
	}
	return out
}

// nextVersion is one more than the highest version in the directory or
// the state (hand-written migrations count too).
func nextVersion(dir string, s *State) int {
	high := 0
	names := sqlFiles(dir)
	for _, mig := range s.Migrations {
		names = append(names, mig.File)
	}
	for _, n := range names {
		if m := versionRE.FindStringSubmatch(n); m != nil {
			if v, _ := strconv.Atoi(m[1]); v > high {
				high = v
			}
		}
	}
	return high + 1
}
