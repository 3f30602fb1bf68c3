package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// span is the part of the stdout exporter's JSON the test reads.
type span struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
}

func (s span) attr(key string) any {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

func TestEachAttemptIsASpanOfTheCallsTrace(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	var spans []span
	for {
		var s span
		if err := dec.Decode(&s); err != nil {
			break // the summary lines follow the spans
		}
		spans = append(spans, s)
	}
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want two attempts and the call's:\n%s", len(spans), out.String())
	}
	call := spans[2]
	if call.Name != "make a QR code" {
		t.Fatalf("the last span to end is %q, want the call's", call.Name)
	}
	for i, want := range []float64{503, 200} {
		a := spans[i]
		if a.SpanContext.TraceID != call.SpanContext.TraceID || a.Parent.SpanID != call.SpanContext.SpanID {
			t.Errorf("attempt %d is not a child of the call's span", i+1)
		}
		if got := a.attr("http.response.status_code"); got != want {
			t.Errorf("attempt %d: status %v, want %v", i+1, got, want)
		}
		traceparent := "saw traceparent 00-" + call.SpanContext.TraceID + "-" + a.SpanContext.SpanID + "-01"
		if !strings.Contains(out.String(), traceparent) {
			t.Errorf("the service did not see attempt %d's traceparent (%s):\n%s", i+1, traceparent, out.String())
		}
	}
}
