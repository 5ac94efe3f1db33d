package gocode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNoModule is returned by DirImportPath for a directory that is in no Go
// module (no go.mod in it or above it).
var ErrNoModule = errors.New("no go.mod in it or any directory above it")

// DirImportPath is the import path of the package in dir, a directory that
// may not exist yet: the module path of the nearest go.mod in dir or above
// it, joined with dir's path below that go.mod. The generated accessors
// import sqlc's subpackage by it.
func DirImportPath(dir string) (ImportPath, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	var below []string
	for d := abs; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		switch {
		case err == nil:
			mod, err := modulePath(data)
			if err != nil {
				return "", fmt.Errorf("%s: %w", filepath.Join(d, "go.mod"), err)
			}
			for i, j := 0, len(below)-1; i < j; i, j = i+1, j-1 {
				below[i], below[j] = below[j], below[i]
			}
			return ImportPath(path.Join(append([]string{mod}, below...)...)), nil
		case !errors.Is(err, os.ErrNotExist):
			return "", err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("%s: %w", abs, ErrNoModule)
		}
		below = append(below, filepath.Base(d))
	}
}

// modulePath reads the module directive of a go.mod file: `module path`,
// with the path quoted or not, and comments after it.
func modulePath(gomod []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t' && rest[0] != '"') {
			continue
		}
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, `"`) || strings.HasPrefix(rest, "`") {
			p, err := strconv.Unquote(rest)
			if err != nil {
				return "", fmt.Errorf("module directive %s: %w", rest, err)
			}
			rest = p
		}
		if rest != "" {
			return rest, nil
		}
	}
	return "", errors.New("no module directive")
}
