package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/internal/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/internal/e2e/payload"
	"github.com/queuegen/queuegen/internal/e2e/sqlserver/msjobs"
	"github.com/queuegen/queuegen/queue"
)

// TestGetMissingIsNotFound: Get of an id no job has returns an error for
// which errors.Is(err, queue.ErrNotFound) holds (and, as before, the
// driver's no-rows error), naming the queue and the id, in both modes.
func TestGetMissingIsNotFound(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		gets := map[string]func(context.Context, int64) (*queue.Job[payload.Task], error){"task": e.task.Get}
		if e.pg != nil {
			gets["txtask"] = e.pg.q.Get
		} else {
			gets["txtask"] = e.std.q.Get
		}
		for name, get := range gets {
			_, err := get(ctx, 1<<40)
			if !errors.Is(err, queue.ErrNotFound) || !errors.Is(err, e.noRows) {
				t.Errorf("%s: Get of a missing id: %v, want queue.ErrNotFound wrapping %v", name, err, e.noRows)
			}
			var nf *queue.NotFoundError
			if !errors.As(err, &nf) || nf.Queue != name || nf.ID != 1<<40 || !strings.Contains(err.Error(), "no job 1099511627776") {
				t.Errorf("%s: error %q (%#v) does not name the queue and id", name, err, nf)
			}
		}
		res, err := e.task.Push(ctx, payload.Task{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.task.Get(ctx, res.ID); err != nil {
			t.Errorf("Get of a job that is there: %v", err)
		}
	})
}

// TestSQLServerRefusesSerializable: SQL Server's claim reads WITH
// (READPAST), which SQL Server refuses under SERIALIZABLE, so a
// transaction-mode worker given TxIsolation(Serializable) returns an error
// wrapping queue.ErrIsolation from Run at once, without opening a
// connection (the address is a listener that counts them). No SQL Server
// is needed: the refusal comes before any statement.
func TestSQLServerRefusesSerializable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	db, err := sql.Open("sqlserver", "sqlserver://sa:x@"+l.Addr().String()+"?database=master&dial+timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := msjobs.NewTxtaskQueue(db)
	handler := func(context.Context, *sql.Tx, *queue.Job[payload.Task]) error { return nil }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = q.Worker(handler, queue.TxIsolation(queue.Serializable)).Run(ctx)
	if !errors.Is(err, queue.ErrIsolation) || !strings.Contains(err.Error(), "READPAST") || !strings.Contains(err.Error(), "txtask") {
		t.Errorf("Run with SERIALIZABLE on SQL Server: %v, want queue.ErrIsolation naming the queue and READPAST", err)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the refusal opened %d connections", n)
	}
	for _, iso := range []queue.Isolation{queue.DefaultIsolation, queue.ReadCommitted, queue.RepeatableRead} {
		run, stop := context.WithCancel(context.Background())
		stop() // shut down at once: only the refusal is tested
		if err := q.Worker(handler, queue.TxIsolation(iso)).Run(run); errors.Is(err, queue.ErrIsolation) {
			t.Errorf("%v refused: %v", iso, err)
		}
	}
}

// TestMySQLConnectionSettings: an accessor over a MySQL connection opened
// without parseTime=true, with a loc other than UTC, or with
// clientFoundRows=true refuses to claim or read, with an error wrapping
// queue.ErrConnSettings that names the DSN setting, rather than failing
// on each scan; a worker logs that error. Opened as the README says, it
// works.
func TestMySQLConnectionSettings(t *testing.T) {
	e := open(t, "mysql")
	ctx := context.Background()
	base, err := mysql.ParseDSN(e.db.Address)
	if err != nil {
		t.Fatal(err)
	}
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		set        func(c *mysql.Config)
	}{
		{"no parseTime", "parseTime=true", func(c *mysql.Config) { c.ParseTime = false }},
		{"loc", "loc=UTC", func(c *mysql.Config) { c.Loc = kolkata }},
		{"clientFoundRows", "clientFoundRows", func(c *mysql.Config) { c.ClientFoundRows = true }},
		{"as the README says", "", func(c *mysql.Config) {}},
	}
	for _, c := range cases {
		cfg := base.Clone()
		cfg.ParseTime, cfg.Loc, cfg.InterpolateParams = true, time.UTC, true
		c.set(cfg)
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		q, tx := myjobs.NewTaskQueue(db), myjobs.NewTxtaskQueue(db)
		if _, err := q.Push(ctx, payload.Task{N: 1}); err != nil {
			t.Fatal(err)
		}
		res, err := tx.Push(ctx, payload.Task{N: 2})
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, err error) {
			t.Helper()
			if c.want == "" {
				if err != nil {
					t.Errorf("%s: %s: %v", c.name, what, err)
				}
				return
			}
			if !errors.Is(err, queue.ErrConnSettings) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %s: %v, want queue.ErrConnSettings naming %s", c.name, what, err, c.want)
			}
		}
		_, err = q.Claim(ctx, "node", 1)
		check("lease Claim", err)
		_, err = tx.Get(ctx, res.ID)
		check("Get", err)
		sqlTx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.Claim(ctx, sqlTx, 1)
		check("transaction-mode Claim", err)
		sqlTx.Rollback()
	}
}
