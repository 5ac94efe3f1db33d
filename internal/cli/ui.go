package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/queuegen/queuegen/dashboard"
)

// The environment variables --auth reads.
const (
	envUIUser     = "QUEUEGEN_UI_USER"
	envUIPassword = "QUEUEGEN_UI_PASSWORD"
	envUIToken    = "QUEUEGEN_UI_TOKEN"
)

func runUI(c *invocation) error {
	db, file := c.dbFlag(), c.specFlag()
	schema := c.fs.String("schema", "", "the queues' schema (default: the spec's, else public on PostgreSQL, dbo on SQL Server; MySQL has none)")
	addr := c.fs.String("addr", "127.0.0.1:8080", "the address to listen on (any but loopback requires --auth)")
	auth := c.fs.String("auth", "", "basic ($"+envUIUser+" and $"+envUIPassword+") or token ($"+envUIToken+")")
	readOnly := c.fs.Bool("read-only", false, "hide and refuse every action")
	if err := c.parse(); err != nil {
		return err
	}
	if err := c.noArgs(); err != nil {
		return err
	}
	url, err := c.databaseURL(*db)
	if err != nil {
		return err
	}
	opts, err := uiOptions(*addr, *auth, os.Getenv)
	if err != nil {
		return err
	}
	if *readOnly {
		opts = append(opts, dashboard.ReadOnly())
	}
	if *schema != "" {
		if !url.HasSchemas() {
			return noSchemaOnMySQL(*schema)
		}
		opts = append(opts, dashboard.Schema(*schema))
	}
	if loaded, err := specFor(url, *file); err != nil {
		return err
	} else if loaded != nil {
		opts = append(opts, dashboard.SpecFile(*file))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := dashboard.New(ctx, url.URL, opts...)
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(c.stdout, "queuegen ui: serving the dashboard on http://%s/ (Ctrl-C stops it)\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// uiOptions checks --addr against --auth and reads the credentials --auth
// names from the environment: a dashboard that listens beyond loopback
// must ask who is there.
func uiOptions(addr, auth string, getenv func(string) string) ([]dashboard.Option, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError{fmt.Errorf("--addr %s: %v", addr, err)}
	}
	var opts []dashboard.Option
	switch auth {
	case "":
		if !loopback(host) {
			return nil, usageError{fmt.Errorf("--addr %s listens beyond loopback: give --auth basic or --auth token, or listen on 127.0.0.1", addr)}
		}
		// Without authentication, only requests addressed to a loopback
		// name (see dashboard.LoopbackHostsOnly).
		opts = append(opts, dashboard.LoopbackHostsOnly())
	case "basic":
		user, password := getenv(envUIUser), getenv(envUIPassword)
		if user == "" || password == "" {
			return nil, usageError{fmt.Errorf("--auth basic reads $%s and $%s: set both", envUIUser, envUIPassword)}
		}
		if err := dashboard.CheckUser(user); err != nil {
			return nil, usageError{fmt.Errorf("--auth basic: $%s: %v", envUIUser, err)}
		}
		if err := dashboard.CheckSecret(password); err != nil {
			return nil, usageError{fmt.Errorf("--auth basic: $%s: %v", envUIPassword, err)}
		}
		opts = append(opts, dashboard.BasicAuth(user, password))
	case "token":
		token := getenv(envUIToken)
		if err := dashboard.CheckSecret(token); err != nil {
			return nil, usageError{fmt.Errorf("--auth token reads $%s: %v", envUIToken, err)}
		}
		opts = append(opts, dashboard.BearerToken(token))
	default:
		return nil, usageError{fmt.Errorf("--auth %q: want basic or token", auth)}
	}
	return opts, nil
}

// loopback reports whether host names only this machine: localhost or a
// loopback address. An empty host (":8080") is every interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
