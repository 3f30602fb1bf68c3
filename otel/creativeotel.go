// Package creativeotel gives the calls of a creative-go Client OpenTelemetry
// spans and metrics in the GenAI semantic conventions: a client span per
// call, a child span per attempt with its pay-once verdict, the
// gen_ai.client.operation.duration histogram with buckets up to ten
// minutes, a count of calls by verdict and, given the prices, what the
// calls cost. A batch's progress has metrics of its own (BatchMetrics).
//
//	tel, err := creativeotel.New(creativeotel.WithTracerProvider(tp), creativeotel.WithMeterProvider(mp))
//	c, err := creative.New(tel.ClientOption())
//
// It is a module of its own, so that the SDK's go.mod holds no
// OpenTelemetry. Nothing global is set: without WithTracerProvider and
// WithMeterProvider it uses the global providers, as otelhttp does.
// docs/telemetry.md has the names, the attributes and the span tree of a
// call and of a batch.
package creativeotel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/ops"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/creativegen/creative-go/otel"

// Attributes of the package's own, beside the conventions'.
const (
	// AttrOperation is the service's operation ("image/text-to-image"),
	// or a raw call's method and path, without its query.
	AttrOperation = attribute.Key("creative.operation")
	// AttrVerdict is what an attempt or a call may have cost: answered,
	// not_sent, refused or unknown (creative.Verdict).
	AttrVerdict = attribute.Key("creative.verdict")
	// AttrAttempts is how many attempts a call made.
	AttrAttempts = attribute.Key("creative.attempts")
	// AttrRetry says another attempt followed this one.
	AttrRetry = attribute.Key("creative.retry")
	// AttrReason says why an attempt was retried, or why not.
	AttrReason = attribute.Key("creative.retry_reason")
	// AttrRequestID is the request id of the answer (X-Request-Id or the
	// like), redacted.
	AttrRequestID = attribute.Key("creative.request_id")
	// AttrPaid says whether a cost was surely paid ("yes", an answer) or
	// maybe ("maybe", an outcome unknown or a 2xx answer that failed).
	AttrPaid = attribute.Key("creative.paid")
)

// Metric names of the package's own, beside gen_ai.client.operation.duration.
const (
	// MetricCalls counts calls by operation and verdict.
	MetricCalls = "creative.client.calls"
	// MetricCost adds up the price of each attempt that was or may have
	// been paid, by operation and AttrPaid, in the unit of the prices.
	MetricCost = "creative.client.cost"
)

// DurationBuckets are the bounds, in seconds, of the
// gen_ai.client.operation.duration histogram: the conventions' (0.01 to
// 81.92, each twice the last) and on to 655.36, past ten minutes, since a
// video or a long piece of music takes minutes.
var DurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84, 327.68, 655.36}

// An Option configures New.
type Option func(*config) error

type config struct {
	tp     trace.TracerProvider
	mp     metric.MeterProvider
	prices map[string]float64
}

// WithTracerProvider makes the spans with tp instead of the global
// provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if isNil(tp) {
			return errors.New("creativeotel: WithTracerProvider: nil provider")
		}
		c.tp = tp
		return nil
	}
}

// WithMeterProvider makes the metrics with mp instead of the global
// provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if isNil(mp) {
			return errors.New("creativeotel: WithMeterProvider: nil provider")
		}
		c.mp = mp
		return nil
	}
}

// isNil reports whether v is nil, or a nil pointer in an interface (a
// *sdktrace.TracerProvider not made yet), whose methods would panic.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// WithPrices counts what calls cost (MetricCost): the price of one call of
// each operation, by its name ("image/text-to-image"), the table the batch
// runner takes (batch.Budget.Prices) and the command line's --price
// OP=PRICE. An operation without a price costs nothing here.
func WithPrices(prices map[string]float64) Option {
	return func(c *config) error {
		for op, p := range prices {
			if _, ok := ops.Lookup(op); !ok {
				return fmt.Errorf("creativeotel: WithPrices: a price for %q, which is no operation", op)
			}
			if !(p >= 0) || math.IsInf(p, 0) {
				return fmt.Errorf("creativeotel: WithPrices: the price of %s must be 0 or above, got %v", op, p)
			}
		}
		c.prices = prices
		return nil
	}
}

// Telemetry makes the spans and metrics of calls. It is safe for
// concurrent use; make one and give it to every Client.
type Telemetry struct {
	tracer   trace.Tracer
	duration genaiconv.ClientOperationDuration
	calls    metric.Int64Counter
	cost     metric.Float64Counter
	prices   map[string]float64
	meter    metric.Meter
	trace    *creative.CallTrace
	total    spentTotal // what MetricCost added up, for BatchMetrics
}

// New returns the telemetry that opts configure.
func New(opts ...Option) (*Telemetry, error) {
	var c config
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	t := &Telemetry{tracer: c.tp.Tracer(ScopeName), meter: c.mp.Meter(ScopeName), prices: c.prices}
	var err error
	t.duration, err = genaiconv.NewClientOperationDuration(t.meter, metric.WithExplicitBucketBoundaries(DurationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("creativeotel: %w", err)
	}
	if t.calls, err = t.meter.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Calls of the Creative Generation Service, by operation and verdict.")); err != nil {
		return nil, fmt.Errorf("creativeotel: %w", err)
	}
	if t.cost, err = t.meter.Float64Counter(MetricCost, metric.WithUnit("{price}"),
		metric.WithDescription("What calls cost, priced by the table given, by operation and whether surely or maybe paid.")); err != nil {
		return nil, fmt.Errorf("creativeotel: %w", err)
	}
	t.trace = &creative.CallTrace{
		CallStart:    t.callStart,
		AttemptStart: t.attemptStart,
		AttemptDone:  t.attemptDone,
		CallDone:     t.callDone,
	}
	return t, nil
}

// CallTrace returns the hooks that make the spans and metrics, for
// creative.WithCallTrace; nil for a nil Telemetry.
func (t *Telemetry) CallTrace() *creative.CallTrace {
	if t == nil {
		return nil
	}
	return t.trace
}

// ClientOption returns the option that gives every call of a Client (in
// creative.New), or one call, its spans and metrics. For a nil Telemetry
// (one whose New failed) the option fails the Client or the call.
func (t *Telemetry) ClientOption() creative.Option { return creative.WithCallTrace(t.CallTrace()) }

// callState is what a call's span keeps between its hooks, in its context.
type callState struct {
	start     time.Time
	operation string // gen_ai.operation.name
	attrs     []attribute.KeyValue
}

type stateKey struct{}

func (t *Telemetry) callStart(ctx context.Context, c creative.CallInfo) context.Context {
	name, output := OperationName(c.Operation)
	op := c.Operation
	if name == "creative.raw" {
		op = rawOperation(op)
	}
	st := &callState{start: time.Now(), operation: name}
	st.attrs = []attribute.KeyValue{
		AttrOperation.String(op),
		semconv.ServerAddress(c.Host),
		semconv.ServerPort(c.Port),
	}
	attrs := append([]attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(name),
		semconv.GenAIProviderNameKey.String(ProviderName),
	}, st.attrs...)
	if output != "" {
		attrs = append(attrs, semconv.GenAIOutputTypeKey.String(output))
	}
	ctx, _ = t.tracer.Start(ctx, name+" "+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, stateKey{}, st)
}

// rawOperation is how a raw call is named in spans and metrics: its
// method and path, the path with its leading slash and without its query.
// A query's values (ids, tokens) would make a series of each call, and
// may be the caller's secrets.
func rawOperation(op string) string {
	op, _, _ = strings.Cut(op, "?")
	if method, path, ok := strings.Cut(op, " "); ok && !strings.HasPrefix(path, "/") {
		op = method + " /" + path
	}
	return op
}

func (t *Telemetry) attemptStart(ctx context.Context, a creative.AttemptInfo) context.Context {
	ctx, _ = t.tracer.Start(ctx, "attempt", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.HTTPRequestResendCount(a.Attempt-1)))
	return ctx
}

func (t *Telemetry) attemptDone(ctx context.Context, a creative.AttemptInfo) {
	span := trace.SpanFromContext(ctx)
	attrs := []attribute.KeyValue{AttrVerdict.String(string(a.Verdict)), AttrRetry.Bool(a.Retry)}
	if a.Reason != "" {
		attrs = append(attrs, AttrReason.String(a.Reason))
	}
	if a.StatusCode != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(a.StatusCode))
	}
	if a.RequestID != "" {
		attrs = append(attrs, AttrRequestID.String(a.RequestID))
	}
	failed := a.Verdict != creative.VerdictAnswered || a.StatusCode >= 400 || a.Err != nil
	if failed {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(a.Verdict, a.StatusCode, a.Err)))
		span.SetStatus(codes.Error, string(a.Verdict))
	}
	span.SetAttributes(attrs...)
	span.End()
	t.addCost(ctx, a)
}

// addCost counts the price of an attempt that was paid (a success) or may
// have been: an outcome unknown, or a 2xx answer that failed (not what the
// operation promises, or an envelope that says the service failed), which
// the batch runner too counts as maybe paid (batch.Classify: Unknown).
func (t *Telemetry) addCost(ctx context.Context, a creative.AttemptInfo) {
	price, ok := t.prices[a.Operation]
	if !ok {
		return
	}
	answered := a.Verdict == creative.VerdictAnswered && a.StatusCode >= 200 && a.StatusCode <= 299
	paid := ""
	switch {
	case answered && a.Err == nil:
		paid = "yes"
	case answered, a.Verdict == creative.VerdictUnknown:
		paid = "maybe"
	default:
		return
	}
	t.cost.Add(ctx, price, metric.WithAttributes(AttrOperation.String(a.Operation), AttrPaid.String(paid)))
	t.total.add(price)
}

func (t *Telemetry) callDone(ctx context.Context, c creative.CallInfo, err error) {
	span := trace.SpanFromContext(ctx)
	st, _ := ctx.Value(stateKey{}).(*callState)
	if st == nil {
		return
	}
	attrs := append(st.attrs[:len(st.attrs):len(st.attrs)], AttrVerdict.String(string(c.Verdict)))
	spanAttrs := []attribute.KeyValue{AttrVerdict.String(string(c.Verdict)), AttrAttempts.Int(c.Attempts)}
	if c.StatusCode != 0 {
		spanAttrs = append(spanAttrs, semconv.HTTPResponseStatusCode(c.StatusCode))
	}
	if c.RequestID != "" {
		spanAttrs = append(spanAttrs, AttrRequestID.String(c.RequestID))
	}
	durAttrs := st.attrs
	if err != nil {
		et := semconv.ErrorTypeKey.String(errorType(c.Verdict, c.StatusCode, err))
		spanAttrs = append(spanAttrs, et)
		durAttrs = append(durAttrs[:len(durAttrs):len(durAttrs)], et)
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(spanAttrs...)
	span.End()
	t.duration.Record(ctx, time.Since(st.start).Seconds(), genaiconv.OperationNameAttr(st.operation), genaiconv.ProviderNameAttr(ProviderName), durAttrs...)
	t.calls.Add(ctx, 1, metric.WithAttributes(attrs...))
}

// errorType is error.type, of low cardinality: the verdict of a failure
// that may have cost something or nothing, else the status of the answer
// (as the HTTP conventions do), else the kind of error.
func errorType(v creative.Verdict, status int, err error) string {
	switch {
	case v == creative.VerdictUnknown:
		return "outcome_unknown"
	case v == creative.VerdictNotSent:
		if errors.Is(err, context.Canceled) {
			return "canceled"
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return "timeout"
		}
		return "not_sent"
	case v == creative.VerdictRefused && status == 0:
		return "refused"
	case status >= 400 || (status != 0 && status < 200) || (status >= 300 && status < 400):
		return strconv.Itoa(status)
	case errors.Is(err, creative.ErrUnexpectedResponse):
		return "unexpected_response"
	case errors.Is(err, creative.ErrInvalidRequest):
		return "invalid_request"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case status == http.StatusOK:
		return "unexpected_response"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// Propagation returns middleware that puts the trace context of each
// attempt (its span, under the call's) into the attempt's request headers
// with p, such as propagation.TraceContext{} for the W3C traceparent
// header, so that the service's own traces can join the caller's. Give it
// with creative.WithMiddleware beside ClientOption.
func Propagation(p propagation.TextMapPropagator) creative.Middleware {
	return func(req *http.Request, next creative.MiddlewareNext) (*http.Response, error) {
		p.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
		return next(req)
	}
}
