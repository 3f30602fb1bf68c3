package creativeotel

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/creativegen/creative-go/batch"
)

// Metrics of a batch run.
const (
	// MetricBatchJobs counts the jobs of a run as they start, end or are
	// skipped (AttrBatchEvent), by the state they end in (AttrBatchState).
	MetricBatchJobs = "creative.batch.jobs"
	// MetricBatchMaybePaid counts the jobs whose attempt ended maybe paid:
	// unknown, or claimed by a worker that is gone.
	MetricBatchMaybePaid = "creative.batch.jobs.maybe_paid"
	// MetricBatchSpent is what the calls of the Telemetry cost since the
	// BatchMetrics was made (MetricCost, surely and maybe paid), in the
	// unit of the prices: the run's spending, when its calls are the
	// Telemetry's (Options.CallOptions holds ClientOption).
	MetricBatchSpent = "creative.batch.spent"
	// MetricBatchSpendLimit is the cap on spending (Budget.MaxSpend), when
	// there is one.
	MetricBatchSpendLimit = "creative.batch.spend.limit"
	// MetricBatchSummary is the count of jobs by how they stand at the
	// run's end (batch.Summary), by AttrBatchState.
	MetricBatchSummary = "creative.batch.summary"
)

// Attributes of batch metrics.
const (
	// AttrBatchEvent is started, ended or skipped.
	AttrBatchEvent = attribute.Key("creative.batch.event")
	// AttrBatchState is a job's state (batch.State) or, for
	// MetricBatchSummary, a field of batch.Summary in lower case.
	AttrBatchState = attribute.Key("creative.batch.state")
)

// BatchMetrics turns a batch run's events into metrics: give its OnEvent
// to batch.Options.OnEvent, and its Summary the run's batch.Summary at
// the end. Give the run's Client (or Options.CallOptions) the
// Telemetry's ClientOption too, so that each job's calls have their spans
// and the spending is counted.
type BatchMetrics struct {
	jobs, maybePaid metric.Int64Counter
	spentSince      float64 // the Telemetry's total when the BatchMetrics was made
	tel             *Telemetry
	mu              sync.Mutex
	summary         *batch.Summary
	reg             metric.Registration
}

// NewBatchMetrics returns the metrics of a run capped by budget (its
// MaxSpend, when above 0, is MetricBatchSpendLimit). The prices of the
// budget are the Telemetry's own (WithPrices): give it the same table.
func (t *Telemetry) NewBatchMetrics(budget batch.Budget) (*BatchMetrics, error) {
	m := &BatchMetrics{tel: t, spentSince: t.spent()}
	var err error
	if m.jobs, err = t.meter.Int64Counter(MetricBatchJobs, metric.WithUnit("{job}"),
		metric.WithDescription("Jobs of a batch run as they start, end or are skipped, by state.")); err != nil {
		return nil, fmt.Errorf("creativeotel: %w", err)
	}
	if m.maybePaid, err = t.meter.Int64Counter(MetricBatchMaybePaid, metric.WithUnit("{job}"),
		metric.WithDescription("Jobs of a batch run whose attempt ended maybe paid.")); err != nil {
		return nil, fmt.Errorf("creativeotel: %w", err)
	}
	spent, err := t.meter.Float64ObservableGauge(MetricBatchSpent, metric.WithUnit("{price}"),
		metric.WithDescription("What the run's calls cost so far, surely and maybe paid."))
	if err != nil {
		return nil, fmt.Errorf("creativeotel: %w", err)
	}
	limit, err := t.meter.Float64ObservableGauge(MetricBatchSpendLimit, metric.WithUnit("{price}"),
		metric.WithDescription("The run's cap on spending."))
	if err != nil {
		return nil, fmt.Errorf("creativeotel: %w", err)
	}
	summary, err := t.meter.Int64ObservableGauge(MetricBatchSummary, metric.WithUnit("{job}"),
		metric.WithDescription("Jobs by how they stand at the run's end."))
	if err != nil {
		return nil, fmt.Errorf("creativeotel: %w", err)
	}
	m.reg, err = t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveFloat64(spent, t.spent()-m.spentSince)
		if budget.MaxSpend > 0 {
			o.ObserveFloat64(limit, budget.MaxSpend)
		}
		m.mu.Lock()
		s := m.summary
		m.mu.Unlock()
		if s != nil {
			for _, f := range summaryFields(s) {
				o.ObserveInt64(summary, int64(f.n), metric.WithAttributes(AttrBatchState.String(f.name)))
			}
		}
		return nil
	}, spent, limit, summary)
	if err != nil {
		return nil, fmt.Errorf("creativeotel: %w", err)
	}
	return m, nil
}

// OnEvent counts a job's event; it is quick, as batch.Options.OnEvent
// must be.
func (m *BatchMetrics) OnEvent(ev batch.Event) {
	ctx := context.Background()
	event := map[batch.EventType]string{batch.JobStarted: "started", batch.JobEnded: "ended", batch.JobSkipped: "skipped"}[ev.Type]
	if event == "" {
		return
	}
	m.jobs.Add(ctx, 1, metric.WithAttributes(AttrBatchEvent.String(event), AttrBatchState.String(string(ev.Record.State)),
		AttrOperation.String(ev.Record.Op)))
	if ev.Type == batch.JobEnded && (ev.Record.State == batch.Unknown || ev.Record.State == batch.Claimed) {
		m.maybePaid.Add(ctx, 1, metric.WithAttributes(AttrOperation.String(ev.Record.Op)))
	}
}

// Summary keeps the run's summary, reported as MetricBatchSummary from
// then on.
func (m *BatchMetrics) Summary(s batch.Summary) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.summary = &s
}

// Close stops reporting the gauges.
func (m *BatchMetrics) Close() error { return m.reg.Unregister() }

type summaryField struct {
	name string
	n    int
}

func summaryFields(s *batch.Summary) []summaryField {
	return []summaryField{
		{"jobs", s.Jobs}, {"done", s.Done}, {"done_before", s.DoneBefore}, {"failed", s.Failed},
		{"refused", s.Refused}, {"unknown", s.Unknown}, {"claimed", s.Claimed}, {"waiting", s.Waiting},
		{"lost", s.Lost}, {"missing", s.Missing}, {"elsewhere", s.Elsewhere}, {"not_started", s.NotStarted},
		{"requests", s.Requests},
	}
}

// spentTotal is what a Telemetry's calls cost so far, surely and maybe
// paid, as the bits of a float64.
type spentTotal struct{ bits atomic.Uint64 }

func (s *spentTotal) add(v float64) {
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (t *Telemetry) spent() float64 { return math.Float64frombits(t.total.bits.Load()) }
