package creativeotel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/ledgertest"
	"github.com/creativegen/creative-go/creativetest"
	creativeotel "github.com/creativegen/creative-go/otel"
)

// telemetry returns a Telemetry recording into memory.
func telemetry(t *testing.T, opts ...creativeotel.Option) (*creativeotel.Telemetry, *tracetest.SpanRecorder, *sdkmetric.ManualReader) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	tel, err := creativeotel.New(append([]creativeotel.Option{
		creativeotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))),
		creativeotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
	}, opts...)...)
	require.NoError(t, err)
	return tel, sr, reader
}

func tree(spans []sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	printTree(&b, spans)
	return b.String()
}

// collect returns the metrics of reader by name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// value returns the value of the data point of a sum or gauge whose
// attributes hold want.
func value[N int64 | float64](t *testing.T, data metricdata.Aggregation, want ...attribute.KeyValue) N {
	t.Helper()
	var points []metricdata.DataPoint[N]
	switch d := data.(type) {
	case metricdata.Sum[N]:
		points = d.DataPoints
	case metricdata.Gauge[N]:
		points = d.DataPoints
	default:
		t.Fatalf("not a sum or gauge: %T", data)
	}
	var total N
	found := false
	for _, p := range points {
		ok := true
		for _, kv := range want {
			if v, has := p.Attributes.Value(kv.Key); !has || v != kv.Value {
				ok = false
			}
		}
		if ok {
			total += p.Value
			found = true
		}
	}
	require.True(t, found, "no point with %v", want)
	return total
}

func TestACallWithARetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, sr, reader := telemetry(t, creativeotel.WithPrices(map[string]float64{"audio/text-to-music": 0.25}))
		srv := creativetest.NewServer(creativetest.WithInMemoryNetwork())
		defer srv.Close()
		srv.Fail("audio/text-to-music", creativetest.Fault{Status: http.StatusServiceUnavailable})
		c := srv.Client(tel.ClientOption(), creative.WithRetryWait(time.Millisecond, 2*time.Millisecond))
		defer c.CloseIdleConnections()

		_, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "calm piano"})
		require.NoError(t, err)
		spans := sr.Ended()
		require.Len(t, spans, 3)
		require.Equal(t, `generate_content audio/text-to-music [gen_ai.operation.name=generate_content gen_ai.output.type=music creative.operation=audio/text-to-music http.response.status_code=200 creative.verdict=answered creative.attempts=2]
  attempt [http.request.resend_count=0 http.response.status_code=503 creative.verdict=refused creative.retry=true creative.retry_reason=refused (HTTP 503) error.type=503]
  attempt [http.request.resend_count=1 http.response.status_code=200 creative.verdict=answered creative.retry=false]
`, tree(spans))
		call := spans[2]
		require.Equal(t, trace.SpanKindClient, call.SpanKind())
		attrs := attribute.NewSet(call.Attributes()...)
		host, _ := attrs.Value("server.address")
		require.NotEmpty(t, host.AsString())
		port, _ := attrs.Value("server.port")
		require.Positive(t, port.AsInt64())
		provider, _ := attrs.Value("gen_ai.provider.name")
		require.Equal(t, "creative", provider.AsString())
		id, _ := attrs.Value("creative.request_id")
		require.NotEmpty(t, id.AsString(), "the fake sends a request id")

		m := collect(t, reader)
		h := m["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
		require.Len(t, h.DataPoints, 1)
		require.Equal(t, creativeotel.DurationBuckets, h.DataPoints[0].Bounds)
		require.GreaterOrEqual(t, slices.Max(h.DataPoints[0].Bounds), 600.0, "the buckets reach ten minutes")
		require.EqualValues(t, 1, h.DataPoints[0].Count)
		op, _ := h.DataPoints[0].Attributes.Value("gen_ai.operation.name")
		require.Equal(t, "generate_content", op.AsString())
		require.EqualValues(t, 1, value[int64](t, m[creativeotel.MetricCalls], creativeotel.AttrVerdict.String("answered")))
		require.Equal(t, 0.25, value[float64](t, m[creativeotel.MetricCost], creativeotel.AttrPaid.String("yes")), "the refused attempt costs nothing")

		// A 500: the outcome is unknown, not retried, maybe paid.
		srv.Fail("audio/text-to-music", creativetest.Fault{Status: http.StatusInternalServerError})
		sr.Reset()
		_, err = c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "calm piano"})
		require.ErrorIs(t, err, creative.ErrOutcomeUnknown)
		require.Equal(t, `generate_content audio/text-to-music [gen_ai.operation.name=generate_content gen_ai.output.type=music creative.operation=audio/text-to-music http.response.status_code=500 creative.verdict=unknown creative.attempts=1 error.type=outcome_unknown]
  attempt [http.request.resend_count=0 http.response.status_code=500 creative.verdict=unknown creative.retry=false creative.retry_reason=outcome unknown: not sent again, the service may have done the work error.type=outcome_unknown]
`, tree(sr.Ended()))
		require.Equal(t, 3, srv.Count("audio/text-to-music"))
		m = collect(t, reader)
		require.EqualValues(t, 1, value[int64](t, m[creativeotel.MetricCalls], creativeotel.AttrVerdict.String("unknown")))
		require.Equal(t, 0.25, value[float64](t, m[creativeotel.MetricCost], creativeotel.AttrPaid.String("maybe")))
		d := m["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
		var withError int
		for _, p := range d.DataPoints {
			if v, ok := p.Attributes.Value("error.type"); ok && v.AsString() == "outcome_unknown" {
				withError++
			}
		}
		require.Equal(t, 1, withError)
	})
}

func TestEveryOperationHasAName(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range creativetest.Operations() {
		name, output := creativeotel.OperationName(op)
		require.NotEqual(t, "creative.raw", name, op)
		require.NotEmpty(t, output, op)
		seen[op] = true
	}
	require.Len(t, seen, 16)
	name, _ := creativeotel.OperationName("POST /image/v2/new")
	require.Equal(t, "creative.raw", name)
}

func TestPricesAreChecked(t *testing.T) {
	_, err := creativeotel.New(creativeotel.WithPrices(map[string]float64{"image/nope": 1}))
	require.ErrorContains(t, err, "no operation")
	_, err = creativeotel.New(creativeotel.WithPrices(map[string]float64{"image/text-to-image": -1}))
	require.Error(t, err)
}

func TestBatchProgress(t *testing.T) {
	prices := map[string]float64{"image/generate-qr": 0.5, "audio/text-to-music": 0.25}
	tel, sr, reader := telemetry(t, creativeotel.WithPrices(prices))
	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Fail("audio/text-to-music", creativetest.Fault{Status: http.StatusBadGateway})
	budget := batch.Budget{MaxSpend: 10, Prices: prices}
	bm, err := tel.NewBatchMetrics(budget)
	require.NoError(t, err)
	defer bm.Close()
	c := srv.Client(tel.ClientOption())
	defer c.CloseIdleConnections()
	r, err := batch.New(c, ledgertest.NewMemory(), ledgertest.NewFiles(), batch.Options{Concurrency: 1, OnEvent: bm.OnEvent, Budget: budget})
	require.NoError(t, err)
	jobs := batch.Values(slices.Values([]batch.Job{
		{Op: "image/generate-qr", ID: "qr", Fields: map[string]any{"url": "https://example.com", "prompt": "flowers"}},
		{Op: "audio/text-to-music", ID: "music", Fields: map[string]any{"prompt": "calm"}},
	}))
	ctx := context.Background()
	checked, err := r.Check(ctx, jobs)
	require.NoError(t, err)
	sum, err := r.Run(ctx, checked)
	require.NoError(t, err)
	bm.Summary(sum)

	m := collect(t, reader)
	jobsEnded := func(state string) int64 {
		return value[int64](t, m[creativeotel.MetricBatchJobs], creativeotel.AttrBatchEvent.String("ended"), creativeotel.AttrBatchState.String(state))
	}
	require.EqualValues(t, 1, jobsEnded("done"))
	require.EqualValues(t, 1, jobsEnded("unknown"))
	require.EqualValues(t, 2, value[int64](t, m[creativeotel.MetricBatchJobs], creativeotel.AttrBatchEvent.String("started")))
	require.EqualValues(t, 1, value[int64](t, m[creativeotel.MetricBatchMaybePaid], creativeotel.AttrOperation.String("audio/text-to-music")))
	require.Equal(t, 0.75, value[float64](t, m[creativeotel.MetricBatchSpent]), "the QR paid, the music maybe")
	require.Equal(t, 10.0, value[float64](t, m[creativeotel.MetricBatchSpendLimit]))
	require.EqualValues(t, 1, value[int64](t, m[creativeotel.MetricBatchSummary], creativeotel.AttrBatchState.String("done")))
	require.EqualValues(t, 1, value[int64](t, m[creativeotel.MetricBatchSummary], creativeotel.AttrBatchState.String("unknown")))
	require.Len(t, sr.Ended(), 4, "a call span and an attempt span for each job")
}

func TestPropagationSendsEachAttemptsSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, sr, _ := telemetry(t)
		srv := creativetest.NewServer(creativetest.WithInMemoryNetwork())
		defer srv.Close()
		srv.Fail("audio/text-to-music", creativetest.Fault{Status: http.StatusServiceUnavailable})
		c := srv.Client(tel.ClientOption(), creative.WithMiddleware(creativeotel.Propagation(propagation.TraceContext{})),
			creative.WithRetryWait(time.Millisecond, 2*time.Millisecond))
		defer c.CloseIdleConnections()
		_, err := c.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "p"})
		require.NoError(t, err)
		spans := sr.Ended()
		require.Len(t, spans, 3)
		reqs := srv.Requests()
		require.Len(t, reqs, 2)
		for i, r := range reqs {
			attempt := spans[i].SpanContext()
			require.Equal(t, "00-"+attempt.TraceID().String()+"-"+attempt.SpanID().String()+"-01", r.Header.Get("Traceparent"), "attempt %d", i+1)
		}
	})
}

// A raw call is named in spans and metrics by its method and path: the
// query's values (ids, tokens) make no series of their own and stay out.
func TestRawCallNamedWithoutItsQuery(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	tel, sr, reader := telemetry(t)
	c, err := creative.New(creative.WithBaseURL(srv.URL), creative.WithAccessKey("k-raw-1"), tel.ClientOption())
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	for _, path := range []string{"jobs/v2/status?id=1&token=s3cret", "/jobs/v2/status?id=2", "jobs/v2/status"} {
		require.NoError(t, c.Get(context.Background(), path, nil))
	}
	for _, s := range sr.Ended() {
		if s.Name() == "attempt" {
			continue
		}
		require.Equal(t, "creative.raw GET /jobs/v2/status", s.Name())
		set := attribute.NewSet(s.Attributes()...)
		v, _ := set.Value(creativeotel.AttrOperation)
		require.Equal(t, "GET /jobs/v2/status", v.AsString())
	}
	calls := collect(t, reader)[creativeotel.MetricCalls].(metricdata.Sum[int64])
	require.Len(t, calls.DataPoints, 1, "one series for the three calls")
	require.EqualValues(t, 3, calls.DataPoints[0].Value)
}

// Telemetry given to the Client and again to a call counts the call once,
// and two Telemetries (two exporters) each end every span they started.
func TestTelemetryTwiceEndsEverySpan(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n++; n%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	tel, sr, reader := telemetry(t)
	other, otherSpans, _ := telemetry(t)
	c, err := creative.New(creative.WithBaseURL(srv.URL), creative.WithAccessKey("k-twice-1"), tel.ClientOption(),
		creative.WithRetryWait(time.Millisecond, 2*time.Millisecond))
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	require.NoError(t, c.Post(context.Background(), "x/v2/y", nil, nil, tel.ClientOption()))
	require.NoError(t, c.Post(context.Background(), "x/v2/y", nil, nil, other.ClientOption()))
	for _, rec := range []*tracetest.SpanRecorder{sr, otherSpans} {
		require.Len(t, rec.Ended(), len(rec.Started()), "a span was left open")
	}
	require.Len(t, sr.Ended(), 6, "a call span and two attempts, for each call")
	require.Len(t, otherSpans.Ended(), 3)
	calls := collect(t, reader)[creativeotel.MetricCalls].(metricdata.Sum[int64])
	require.EqualValues(t, 2, calls.DataPoints[0].Value)
}

// A 2xx answer the SDK refuses (not the image it promises, past the size
// cap, an envelope that says the service failed) may have been paid, as
// the batch runner classifies it (Unknown): its cost counts as maybe
// paid, never as nothing.
func TestCostCountsAPaidAnswerTheSDKRefuses(t *testing.T) {
	answers := map[string]string{
		"/image/v1/generate-qr":   `{"success":true,"data":"not an image"}`,
		"/image/v1/up-scale":      `{"success":true,"data":{"base64":"` + strings.Repeat("A", 4<<10) + `"}}`,
		"/image/v1/text-to-image": `{"success":false,"message":"no credits"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(answers[r.URL.Path]))
	}))
	defer srv.Close()
	tel, _, reader := telemetry(t, creativeotel.WithPrices(map[string]float64{
		"image/generate-qr": 0.5, "image/up-scale": 0.25, "image/text-to-image": 8,
	}))
	c, err := creative.New(creative.WithBaseURL(srv.URL), creative.WithAccessKey("k-cost-1"), tel.ClientOption())
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	ctx := context.Background()
	_, err = c.GenerateQR(ctx, creative.GenerateQRRequest{URL: "https://example.com", Prompt: "p"})
	require.ErrorIs(t, err, creative.ErrUnexpectedResponse)
	_, err = c.UpScale(ctx, creative.UpScaleRequest{URL: "https://i.example/a.png"}, creative.WithMaxResponseBytes(1<<10))
	require.ErrorIs(t, err, creative.ErrUnexpectedResponse)
	_, err = c.TextToImage(ctx, creative.TextToImageRequest{Prompt: "p"})
	require.Error(t, err)
	require.NotErrorIs(t, err, creative.ErrUnexpectedResponse)
	cost := collect(t, reader)[creativeotel.MetricCost]
	require.InDelta(t, 8.75, value[float64](t, cost, creativeotel.AttrPaid.String("maybe")), 1e-9)
	for _, p := range cost.(metricdata.Sum[float64]).DataPoints {
		v, _ := p.Attributes.Value(creativeotel.AttrPaid)
		require.Equal(t, "maybe", v.AsString(), "a refused answer counted as surely paid")
	}
}

// A provider variable not set yet (a nil pointer in the interface) and a
// Telemetry whose New failed are errors, never a panic.
func TestNilProvidersAndTelemetryAreErrors(t *testing.T) {
	var tp *sdktrace.TracerProvider
	_, err := creativeotel.New(creativeotel.WithTracerProvider(tp))
	require.ErrorContains(t, err, "nil provider")
	var mp *sdkmetric.MeterProvider
	_, err = creativeotel.New(creativeotel.WithMeterProvider(mp))
	require.ErrorContains(t, err, "nil provider")
	var tel *creativeotel.Telemetry
	require.Nil(t, tel.CallTrace())
	_, err = creative.New(creative.WithBaseURL("http://127.0.0.1:1"), creative.WithAccessKey("k-nil-1"), tel.ClientOption())
	require.Error(t, err)
}
