package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// PeriodicJob is a job pushed on a schedule. Generated accessors list the
// spec's periodic jobs with their PeriodicJobs method.
type PeriodicJob struct {
	// Queue and Name are the job's queue and its name in the spec.
	Queue, Name string
	// Schedule says when its ticks fall.
	Schedule Schedule
	// Push pushes the job for tick unless it was pushed already, and
	// reports whether this call pushed it.
	Push func(ctx context.Context, tick time.Time) (bool, error)
}

// Scheduler pushes periodic jobs at their ticks. Run one on every node:
// each tick is pushed exactly once across all of them, because pushing a
// tick first advances the job's recorded last tick in the same transaction
// (queuegen_periodic), and only one node can advance it.
type Scheduler struct {
	jobs   []PeriodicJob
	logger *slog.Logger
}

// NewScheduler returns a scheduler of jobs; logger may be nil.
func NewScheduler(jobs []PeriodicJob, logger *slog.Logger) *Scheduler {
	if logger == nil {
		logger = slog.Default()
	}
	return &Scheduler{jobs: jobs, logger: logger}
}

// Run pushes ticks until ctx is cancelled. A tick missed while no node ran
// is not pushed late: the schedule resumes at the next one.
func (s *Scheduler) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, j := range s.jobs {
		wg.Go(func() { s.run(ctx, j) })
	}
	wg.Wait()
	return nil
}

func (s *Scheduler) run(ctx context.Context, j PeriodicJob) {
	log := s.logger.With("queue", j.Queue, "periodic", j.Name)
	for {
		tick := j.Schedule.Next(time.Now())
		if tick.IsZero() {
			log.Error("the schedule never fires")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(tick)):
		}
		// Retry a failing database until the next tick is due.
		next := j.Schedule.Next(tick)
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 10*time.Second) {
			pushed, err := j.Push(ctx, tick)
			if err == nil {
				if pushed {
					log.Debug("pushed periodic job", "tick", tick)
				}
				break
			}
			if ctx.Err() != nil || time.Now().Add(backoff).After(next) {
				log.Error("periodic job not pushed for this tick", "tick", tick, "err", err)
				break
			}
			log.Warn("pushing periodic job failed; retrying", "tick", tick, "err", err)
			sleep(ctx, backoff)
		}
	}
}
