package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/queuegen/queuegen/queue"
)

// runDrainScale measures the drain as the table grows, each case on a
// fresh table, as a ratio of the first, in one run:
//
//   - base: Jobs jobs queued, all drained (the drain workload's shape);
//     100,000 by default;
//   - backlog-N, for each of Backlogs: N jobs queued, Jobs of them drained
//     from the front while the rest stay;
//   - kept-0 and kept-N: the bench_kept queue (on_success: keep), Jobs
//     queued, drained with no finished jobs and then with Kept finished
//     jobs kept in the table (kept-N is read against kept-0: completing
//     by UPDATE costs more than by DELETE whatever the history);
//   - snapshot: base again while another session holds a snapshot open
//     (for Hold, or until the drain ends).
//
// Each case prints the drain's summary line and a line with its ratio, the
// fill's time, and the table's and indexes' sizes before and after. With
// Chart set, the cases' rates are drawn as a bar chart in that PNG file.
func runDrainScale(ctx context.Context, t target, cfg Config) error {
	plain := func(opts ...queue.WorkerOption) (runner, func(), error) {
		w, _, closeW, err := t.worker(ctx, nil, false, opts...)
		return w, closeW, err
	}
	kept := func(opts ...queue.WorkerOption) (runner, func(), error) {
		return t.keptWorker(ctx, opts...), func() {}, nil
	}
	for _, b := range cfg.Backlogs {
		if b < cfg.Jobs {
			return fmt.Errorf("backlog %d is smaller than the %d jobs each case drains", b, cfg.Jobs)
		}
	}
	type scenario struct {
		name    string
		fill    func() error
		keptQ   bool
		against string // the case this one is a ratio of
		hold    bool
	}
	cases := []scenario{{name: "base", fill: func() error { return t.fill(ctx, cfg.Jobs) }}}
	for _, b := range cfg.Backlogs {
		cases = append(cases, scenario{name: fmt.Sprintf("backlog-%d", b), fill: func() error { return t.fill(ctx, b) }, against: "base"})
	}
	cases = append(cases,
		scenario{name: "kept-0", fill: func() error { return t.fillKept(ctx, 0, cfg.Jobs) }, keptQ: true, against: "base"},
		scenario{name: fmt.Sprintf("kept-%d", cfg.Kept), fill: func() error { return t.fillKept(ctx, cfg.Kept, cfg.Jobs) }, keptQ: true, against: "kept-0"},
		scenario{name: fmt.Sprintf("snapshot-%gs", cfg.Hold.Seconds()), fill: func() error { return t.fill(ctx, cfg.Jobs) }, against: "base", hold: true},
	)
	rates := map[string]float64{}
	var bars []bar
	for _, c := range cases {
		if err := t.setup(ctx); err != nil {
			return err
		}
		fillStart := time.Now()
		if err := c.fill(); err != nil {
			return fmt.Errorf("%s: filling: %w", c.name, err)
		}
		filled := time.Since(fillStart)
		table0, index0, err := t.sizes(ctx, c.keptQ)
		if err != nil {
			return err
		}
		release := func() {}
		if c.hold {
			hold, err := t.holdSnapshot(ctx)
			if err != nil {
				return err
			}
			// Released by the timer or after the drain, whichever comes
			// first.
			release = sync.OnceFunc(hold)
			defer time.AfterFunc(cfg.Hold, release).Stop()
		}
		newWorker := plain
		if c.keptQ {
			newWorker = kept
		}
		name := "drain-scale/" + c.name
		took, err := drainTimed(ctx, cfg, name, cfg.Jobs, newWorker)
		release()
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		table1, index1, err := t.sizes(ctx, c.keptQ)
		if err != nil {
			return err
		}
		cfg.summary(name, int64(cfg.Jobs), took, nil)
		rates[c.name] = float64(cfg.Jobs) / took.Seconds()
		ratio, note := "", "1"
		if c.against != "" {
			ratio = fmt.Sprintf("%.2f× %s; ", rates[c.name]/rates[c.against], c.against)
			note = fmt.Sprintf("%.2fx %s", rates[c.name]/rates[c.against], c.against)
		}
		bars = append(bars, bar{label: c.name, value: rates[c.name], note: note})
		fmt.Fprintf(cfg.notes(), "  %s: %sfilled in %.1f s; table %s → %s, indexes %s → %s\n",
			name, ratio, filled.Seconds(), mb(table0), mb(table1), mb(index0), mb(index1))
	}
	if cfg.Chart == "" {
		return nil
	}
	f, err := os.Create(cfg.Chart)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("queuegen drain-scale: %d jobs drained per case (batch %d, concurrency %d)", cfg.Jobs, cfg.Batch, cfg.Workers)
	if err := writeChart(f, title, "jobs/s", bars); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }
