package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/queuegen/queuegen/integration/e2e/mysql/myjobs"
	"github.com/queuegen/queuegen/integration/e2e/payload"
	"github.com/queuegen/queuegen/integration/e2e/sqlserver/msjobs"
	"github.com/queuegen/queuegen/queue"
)

// TestGetMissingIsNotFound: Get of an id no job has returns an error for
// which errors.Is(err, queue.ErrNotFound) holds (and, as before, the
// driver's no-rows error), naming the queue and the id, in both modes.
func TestGetMissingIsNotFound(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		gets := map[string]func(context.Context, int64) (*queue.Job[payload.Task], error){"task": e.task.Get}
		switch {
		case e.pg != nil:
			gets["txtask"] = e.pg.q.Get
		case e.std != nil:
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
	addr, conns := countingListener(t)
	db, err := sql.Open("sqlserver", "sqlserver://sa:x@"+addr+"?database=master&dial+timeout=2")
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
		if c.name == "clientFoundRows" { // Get makes no write to check it
			if err != nil {
				t.Errorf("%s: Get: %v", c.name, err)
			}
		} else {
			check("Get", err)
		}
		sqlTx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.Claim(ctx, sqlTx, 1)
		check("transaction-mode Claim", err)
		sqlTx.Rollback()
	}
}

// keyLimits are the longest unique key and node id each engine's columns
// hold, in the unit the generated code counts (0: no limit).
var keyLimits = map[string]struct {
	key, node int
	// unit is what the limits count.
	unit string
}{
	"postgresql": {key: 2692, unit: "bytes"},
	"citus":      {key: 2684, unit: "bytes"},
	"mysql":      {key: 255, node: 255, unit: "characters"},
	"sqlserver":  {key: 255, node: 255, unit: "UTF-16 code units"},
}

// randomKey is a key of n units of unit, of random characters of two bytes
// (so one character, one UTF-16 unit) after prefix, which is counted in.
func randomKey(rng *rand.Rand, prefix string, n int, unit string) string {
	size := 1
	if unit == "bytes" {
		size = 2
	}
	var b strings.Builder
	b.WriteString(prefix)
	for range (n - len([]rune(prefix))*size) / size {
		b.WriteRune(rune(0x100 + rng.IntN(0x600)))
	}
	return b.String()
}

// TestLongKeysAndNodeIDs: a unique key (or a node id, where the column has
// a limit) as long as the engine's column holds is taken, and distinct from
// one that differs only in its last character; one unit longer is refused
// by Push (Claim) with queue.ErrTooLong naming the limit, before any
// statement: nothing is pushed (claimed). MariaDB's VARCHAR(255) used to
// fail with a raw "Data too long", or, outside strict mode, cut keys short
// so that distinct keys collided.
func TestLongKeysAndNodeIDs(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		lim := keyLimits[e.name]
		rng := rand.New(rand.NewPCG(1, 2))
		a := randomKey(rng, "", lim.key, lim.unit)
		b := strings.TrimSuffix(a, string([]rune(a)[len([]rune(a))-1:])) + "Ω"
		for _, key := range []string{a, b} {
			res, err := e.task.Push(ctx, payload.Task{N: 1}, queue.UniqueKey(key))
			if err != nil || res.Duplicate {
				t.Fatalf("key of %d %s: %+v, %v", lim.key, lim.unit, res, err)
			}
		}
		if res, err := e.task.Push(ctx, payload.Task{N: 1}, queue.UniqueKey(a)); err != nil || !res.Duplicate {
			t.Errorf("the same long key again: %+v, %v; want a duplicate", res, err)
		}
		long := a + "x"
		_, err := e.task.Push(ctx, payload.Task{N: 1}, queue.UniqueKey(long))
		var tl *queue.TooLongError
		if !errors.Is(err, queue.ErrTooLong) || !errors.As(err, &tl) || tl.Max != lim.key || tl.Length != lim.key+1 || tl.What != "unique key" {
			t.Errorf("key one %s too long: %v (%+v), want queue.ErrTooLong at %d", lim.unit, err, tl, lim.key)
		}
		if n, err := e.task.Depth(ctx); err != nil || n != 2 {
			t.Errorf("depth %d, %v: want the two keys pushed and nothing else", n, err)
		}

		node := strings.Repeat("n", 10000)
		if lim.node > 0 {
			node = randomKey(rng, "", lim.node, lim.unit)
			_, err := e.task.Claim(ctx, node+"x", 10)
			if !errors.Is(err, queue.ErrTooLong) || !strings.Contains(err.Error(), "locked_by") {
				t.Errorf("node id one %s too long: %v, want queue.ErrTooLong naming locked_by", lim.unit, err)
			}
			if n, err := e.task.Depth(ctx); err != nil || n != 2 {
				t.Errorf("depth %d, %v after a refused claim: want 2", n, err)
			}
		}
		jobs, err := e.task.Claim(ctx, node, 10)
		if err != nil || len(jobs) != 2 {
			t.Fatalf("claim by a node id of %d characters: %d jobs, %v", len([]rune(node)), len(jobs), err)
		}
		for _, j := range jobs {
			if j.LockedBy != node {
				t.Errorf("job %d locked by a different node id", j.ID)
			}
			got, err := e.task.Get(ctx, j.ID)
			if err != nil || got.LockedBy != node {
				t.Errorf("job %d read back locked by another node id (%v)", j.ID, err)
			}
		}
	})
}
