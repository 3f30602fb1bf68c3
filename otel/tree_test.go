package creativeotel_test

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// shownAttrs are the attributes printTree shows, in this order.
var shownAttrs = []attribute.Key{
	"gen_ai.operation.name", "gen_ai.output.type", "creative.operation", "http.request.resend_count",
	"http.response.status_code", "creative.verdict", "creative.retry", "creative.retry_reason",
	"creative.attempts", "error.type",
}

// printTree writes spans as a tree, each span's children in the order they
// started (then ended), with the attributes of shownAttrs.
func printTree(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID().String()] = true
	}
	children := map[string][]int{}
	var roots []int
	for i, s := range spans {
		p := s.Parent().SpanID().String()
		if s.Parent().IsValid() && ids[p] {
			children[p] = append(children[p], i)
		} else {
			roots = append(roots, i)
		}
	}
	order := func(list []int) {
		sort.SliceStable(list, func(a, b int) bool {
			return spans[list[a]].StartTime().Before(spans[list[b]].StartTime())
		})
	}
	var walk func(i int, depth int)
	walk = func(i int, depth int) {
		s := spans[i]
		var attrs []string
		for _, k := range shownAttrs {
			for _, kv := range s.Attributes() {
				if kv.Key == k {
					attrs = append(attrs, fmt.Sprintf("%s=%s", k, kv.Value.String()))
				}
			}
		}
		fmt.Fprintf(w, "%s%s [%s]\n", strings.Repeat("  ", depth), s.Name(), strings.Join(attrs, " "))
		kids := children[s.SpanContext().SpanID().String()]
		order(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	order(roots)
	for _, r := range roots {
		walk(r, 0)
	}
}
