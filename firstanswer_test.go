package creative

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A plain call's first 2xx answer comes straight from its transport
// (firstAnswer); every other first outcome goes through go-retryablehttp
// and the http.Client as it came. This file holds that the two roads end
// alike: the same typed result or error, the same attempts, and the same
// requests counted at the server, for every kind of first answer.

// firstOutcome is what a call ended with, as a caller can tell it.
type firstOutcome struct {
	url       string
	errText   string
	status    int
	attempts  int
	notSent   bool
	unknown   bool
	refused   bool
	retryWait time.Duration
	hits      int64
}

func outcomeOf(url string, err error, hits int64) firstOutcome {
	o := firstOutcome{url: url, hits: hits}
	if err == nil {
		return o
	}
	o.errText = err.Error()
	o.notSent, o.unknown, o.refused = errors.Is(err, ErrNotSent), errors.Is(err, ErrOutcomeUnknown), errors.Is(err, ErrRefused)
	var ae *APIError
	if errors.As(err, &ae) {
		o.status, o.attempts, o.retryWait = ae.StatusCode, ae.Attempts, ae.RetryAfter
	}
	var ne *NetworkError
	if errors.As(err, &ne) {
		o.attempts = ne.Attempts
	}
	return o
}

// quietJar is a cookie jar that keeps nothing: a Client with it sends
// what a Client without one sends, but its http.Client adds its cookies
// to every request, so no call of it takes firstAnswer's road.
type quietJar struct{ asked atomic.Int64 }

func (j *quietJar) SetCookies(*url.URL, []*http.Cookie) {}

func (j *quietJar) Cookies(*url.URL) []*http.Cookie {
	j.asked.Add(1)
	return nil
}

func TestEveryFirstAnswerEndsAsItDoesThroughTheRetryLoop(t *testing.T) {
	const ok = `{"success":true,"message":"ok","data":"https://files.example.com/a.wav"}`
	// Each row answers the first request that arrives as first does, and
	// every later one with 200.
	rows := []struct {
		name  string
		first func(w http.ResponseWriter, r *http.Request)
	}{
		{"200", replyJSON(200, ok)},
		{"201", replyJSON(201, ok)},
		{"200 not an envelope", replyJSON(200, `<html>`)},
		{"200 without data", replyJSON(200, `{"success":true,"message":"ok"}`)},
		{"200 echoing the key", replyJSON(200, `{"success":true,"message":"ok","data":"https://files.example.com/`+testKey+`.wav"}`)},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }},
		{"400", replyJSON(400, `{"success":false,"message":"bad prompt `+testKey+`"}`)},
		{"401", replyJSON(401, `{"success":false,"message":"no"}`)},
		{"408", replyJSON(408, `{"success":false,"message":"slow"}`)},
		{"429 retry now", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "0")
			replyJSON(429, `{"success":false,"message":"busy"}`)(w, r)
		}},
		{"429 retry in a day", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "86400")
			replyJSON(429, `{"success":false,"message":"busy"}`)(w, r)
		}},
		{"500", replyJSON(500, `{"success":false,"message":"oops"}`)},
		{"501", replyJSON(501, `{"success":false,"message":"no such thing"}`)},
		{"503", replyJSON(503, `{"success":false,"message":"down"}`)},
		{"307 to itself", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
		}},
		{"308 elsewhere", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, "http://127.0.0.1:1/steal", http.StatusPermanentRedirect)
		}},
		{"302", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, r.URL.Path, http.StatusFound)
		}},
		{"307 to no URL", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}},
		{"304", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(304) }},
		{"closed after reading", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			hijackClose(w)
		}},
		{"closed mid-answer", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "500")
			w.WriteHeader(200)
			_, _ = io.WriteString(w, `{"success":true,`)
			w.(http.Flusher).Flush()
			hijackClose(w)
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			run := func(t *testing.T, opts ...Option) firstOutcome {
				var n atomic.Int64
				ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
					if n.Add(1) == 1 {
						row.first(w, r)
						return
					}
					replyJSON(200, ok)(w, r)
				})
				c := ts.client(t, opts...)
				res, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "calm piano"})
				if err != nil {
					assert.NotContains(t, err.Error(), testKey)
					assert.NotContains(t, fmt.Sprintf("%+v", err), testKey)
				}
				o := outcomeOf(string(res), err, ts.hits.Load())
				o.errText = strings.ReplaceAll(o.errText, ts.URL, "<server>")
				return o
			}
			jar := &quietJar{}
			fast := run(t)
			slow := run(t, WithHTTPClient(&http.Client{Jar: jar}))
			require.NotZero(t, jar.asked.Load(), "the jar's Client took the retry loop's road")
			assert.Equal(t, slow, fast)
		})
	}
}

// A context that ends as the 2xx answer arrives ends the call with the
// context's error on both roads, as go-retryablehttp's policy says.
func TestAContextEndingAsTheFirstAnswerArrivesEndsTheCallAlike(t *testing.T) {
	run := func(t *testing.T, opts ...Option) (firstOutcome, error) {
		ts := newTestServer(t, replyJSON(200, `{"success":true,"message":"ok","data":"https://files.example.com/a.wav"}`))
		c := ts.client(t, opts...)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: cancel})
		res, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "calm piano"})
		o := outcomeOf(string(res), err, ts.hits.Load())
		o.errText = strings.ReplaceAll(o.errText, ts.URL, "<server>")
		return o, err
	}
	fast, err := run(t)
	require.ErrorIs(t, err, context.Canceled)
	slow, _ := run(t, WithHTTPClient(&http.Client{Jar: &quietJar{}}))
	assert.Equal(t, slow, fast)
}

// hijackClose closes the connection under w without an answer.
func hijackClose(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// A RoundTripper of the caller's that breaks net/http's rules (no answer
// and no error, an answer without its body) ends the call with an error
// that says so, sent once, not with a panic.
func TestACallersRoundTripperThatBreaksTheRulesEndsTheCallWithAnError(t *testing.T) {
	for _, row := range []struct {
		name string
		rt   func(*http.Request) (*http.Response, error)
		want string
	}{
		{"no response", func(*http.Request) (*http.Response, error) { return nil, nil }, "neither an answer nor an error"},
		{"a 200 without a body, of a length", func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: 90, Request: r}, nil
		}, "an answer of 90 bytes without its body"},
		{"a 200 without a body", func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: 0, Request: r}, nil
		}, "HTTP 200: not a JSON object: empty body"},
	} {
		t.Run(row.name, func(t *testing.T) {
			var sent atomic.Int64
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Body != nil {
					_, _ = io.Copy(io.Discard, r.Body)
					_ = r.Body.Close()
				}
				sent.Add(1)
				return row.rt(r)
			})
			c := newTestClient(t, "http://127.0.0.1:1", WithHTTPClient(&http.Client{Transport: rt}))
			_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "calm piano"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), row.want)
			assert.LessOrEqual(t, sent.Load(), int64(1), "sent again without the caller's say-so")
		})
	}
}

// An http.Client's Timeout bounds the whole call, the answer's body
// included, as it does without the SDK: a 2xx whose body stalls ends at
// the Timeout.
func TestAnHTTPClientsTimeoutStillBoundsTheAnswersBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "500")
			w.WriteHeader(200)
			_, _ = io.WriteString(w, `{"success":true,"message":"ok","data":"https://files.example.com/`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		hc := *ts.Client()
		hc.Timeout = 3 * time.Second
		c := newTestClient(t, ts.URL, WithHTTPClient(&hc))
		start := time.Now()
		_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "calm piano"})
		require.Error(t, err)
		assert.Equal(t, 3*time.Second, time.Since(start), "it ended at the http.Client's Timeout, on the bubble's clock")
		assert.Equal(t, int64(1), ts.hits.Load())
	})
}

// roundTripFunc is a RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
