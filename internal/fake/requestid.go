package fake

import (
	"net/http"
	"strconv"
	"sync/atomic"
)

// withRequestIDs gives every answer of h an X-Request-Id header, as the
// service's gateway does, so that code reading request ids
// (creative.APIError.RequestID, creative.WithResponseInto) can be tested
// against the Server. The ids are "req-1", "req-2" ... in the order the
// requests arrive, downloads of files included. A handler given to Handle
// may set another.
func withRequestIDs(h http.Handler) http.Handler {
	var n atomic.Uint64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-"+strconv.FormatUint(n.Add(1), 10))
		h.ServeHTTP(w, r)
	})
}
