package creative

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

type traceKey struct{}

// traceLog is a CallTrace that writes down what it hears, one line a hook,
// and checks the contexts it gets are the ones it gave.
type traceLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *traceLog) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, a...))
}

func (l *traceLog) trace() *CallTrace {
	return &CallTrace{
		CallStart: func(ctx context.Context, c CallInfo) context.Context {
			l.add("call %s %s:%d", c.Operation, c.Host, c.Port)
			return context.WithValue(ctx, traceKey{}, "call")
		},
		AttemptStart: func(ctx context.Context, a AttemptInfo) context.Context {
			l.add("attempt %d under %v", a.Attempt, ctx.Value(traceKey{}))
			return context.WithValue(ctx, traceKey{}, fmt.Sprint("attempt ", a.Attempt))
		},
		AttemptDone: func(ctx context.Context, a AttemptInfo) {
			l.add("done %v: %s retry=%v status=%d id=%s reason=%q", ctx.Value(traceKey{}), a.Verdict, a.Retry, a.StatusCode, a.RequestID, a.Reason)
		},
		CallDone: func(ctx context.Context, c CallInfo, err error) {
			l.add("end %v: %s attempts=%d status=%d err=%v", ctx.Value(traceKey{}), c.Verdict, c.Attempts, c.StatusCode, err != nil)
		},
	}
}

func TestCallTraceTellsEachAttemptsVerdict(t *testing.T) {
	n := 0
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n++
		w.Header().Set("X-Request-Id", fmt.Sprint("r", n))
		switch r.URL.Path {
		case "/retry":
			if n == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		case "/unknown":
			w.WriteHeader(http.StatusBadGateway)
			return
		case "/audio/v1/text-to-music":
			hijack(w, r, "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"success\":", nil)
			return
		}
		_, _ = io.WriteString(w, `{"success":true,"data":"https://f.example/a.wav"}`)
	})
	host, port := ts.Listener.Addr().String(), 0
	host, portText, _ := strings.Cut(host, ":")
	_, _ = fmt.Sscan(portText, &port)
	var l traceLog
	c := ts.client(t, WithCallTrace(l.trace()))
	ctx := context.Background()

	require.NoError(t, c.Post(ctx, "/retry", nil, nil))
	require.Equal(t, []string{
		fmt.Sprintf("call POST /retry %s:%d", host, port),
		"attempt 1 under call",
		`done attempt 1: refused retry=true status=503 id=r1 reason="refused (HTTP 503)"`,
		"attempt 2 under call",
		`done attempt 2: answered retry=false status=200 id=r2 reason=""`,
		"end call: answered attempts=2 status=200 err=false",
	}, l.lines)

	l.lines, n = nil, 0
	require.ErrorIs(t, c.Post(ctx, "/unknown", nil, nil), ErrOutcomeUnknown)
	require.Equal(t, []string{
		fmt.Sprintf("call POST /unknown %s:%d", host, port),
		"attempt 1 under call",
		`done attempt 1: unknown retry=false status=502 id=r1 reason="outcome unknown: not sent again, the service may have done the work"`,
		"end call: unknown attempts=1 status=502 err=true",
	}, l.lines)

	l.lines, n = nil, 0
	_, err := c.TextToMusic(ctx, TextToMusicRequest{Prompt: "p"})
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	require.Len(t, l.lines, 4)
	require.Contains(t, l.lines[2], "done attempt 1: unknown retry=false status=200")
	require.Contains(t, l.lines[2], "cut off")
	require.Equal(t, "end call: unknown attempts=1 status=200 err=true", l.lines[3])
}

func TestCallTraceEndsASpeechStreamAtItsClose(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "audio/mpeg")
		_, _ = w.Write(bytes.Repeat([]byte{0xff, 0xfb, 0x14, 0xc4}, 1<<10))
	})
	var l traceLog
	c := ts.client(t, WithCallTrace(l.trace()))
	audio, err := c.TextToSpeech(context.Background(), TextToSpeechRequest{Prompt: "hello", VoiceID: ids.VoiceFemale1})
	require.NoError(t, err)
	require.Len(t, l.lines, 2, "the call is not over while its stream is open")
	n, err := io.Copy(io.Discard, audio)
	require.NoError(t, err)
	require.EqualValues(t, 4<<10, n)
	require.NoError(t, audio.Close())
	require.NoError(t, audio.Close())
	require.Len(t, l.lines, 4)
	require.Contains(t, l.lines[2], "done attempt 1: answered retry=false status=200")
	require.Equal(t, "end call: answered attempts=1 status=200 err=false", l.lines[3])
}

// A request id is text from the network: the trace and the log get it
// redacted and bounded as the *APIError does, however long the server
// makes it.
func TestCallTraceRequestIDIsBounded(t *testing.T) {
	huge := "id-" + testKey + strings.Repeat("r", 300<<10)
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Request-Id", huge)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	var (
		mu  sync.Mutex
		ids []string
	)
	note := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, id)
	}
	logs := &logCapture{}
	c := ts.client(t, WithLogger(slog.New(logs)), WithCallTrace(&CallTrace{
		AttemptDone: func(_ context.Context, a AttemptInfo) { note(a.RequestID) },
		CallDone:    func(_ context.Context, c CallInfo, _ error) { note(c.RequestID) },
	}))
	err := c.Post(context.Background(), "/x/v2/new", nil, nil)
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	require.Len(t, ids, 4, "three attempts and the call")
	for _, id := range ids {
		require.LessOrEqual(t, len(id), maxMessage)
		require.Equal(t, ae.RequestID, id, "the trace tells the id the error holds")
		require.Empty(t, leak(id, testKey))
	}
	for _, line := range logs.lines {
		require.Less(t, len(line), 4<<10)
		require.Empty(t, leak(line, testKey))
	}
}

// Two CallTraces (a Client's telemetry and a call's own) each get back the
// contexts their own hooks made, so that each ends what it started; one
// given both to New and to the call runs once.
// Two CallTraces (a Client's telemetry and a call's own) each get back the
// contexts their own hooks made, so that each ends what it started; one
// given both to New and to the call runs once.
func TestCallTracesEachGetTheirOwnContexts(t *testing.T) {
	n := 0
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if n++; n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"success":true,"data":"https://f.example/a.wav"}`))
	})
	type mark struct{} // one key for both, as OpenTelemetry keeps its span
	var (
		mu    sync.Mutex
		wrong []string
		runs  = map[string]int{}
	)
	traced := func(name string) *CallTrace {
		check := func(ctx context.Context, hook, want string) {
			mu.Lock()
			defer mu.Unlock()
			runs[name+" "+hook]++
			if got, _ := ctx.Value(mark{}).(string); got != name+" "+want {
				wrong = append(wrong, fmt.Sprintf("%s %s got the context of %q, want %q", name, hook, got, name+" "+want))
			}
		}
		return &CallTrace{
			CallStart: func(ctx context.Context, _ CallInfo) context.Context {
				return context.WithValue(ctx, mark{}, name+" call")
			},
			AttemptStart: func(ctx context.Context, a AttemptInfo) context.Context {
				return context.WithValue(ctx, mark{}, name+fmt.Sprint(" attempt ", a.Attempt))
			},
			AttemptDone: func(ctx context.Context, a AttemptInfo) {
				check(ctx, "AttemptDone", fmt.Sprint("attempt ", a.Attempt))
			},
			CallDone: func(ctx context.Context, _ CallInfo, _ error) { check(ctx, "CallDone", "call") },
		}
	}
	clients, calls := traced("client"), traced("call")
	c := ts.client(t, WithCallTrace(clients))
	_, err := c.TextToMusic(context.Background(), TextToMusicRequest{Prompt: "p"}, WithCallTrace(calls), WithCallTrace(clients))
	require.NoError(t, err)
	require.Empty(t, wrong)
	for _, name := range []string{"client", "call"} {
		require.Equal(t, 2, runs[name+" AttemptDone"], "%s: one AttemptDone an attempt", name)
		require.Equal(t, 1, runs[name+" CallDone"], "%s: one CallDone a call", name)
	}
}
