package creative

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 200 download whose body is the service's error envelope is the
// service's failure, with its message redacted; it never reaches the file.
// JSON that is not the envelope is passed on whole, for the caller's check
// of what the operation promises.
func TestADownloadThatIsTheErrorEnvelopeIsTheServicesFailure(t *testing.T) {
	body := `{"success":false,"message":"no file for key ` + testKey + `"}`
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		if r.URL.Path == "/other" {
			_, _ = io.WriteString(w, ` {"a":[1,2]}`)
			return
		}
		_, _ = io.WriteString(w, "\n  "+body)
	})
	c := ts.client(t)
	var out bytes.Buffer
	n, err := c.Download(context.Background(), URL(ts.URL+"/f.wav"), &out)
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 200, ae.StatusCode)
	assert.Contains(t, ae.Message, "no file for key")
	assert.NotContains(t, err.Error(), testKey)
	assert.NotContains(t, string(ae.Body), testKey)
	assert.Zero(t, n)
	assert.Zero(t, out.Len(), "nothing of the envelope is written")

	out.Reset()
	n, err = c.Download(context.Background(), URL(ts.URL+"/other"), &out)
	require.NoError(t, err)
	assert.Equal(t, ` {"a":[1,2]}`, out.String())
	assert.EqualValues(t, out.Len(), n)
}

// An answer that lists more links than the bound is refused: each is a
// download, and the spec states no maximum.
func TestALinkListPastItsBoundIsRefused(t *testing.T) {
	links := func(n int) string {
		var l []string
		for i := range n {
			l = append(l, fmt.Sprintf(`"https://f.example/stem-%d.wav"`, i))
		}
		return `{"success":true,"data":[` + strings.Join(l, ",") + `]}`
	}
	count := DefaultMaxLinks + 1
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, links(count))
	})
	c := ts.client(t)
	split := func(opts ...Option) ([]URL, error) {
		return c.SplitAudio(context.Background(), SplitAudioRequest{Audio: FileFromBytes("a.wav", wavBytes)}, opts...)
	}
	_, err := split()
	assert.ErrorIs(t, err, ErrUnexpectedResponse)
	assert.ErrorContains(t, err, "more than the 16 links the client accepts (raise it with WithMaxLinks)")

	us, err := split(WithMaxLinks(count))
	require.NoError(t, err)
	assert.Len(t, us, count)
	count = 5000
	_, err = split(WithMaxLinks(100))
	assert.ErrorContains(t, err, "more than the 100 links")
	_, err = split(WithMaxLinks(0))
	assert.ErrorContains(t, err, "WithMaxLinks: want a positive count")
}

// The budget: an answer whose bytes do not fit takes the one overdraft
// at once, whether it holds bytes or not, so that no answer waits while
// the overdraft is free; while another holds it, a call waits for bytes
// given back, within its context; bytes given back wake the waiters.
func TestTheAnswerBudgetWaitsButNeverForEver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBudget(100)
		a, c := &reservation{b: b}, &reservation{b: b}
		ctx := context.Background()
		require.NoError(t, a.take(ctx, 60))
		require.NoError(t, c.take(ctx, 30))

		// c needs 20 more: the overdraft is free, so it takes it.
		require.NoError(t, c.take(ctx, 20))
		assert.Same(t, c, b.over)
		assert.EqualValues(t, 110, b.used)

		// a needs 20 more: c holds the overdraft, so a waits until c lets
		// go.
		done := make(chan error, 1)
		go func() { done <- a.take(ctx, 20) }()
		synctest.Wait()
		assert.Equal(t, 1, b.stuck)

		// A call that holds nothing waits too while the overdraft is held,
		// until its context ends.
		d := &reservation{b: b}
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		assert.ErrorIs(t, d.take(short, 60), context.DeadlineExceeded)
		assert.Zero(t, d.held)

		c.release()
		require.NoError(t, <-done)
		assert.EqualValues(t, 80, a.held)
		assert.EqualValues(t, 80, b.used)
		assert.Nil(t, b.over, "the overdraft ends with what c held")
		assert.ErrorIs(t, a.take(ctx, 101), errBudgetSpent, "more than the whole budget would wait for ever")

		// With the overdraft free again, a call that holds nothing and
		// does not fit takes it at once.
		require.NoError(t, d.take(ctx, 60))
		assert.Same(t, d, b.over)
		a.release()
		d.release()
		assert.Zero(t, b.used)
		assert.Zero(t, b.holders)
		assert.Empty(t, b.waiting)
		assert.Nil(t, b.over)

		// Nothing taken is nothing held: an empty answer leaves no holder.
		e := &reservation{b: b}
		require.NoError(t, e.take(ctx, 0))
		e.release()
		assert.Zero(t, b.holders)
	})
}

// An answer without a Content-Length is read in chunks, each within the
// budget, and joined whole; one past half the budget fails, since joined
// it takes twice its length.
func TestAnAnswerWithoutALengthIsReadWithinTheBudget(t *testing.T) {
	img := bytes.Repeat([]byte("\x89PNG image bytes"), 200<<10) // 3.2 MiB
	body := `{"success":true,"data":[{"base64":"` + base64.StdEncoding.EncodeToString(img) + `"}]}`
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.(http.Flusher).Flush() // chunked: no Content-Length
		_, _ = io.WriteString(w, body)
	})
	c := ts.client(t)
	ims, err := c.TextToImage(context.Background(), TextToImageRequest{Prompt: "p"})
	require.NoError(t, err)
	require.Len(t, ims, 1)
	assert.Equal(t, img, ims[0].Data)
	assert.Zero(t, c.budget.used, "every byte given back")

	small := ts.client(t, WithAnswerBudget(8<<20))
	_, err = small.TextToImage(context.Background(), TextToImageRequest{Prompt: "p"})
	assert.ErrorIs(t, err, ErrUnexpectedResponse)
	assert.ErrorContains(t, err, "has no Content-Length and holds more than 4194304 bytes, half the 8388608 bytes of answers the Client holds at once (raise it with WithAnswerBudget)")
	assert.Zero(t, small.budget.used)
}

// Whatever an answer does (empty, cut, past the cap, chunked, whole), every
// byte it took of the budget is given back when its call returns.
func TestEveryAnswerGivesItsBudgetBack(t *testing.T) {
	img := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("\x89PNG"), 300<<10))
	bodies := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) { w.Header().Set("Content-Length", "0") },
		func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, `{"success":`)
		},
		func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{"success":true,"data":[{"base64":"`+img+`"}]}`)
		},
		func(w http.ResponseWriter) {
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `{"success":true,"data":[{"base64":"`+img+`"}]}`)
		},
		func(w http.ResponseWriter) {
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, `{"success":true,"data":[{"base64":"`+img+img+`"}]}`)
		},
		func(w http.ResponseWriter) { _, _ = io.WriteString(w, `{"success":false,"message":"no"}`) },
	}
	var i int
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		bodies[i](w)
	})
	c := ts.client(t, WithMaxResponseBytes(3<<20), WithMaxRetries(0))
	for i = range bodies {
		_, _ = c.TextToImage(context.Background(), TextToImageRequest{Prompt: "p"})
		b := c.budget
		b.mu.Lock()
		used, holders := b.used, b.holders
		b.mu.Unlock()
		assert.Zero(t, used, "answer %d", i)
		assert.Zero(t, holders, "answer %d", i)
	}
}

// growTogether grows n answers without a Content-Length on budget b in
// turn, a step at a time, each up to answerCap, when it gives all back: a
// take that must wait stays pending while the others go on. After each
// step it checks that at most the one holder that overdraws the budget
// holds bytes past it, while every other holder waits, so that the bytes
// held never pass the budget plus one answer's cap. It returns, in order,
// the answers that overdrew the budget.
func growTogether(t *testing.T, b *budget, n int, answerCap, step int64) (overdrawn []int) {
	ctx := context.Background()
	rs := make([]*reservation, n)
	pending := make([]chan error, n)
	for i := range rs {
		rs[i] = &reservation{b: b}
	}
	settle := func() {
		synctest.Wait()
		for i, ch := range pending {
			select {
			case err := <-ch:
				require.NoError(t, err, "answer %d", i)
				pending[i] = nil
			default:
			}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.over != nil {
			assert.LessOrEqual(t, b.used-b.over.held, b.size, "the others hold no more than the budget")
		} else {
			assert.LessOrEqual(t, b.used, b.size)
		}
		assert.LessOrEqual(t, b.used, b.size+answerCap)
	}
	left := n
	for round := 0; left > 0 && round < 1000; round++ {
		for i, r := range rs {
			switch {
			case r == nil || pending[i] != nil:
			case r.held < answerCap:
				ch := make(chan error, 1)
				pending[i] = ch
				go func() { ch <- r.take(ctx, step) }()
				settle()
			default:
				b.mu.Lock()
				if b.over == r {
					overdrawn = append(overdrawn, i)
				}
				b.mu.Unlock()
				r.release()
				rs[i], left = nil, left-1
				settle()
			}
		}
	}
	require.Zero(t, left, "every answer arrived")
	assert.Zero(t, b.used)
	assert.Zero(t, b.holders)
	assert.Nil(t, b.over)
	return overdrawn
}

// Answers that grow together until they fill the budget all arrive: the
// first that needs more than the budget has free overdraws it, and the
// others follow once it lets go. Read one after another each fits, so none
// may fail for the budget's sake.
func TestAnswersThatGrowTogetherPastTheBudgetAllArrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBudget(100)
		assert.Equal(t, []int{2}, growTogether(t, b, 3, 45, 5))
		assert.EqualValues(t, 35+35+45, b.peak, "the third grows from 30 to 45 past the budget while the others hold 35 each")
	})
}

// The overdraft goes to one holder at a time, and the bytes held never
// pass the budget plus one answer's cap: while one answer overdraws it,
// every other that needs more waits, and the next overdraws it only once
// the first let go.
func TestTheBudgetIsOverdrawnByOneAnswerAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBudget(100)
		// Four answers of 45 fill the budget at 25 each; the first to need
		// more overdraws it and grows to 45, then lets go; the fourth is
		// the next to overdraw it; the last two fit.
		assert.Equal(t, []int{0, 3}, growTogether(t, b, 4, 45, 5))
		assert.LessOrEqual(t, b.peak, int64(100+45), "never past the budget and one answer's cap")
	})
}

// An answer that arrived whole is read at once, though the Client's budget
// is held by another answer that stalls: it takes the overdraft, and
// never waits past its deadline to fail as an unknown outcome the service
// was paid for. The budget is the Client's (WithAnswerBudget): another
// Client's answers take nothing from it.
func TestAWholeAnswerIsNeverFailedForTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		img := bytes.Repeat([]byte("\x89PNG image bytes"), 32<<10) // 512 KiB
		whole := `{"success":true,"data":[{"base64":"` + base64.StdEncoding.EncodeToString(img) + `"}]}`
		stall := make(chan struct{})
		stalled := make(chan struct{})
		var calls atomic.Int64
		ts := newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/audio/v1/text-to-music" { // chunked, 450 KiB, then nothing until the test ends
				w.(http.Flusher).Flush()
				_, _ = io.WriteString(w, `{"success":true,"data":"`+strings.Repeat("x", 450<<10))
				w.(http.Flusher).Flush()
				close(stalled)
				<-stall
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(whole)))
			_, _ = io.WriteString(w, whole)
		})
		defer close(stall)
		c := ts.client(t, WithAnswerBudget(1<<20), WithMaxRetries(0))
		go func() { _ = music(context.Background(), c) }()
		<-stalled
		synctest.Wait()
		require.GreaterOrEqual(t, c.budget.used, int64(400<<10), "the stalled answer holds 450 KiB and more of the budget")

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		ims, err := c.TextToImage(ctx, TextToImageRequest{Prompt: "p"})
		require.NoError(t, err)
		assert.Equal(t, img, ims[0].Data)
		assert.Zero(t, time.Since(start), "read at once")
		assert.EqualValues(t, 2, calls.Load())

		other := ts.client(t, WithAnswerBudget(1<<20))
		_, err = other.TextToImage(ctx, TextToImageRequest{Prompt: "p"})
		require.NoError(t, err)
		assert.Zero(t, other.budget.used)
	})
}
