package creativetest_test

import (
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/creativegen/creative-go/creativetest"
)

func TestTheRecordOfRequestsIsBoundedAndCountStaysExact(t *testing.T) {
	const kept = 10000
	s := creativetest.NewServer()
	defer s.Close()
	c := &http.Client{}
	const n = kept + 500
	for i := range n {
		resp, err := c.Get(s.URL + "/image/v1/generate-qr?i=" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if got := s.Count("image/generate-qr"); got != n {
		t.Errorf("Count = %d, want %d", got, n)
	}
	reqs := s.Requests()
	if len(reqs) > kept || len(reqs) < kept*9/10 {
		t.Fatalf("%d requests kept, want at most %d, the last ones", len(reqs), kept)
	}
	if last := reqs[len(reqs)-1]; last.Status != http.StatusMethodNotAllowed {
		t.Errorf("the last request kept answered %d", last.Status)
	}
}
