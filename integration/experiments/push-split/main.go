// Command push-split splits the gap between queuegen's pushes and the
// raw-SQL ceiling's (pg-limit's push-1 and push-100) into its parts: an
// experiment, not part of queuegen. BENCHMARKS.md ("Where each job's CPU
// goes") has its figures.
//
// It creates the bench's schema (queuegen_bench, with the tables and
// statements queuegen generates for the bench's queues) and, beside it, a
// table in a schema of its own, push_split.ceiling: the six columns of
// the ceiling's table. Then it runs each variant below for -seconds from
// -clients connections, each client on a connection of its own, in
// -rounds rounds that alternate the variants, and prints each variant's
// rate as a ratio of its group's ceiling in the same round:
//
//	go run ./integration/experiments/push-split -db postgres://postgres@127.0.0.1/qgbench
//
// It drops both schemas at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuegen/queuegen/internal/bench"
	"github.com/queuegen/queuegen/internal/bench/jobs/jobsdb"
)

// ceilingTable is the ceiling's table: a payload and the claim's
// bookkeeping, one index for the claim.
const ceilingTable = `
DROP SCHEMA IF EXISTS push_split CASCADE;
CREATE SCHEMA push_split;
CREATE TABLE push_split.ceiling (
    id           bigserial   PRIMARY KEY,
    created_at   timestamptz NOT NULL DEFAULT now(),
    run_after    timestamptz NOT NULL DEFAULT now(),
    locked_until timestamptz,
    attempts     integer     NOT NULL DEFAULT 0,
    payload      jsonb       NOT NULL
);
CREATE INDEX ceiling_ready ON push_split.ceiling (run_after, id) WHERE locked_until IS NULL;
`

// queue is the bench queue's table, as queuegen generates it.
const queue = bench.Schema + ".bench_queue"

// variant is one way to push: jobs is how many one call pushes.
type variant struct {
	group, name string
	jobs        int
	push        func(ctx context.Context, c *pgx.Conn) error
}

var payload = []byte(`{"to":"a@example.com","n":1}`)

var variants = []variant{
	{"push-1", "ceiling: pg-limit's statement", 1, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO push_split.ceiling (payload) VALUES ('{"to":"a@example.com","n":1}')`)
		return err
	}},
	{"push-1", "queuegen's Push statement, queuegen's table", 1, func(ctx context.Context, c *pgx.Conn) error {
		_, err := jobsdb.New(c).PushBench(ctx, jobsdb.PushBenchParams{Recipient: "a@example.com", N: 1, MaxAttempts: 25})
		return err
	}},
	{"push-1", "a bare INSERT, queuegen's table", 1, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO `+queue+` (recipient, n, max_attempts) VALUES ($1, $2, $3)`,
			"a@example.com", int32(1), int32(25))
		return err
	}},
	{"push-100", "ceiling: pg-limit's statement (rows made by the server)", 100, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO push_split.ceiling (payload)
SELECT '{"to":"a@example.com","n":1}'::jsonb FROM generate_series(1, 100)`)
		return err
	}},
	{"push-100", "rows made by the server, queuegen's table", 100, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO `+queue+` (recipient, n, priority, max_attempts)
SELECT 'a@example.com', 1, 0, 25 FROM generate_series(1, 100)`)
		return err
	}},
	{"push-100", "COPY of 100 client rows, the ceiling's table", 100, func(ctx context.Context, c *pgx.Conn) error {
		rows := make([][]any, 100)
		for i := range rows {
			rows[i] = []any{payload}
		}
		_, err := c.CopyFrom(ctx, pgx.Identifier{"push_split", "ceiling"}, []string{"payload"}, pgx.CopyFromRows(rows))
		return err
	}},
	{"push-100", "COPY of 100 client rows, queuegen's table (PushMany)", 100, func(ctx context.Context, c *pgx.Conn) error {
		rows := make([]jobsdb.PushManyBenchParams, 100)
		for i := range rows {
			rows[i] = jobsdb.PushManyBenchParams{Recipient: "a@example.com", N: int32(i), MaxAttempts: 25}
		}
		_, err := jobsdb.New(c).PushManyBench(ctx, rows)
		return err
	}},
	{"push-100", "INSERT of 100 client rows as arrays (unnest), queuegen's table", 100, func(ctx context.Context, c *pgx.Conn) error {
		rec := make([]string, 100)
		ns := make([]int32, 100)
		for i := range rec {
			rec[i], ns[i] = "a@example.com", int32(i)
		}
		_, err := c.Exec(ctx, `WITH r AS (SELECT unnest($1::text[]) AS recipient, unnest($2::integer[]) AS n)
INSERT INTO `+queue+` (recipient, n, priority, max_attempts) SELECT recipient, n, $3, $4 FROM r`,
			rec, ns, int16(0), int32(25))
		return err
	}},
}

func main() {
	db := flag.String("db", os.Getenv("DATABASE_URL"), "the database URL (default $DATABASE_URL)")
	secs := flag.Duration("seconds", 10*time.Second, "how long each variant runs in each round")
	rounds := flag.Int("rounds", 3, "rounds; each runs every variant once")
	clients := flag.Int("clients", 8, "connections pushing at once")
	only := flag.String("only", "", "run only the variants whose group or name contains this (each group's first, its ceiling, always runs)")
	flag.Parse()
	if err := run(context.Background(), *db, *secs, *rounds, *clients, *only); err != nil {
		fmt.Fprintln(os.Stderr, "push-split:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, db string, secs time.Duration, rounds, clients int, only string) error {
	if db == "" {
		return fmt.Errorf("no database: pass -db or set DATABASE_URL")
	}
	cfg, err := pgxpool.ParseConfig(db)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(clients)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	drop, err := bench.SetupPostgres(ctx, pool)
	if err != nil {
		return err
	}
	defer drop()
	if _, err := pool.Exec(ctx, ceilingTable); err != nil {
		return err
	}
	defer pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA push_split CASCADE`)
	for r := 1; r <= rounds; r++ {
		ceiling := map[string]float64{}
		for _, v := range variants {
			_, seen := ceiling[v.group]
			if seen && !strings.Contains(v.group+" "+v.name, only) {
				continue
			}
			if _, err := pool.Exec(ctx, `TRUNCATE push_split.ceiling, `+queue); err != nil {
				return err
			}
			m, err := measure(ctx, pool, v, secs, clients)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", v.group, v.name, err)
			}
			if !seen {
				ceiling[v.group] = m.rate
			}
			fmt.Printf("round %d %-8s %8.0f jobs/s %.2fx  CPU/job: machine %5.1f µs, this process %5.1f µs  %s\n",
				r, v.group, m.rate, m.rate/ceiling[v.group], m.machine, m.client, v.name)
		}
	}
	return nil
}

// measurement is one variant's rate and its CPU time per job: the whole
// machine's (from /proc/stat, the server's included) and this process's.
type measurement struct {
	rate, machine, client float64
}

// measure runs v from clients connections for d.
func measure(ctx context.Context, pool *pgxpool.Pool, v variant, d time.Duration, clients int) (measurement, error) {
	busy0, self0 := machineBusy(), selfCPU()
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, clients)
	start := time.Now()
	deadline := start.Add(d)
	for i := range clients {
		wg.Go(func() {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Release()
			for time.Now().Before(deadline) {
				if err := v.push(ctx, conn.Conn()); err != nil {
					errs[i] = err
					return
				}
				done.Add(int64(v.jobs))
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	busy, self := machineBusy()-busy0, selfCPU()-self0
	for _, err := range errs {
		if err != nil {
			return measurement{}, err
		}
	}
	jobs := float64(done.Load())
	return measurement{
		rate:    jobs / took.Seconds(),
		machine: float64(busy.Microseconds()) / jobs,
		client:  float64(self.Microseconds()) / jobs,
	}, nil
}

// machineBusy is the CPU time all cores have spent busy since boot (zero
// where /proc/stat cannot be read). Linux counts it in ticks of 1/100 s.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var ticks int64
	for i, f := range strings.Fields(line)[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// selfCPU is the CPU time this process has used, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
