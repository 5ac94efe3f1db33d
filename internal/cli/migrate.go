package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuegen/queuegen/internal/dburl"
	"github.com/queuegen/queuegen/internal/migrate"
	"github.com/queuegen/queuegen/internal/spec"
)

func runMigrate(c *invocation) error {
	file := c.specFlag()
	db := c.dbFlag()
	asJSON := c.jsonFlag()
	yes := c.fs.Bool("yes", false, "let down, down-to, redo and reset drop queue tables that hold jobs")
	lockTimeout := c.fs.Duration("lock-timeout", 2*time.Second, "the longest a migration's statement waits for a table lock before it gives up and the migration is tried again (0: no bound); pushes and claims on the table queue behind the wait")
	lockTries := c.fs.Int("lock-tries", 5, "how many times a migration that gave up waiting for a lock is tried, with a growing pause between tries")
	if err := c.parse(); err != nil {
		return err
	}
	if *lockTimeout < 0 || *lockTries < 1 {
		return usageError{errors.New("--lock-timeout must not be negative and --lock-tries must be at least 1")}
	}
	actions := append(slices.Clone(migrate.Actions), "status", "version")
	if len(c.positional) == 0 {
		return usageError{fmt.Errorf("give an action: %s", strings.Join(actions, ", "))}
	}
	action := c.positional[0]
	if !slices.Contains(actions, action) {
		return usageError{fmt.Errorf("unknown action %q: want %s", action, strings.Join(actions, ", "))}
	}
	var target int64
	wantsVersion := action == "up-to" || action == "down-to"
	switch {
	case wantsVersion && len(c.positional) != 2:
		return usageError{fmt.Errorf("%s needs a VERSION (a migration's number, e.g. 3)", action)}
	case wantsVersion:
		v, err := strconv.ParseInt(c.positional[1], 10, 64)
		if err != nil || v < 0 {
			return usageError{fmt.Errorf("%s: %q is not a migration version (a whole number, e.g. 3)", action, c.positional[1])}
		}
		target = v
	case len(c.positional) > 1:
		return usageError{fmt.Errorf("unexpected argument %q", c.positional[1])}
	}
	url, err := c.databaseURL(*db)
	if err != nil {
		return err
	}
	if err := loadable(*file); err != nil {
		return err
	}
	s, err := spec.Load(*file)
	if err != nil {
		return err
	}
	if err := url.Serves(s.Engine, *file); err != nil {
		return err
	}
	dir := filepath.Join(filepath.Dir(*file), filepath.FromSlash(s.Migrations))
	m, err := migrate.Open(url.URL, dir, migrate.Schema(s.Schema), migrate.Table(s.MigrationsTable), migrate.LockTimeout(*lockTimeout, *lockTries))
	if err != nil {
		return err
	}
	defer m.Close()
	m.Notify = func(msg string) { fmt.Fprintln(c.stderr, msg) }
	ctx := context.Background()
	switch action {
	case "status":
		return migrateStatus(ctx, c, m, *asJSON)
	case "version":
		v, err := m.Version(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return c.printJSON(map[string]int64{"version": v})
		}
		fmt.Fprintln(c.stdout, v)
		return nil
	}
	if slices.Contains([]string{"down", "down-to", "redo", "reset"}, action) && !*yes {
		losses, err := m.Losses(ctx, action, target)
		if err != nil {
			return err
		}
		if len(losses) > 0 {
			return dropConsent(action, losses)
		}
	}
	progress := newProgress(c.stderr)
	stop := m.IndexProgress(ctx, progress.line)
	rep, err := m.Migrate(ctx, action, target)
	stop()
	progress.end()
	if rep == nil {
		return err
	}
	if *asJSON {
		out := struct {
			*migrate.Report
			Error string `json:"error,omitempty"`
		}{Report: rep}
		if err != nil {
			out.Error = err.Error()
		}
		if jerr := c.printJSON(out); jerr != nil {
			return jerr
		}
		if err != nil {
			return errReported
		}
		return nil
	}
	for _, st := range rep.Applied {
		fmt.Fprintf(c.stdout, "%-5s %s (%s)\n", st.Direction, st.File, st.Duration.Round(time.Millisecond))
	}
	if err != nil {
		if rep.Failed != nil {
			fmt.Fprintf(c.stdout, "FAILED %s %s: %v\n", rep.Failed.Direction, rep.Failed.File, err)
			if rep.Failed.Direction == "up" && len(rep.Pending) > 1 {
				fmt.Fprintf(c.stdout, "not applied: %s\n", strings.Join(rep.Pending[1:], ", "))
			}
			fmt.Fprintf(c.stderr, "queuegen migrate %s: %s ran, %s failed; the database is at version %d\n", action, plural(len(rep.Applied), "migration"), rep.Failed.File, rep.Version)
			return errReported
		}
		return err
	}
	if len(rep.Applied) == 0 {
		verb := map[string]string{"up": "apply", "up-to": "apply"}[action]
		if verb == "" {
			verb = "roll back"
		}
		fmt.Fprintf(c.stdout, "no migrations to %s; at version %d\n", verb, rep.Version)
		return nil
	}
	fmt.Fprintf(c.stdout, "at version %d\n", rep.Version)
	return nil
}

// specFor loads the spec file, when there is one, for a command that
// also takes --db, refusing a database of another engine than the spec's
// before anything connects.
func specFor(url dburl.DB, file string) (*spec.Spec, error) {
	if _, err := os.Stat(file); err != nil {
		return nil, nil
	}
	s, err := spec.Load(file)
	if err != nil {
		return nil, err
	}
	return s, url.Serves(s.Engine, file)
}

// dropConsent refuses a down action that would drop tables holding jobs,
// naming each and its count, as purge and generate --allow-drop ask.
func dropConsent(action string, losses []migrate.Loss) error {
	var b strings.Builder
	fmt.Fprintf(&b, "migrate %s would drop ", action)
	if len(losses) == 1 {
		b.WriteString("a table that holds jobs:")
	} else {
		b.WriteString("tables that hold jobs:")
	}
	width := 0
	for _, l := range losses {
		width = max(width, len(l.Table))
	}
	for _, l := range losses {
		fmt.Fprintf(&b, "\n  %-*s %s (dropped by %s)", width, l.Table, plural(int(l.Rows), "job"), l.File)
	}
	b.WriteString("\nrun it with --yes to drop them with their jobs. Nothing was changed.")
	return errors.New(b.String())
}

func migrateStatus(ctx context.Context, c *invocation, m *migrate.Migrator, asJSON bool) error {
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	queues, err := m.Queues(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		type queue struct {
			Name   string `json:"name"`
			Table  string `json:"table"`
			Mode   string `json:"mode"`
			Paused bool   `json:"paused"`
		}
		qs := []queue{}
		for _, q := range queues {
			qs = append(qs, queue{q.Name, q.Table, q.Mode, q.Paused})
		}
		return c.printJSON(map[string]any{"migrations": st, "queues": qs})
	}
	width := 0
	for _, s := range st {
		width = max(width, len(s.File))
	}
	for _, s := range st {
		applied := "pending"
		if s.Applied {
			applied = "applied " + s.AppliedAt.Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(c.stdout, "%-*s  %s\n", width, s.File, applied)
	}
	if queues == nil {
		fmt.Fprintln(c.stdout, "\nno queues registered yet (queuegen migrate up)")
		return nil
	}
	fmt.Fprintf(c.stdout, "\n%s registered:\n", plural(len(queues), "queue"))
	nameWidth, tableWidth := 0, 0
	for _, q := range queues {
		nameWidth, tableWidth = max(nameWidth, len(q.Name)), max(tableWidth, len(q.Table))
	}
	for _, q := range queues {
		paused := ""
		if q.Paused {
			paused = " (paused)"
		}
		fmt.Fprintf(c.stdout, "  %-*s  table %-*s  %s%s\n", nameWidth, q.Name, tableWidth, q.Table, q.Mode, paused)
	}
	return nil
}
