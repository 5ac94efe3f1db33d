package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/queuegen/queuegen/queue"
)

// otelHooks wires a worker's hooks to OpenTelemetry instruments. With a
// real exporter (OTLP, Prometheus) behind the meter provider, these are
// the queue's dashboards.
func otelHooks(meter metric.Meter) queue.Hooks {
	started, _ := meter.Int64Counter("queuegen.jobs.started", metric.WithDescription("jobs handed to a handler"))
	finished, _ := meter.Int64Counter("queuegen.jobs.finished", metric.WithDescription("handler runs, by outcome"))
	took, _ := meter.Float64Histogram("queuegen.job.duration", metric.WithUnit("s"))
	batch, _ := meter.Int64Histogram("queuegen.batch.size", metric.WithDescription("jobs per claim, complete, fail and heartbeat statement"))
	depth, _ := meter.Int64Gauge("queuegen.queue.depth", metric.WithDescription("jobs due now"))
	return queue.Hooks{
		JobStarted: func(ctx context.Context, j queue.JobInfo) context.Context {
			started.Add(ctx, 1, metric.WithAttributes(attribute.String("queue", j.Queue)))
			return ctx
		},
		JobFinished: func(ctx context.Context, j queue.JobInfo, o queue.Outcome, d time.Duration, _ error) {
			attrs := metric.WithAttributes(attribute.String("queue", j.Queue), attribute.String("outcome", string(o)))
			finished.Add(ctx, 1, attrs)
			took.Record(ctx, d.Seconds(), attrs)
		},
		Batch: func(q, kind string, size int) {
			batch.Record(context.Background(), int64(size), metric.WithAttributes(attribute.String("queue", q), attribute.String("kind", kind)))
		},
		Depth: func(q string, n int64) {
			depth.Record(context.Background(), n, metric.WithAttributes(attribute.String("queue", q)))
		},
	}
}

// printMetrics prints the counters a reader collected, one per line.
func printMetrics(ctx context.Context, reader sdkmetric.Reader, w io.Writer) error {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					lines = append(lines, fmt.Sprintf("metric %s{%s} %d", m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Value))
				}
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	return nil
}
