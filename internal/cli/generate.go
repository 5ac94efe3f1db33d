package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/queuegen/queuegen/internal/generate"
	"github.com/queuegen/queuegen/templates"
)

// regenerate is the hint for stale files: the command that regenerates
// them, as a user of go generate and of the CLI runs it.
func regenerate(spec string) string {
	if spec == "queuegen.yaml" {
		return "regenerate: go generate ./... or queuegen generate"
	}
	return "regenerate: go generate ./... or queuegen generate -f " + spec
}

// loadable checks that the spec file exists, pointing at init when it
// does not.
func loadable(spec string) error {
	if _, err := os.Stat(spec); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no such file: write a starter spec with queuegen init (or name the spec with -f)", spec)
	}
	return nil
}

// fileChange is one line of generate's and check's JSON.
type fileChange struct {
	Path   string `json:"path"`
	Change string `json:"change"` // add, update or remove
}

func changeList(changes []generate.Change) []fileChange {
	out := make([]fileChange, len(changes))
	for i, c := range changes {
		out[i] = fileChange{Path: c.Path, Change: c.Kind}
	}
	return out
}

func runGenerate(c *invocation) error {
	file := c.specFlag()
	allowDrop := c.fs.Bool("allow-drop", false, "let spec changes drop queues and columns, with their data")
	manual := c.fs.Bool("manual", false, "for changes queuegen refuses, write a migration to fill in by hand")
	asJSON := c.jsonFlag()
	if err := c.parse(); err != nil {
		return err
	}
	if err := c.noArgs(); err != nil {
		return err
	}
	if err := loadable(*file); err != nil {
		return err
	}
	out, err := generate.Generate(*file, generate.Options{AllowDrop: *allowDrop, Manual: *manual})
	if err != nil {
		return err
	}
	changes, err := out.Write()
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(map[string]any{"spec": *file, "files": len(out.Files), "changed": changeList(changes)})
	}
	if unfilled := out.Unfilled(); unfilled != nil {
		defer fmt.Fprintf(c.stderr, "next: %v\n(queuegen check and migrate refuse it until then)\n", unfilled)
	}
	if len(changes) == 0 {
		fmt.Fprintf(c.stdout, "%s up to date\n", plural(len(out.Files), "generated file"))
		return nil
	}
	for _, ch := range changes {
		verb := map[string]string{"add": "wrote  ", "update": "updated", "remove": "removed", "empty": "emptied"}[ch.Kind]
		fmt.Fprintf(c.stdout, "%s %s\n", verb, filepath.Join(out.Root, filepath.FromSlash(ch.Path)))
	}
	if slices.ContainsFunc(changes, func(ch generate.Change) bool { return ch.Kind == "empty" }) {
		fmt.Fprintln(c.stdout, "(emptied: no longer generated, but go generate has listed them and reads them; no build includes them, and the next generate removes them)")
	}
	fmt.Fprintln(c.stdout, changeSummary(changes, len(out.Files)))
	return nil
}

// changeSummary counts what generate changed: the generated files it
// wrote, of all it generates, and apart from them the files it no longer
// generates, removed or emptied ("9 files of 16 generated files changed;
// 8 no longer generated"), so a count never exceeds the total.
func changeSummary(changes []generate.Change, generated int) string {
	gone := 0
	for _, ch := range changes {
		if ch.Kind == "remove" || ch.Kind == "empty" {
			gone++
		}
	}
	summary := fmt.Sprintf("%s of %s changed", plural(len(changes)-gone, "file"), plural(generated, "generated file"))
	if gone > 0 {
		summary += fmt.Sprintf("; %d no longer generated", gone)
	}
	return summary
}

func runCheck(c *invocation) error {
	file := c.specFlag()
	asJSON := c.jsonFlag()
	if err := c.parse(); err != nil {
		return err
	}
	if err := c.noArgs(); err != nil {
		return err
	}
	if err := loadable(*file); err != nil {
		return err
	}
	out, err := generate.Generate(*file, generate.Options{})
	if err != nil {
		return err
	}
	changes, err := out.Plan()
	if err != nil {
		return err
	}
	// A stale Go file generate emptied under go generate is not stale: no
	// build includes it, and the next generate removes it.
	changes = slices.DeleteFunc(changes, func(ch generate.Change) bool { return ch.Kind == "remove" && generate.IsRetired(ch.Old) })
	unfilled := out.Unfilled()
	if *asJSON {
		report := map[string]any{"spec": *file, "files": len(out.Files), "stale": changeList(changes)}
		if unfilled != nil {
			report["unfilled"] = unfilled.Error()
		}
		if err := c.printJSON(report); err != nil {
			return err
		}
		if len(changes) > 0 || unfilled != nil {
			return errReported
		}
		return nil
	}
	if unfilled != nil && len(changes) == 0 {
		return unfilled
	}
	if unfilled != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", *file, unfilled)
	}
	if len(changes) > 0 {
		fmt.Fprint(c.stdout, generate.Diff(changes))
		fmt.Fprintf(c.stderr, "%s: %s of %s stale; %s\n", *file, plural(len(changes), "file"), plural(len(out.Files), "generated file"), regenerate(*file))
		return errReported
	}
	fmt.Fprintf(c.stdout, "%s: ok, %s up to date\n", *file, plural(len(out.Files), "generated file"))
	return nil
}

func runInit(c *invocation) error {
	file := c.specFlag()
	if err := c.parse(); err != nil {
		return err
	}
	if err := c.noArgs(); err != nil {
		return err
	}
	starter, err := templates.FS.ReadFile("starter.yaml.tmpl")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s already exists; not overwriting it", *file)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(starter); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	gen := "queuegen generate"
	if *file != "queuegen.yaml" {
		gen += " -f " + *file
	}
	fmt.Fprintf(c.stdout, "wrote %s; edit it, then generate: go generate ./... (with //go:generate go tool queuegen generate) or %s\n", *file, gen)
	return nil
}
