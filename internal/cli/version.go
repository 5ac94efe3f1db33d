package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// versions are queuegen's module version and those of what it embeds,
// from the build information of the running binary.
type versions struct {
	Queuegen string `json:"queuegen"`
	SQLC     string `json:"sqlc"`
	Goose    string `json:"goose"`
	Pgx      string `json:"pgx"`
	Go       string `json:"go"`
}

func buildVersions() versions {
	v := versions{Queuegen: "(unknown)", Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	deps := map[string]*string{
		"github.com/queuegen/queuegen": &v.Queuegen,
		"github.com/sqlc-dev/sqlc":     &v.SQLC,
		"github.com/pressly/goose/v3":  &v.Goose,
		"github.com/jackc/pgx/v5":      &v.Pgx,
	}
	if p, ok := deps[info.Main.Path]; ok {
		*p = info.Main.Version
	}
	for _, d := range info.Deps {
		if p, ok := deps[d.Path]; ok {
			*p = d.Version
			if d.Replace != nil {
				*p = d.Replace.Version
				if *p == "" {
					*p = "(devel, " + d.Replace.Path + ")"
				}
			}
		}
	}
	return v
}

func runVersion(c *invocation) error {
	asJSON := c.jsonFlag()
	if err := c.parse(); err != nil {
		return err
	}
	if err := c.noArgs(); err != nil {
		return err
	}
	v := buildVersions()
	if *asJSON {
		return c.printJSON(v)
	}
	fmt.Fprintf(c.stdout, "queuegen %s\n  sqlc  %s (runs in-process)\n  goose %s\n  pgx   %s\n  built with %s\n", v.Queuegen, v.SQLC, v.Goose, v.Pgx, v.Go)
	return nil
}
