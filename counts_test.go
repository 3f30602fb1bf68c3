package creative

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/internal/ops"
)

// A count left at 0 is its default, as the table of operations says: a
// required one goes on the wire as the default, an optional one stays off
// it, so the service applies the default the spec names.
func TestACountLeftAtZeroIsItsDefault(t *testing.T) {
	cases := map[string]endpointCase{}
	for _, e := range endpointCases() {
		cases[e.op] = e
	}
	n := 0
	for _, o := range ops.All {
		for _, f := range o.Fields {
			if f.Default == 0 {
				continue
			}
			n++
			t.Run(o.Name+"/"+f.Name, func(t *testing.T) {
				bodies := make(chan []byte, 1)
				ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					bodies <- b
					replyJSON(400, `{"success":false,"message":"no"}`)(w, r)
				})
				e := cases[o.Name]
				field := requestField(t, e.req, f.Name)
				_, _ = callWith(context.Background(), newTestClient(t, ts.URL), withField(e.req, field, reflect.Zero(field.Type)))
				var sent map[string]any
				require.NoError(t, json.Unmarshal(<-bodies, &sent))
				got, ok := sent[f.Name]
				if f.Required {
					assert.Equal(t, f.Default, got, "the default is sent")
				} else {
					assert.False(t, ok, "left off the wire, got %v", got)
				}
			})
		}
	}
	assert.Equal(t, 5, n, "counts with a default: writer number, duration, two numberOfResults, numberOfIteration")
}
