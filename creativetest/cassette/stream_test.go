package cassette_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/creativetest/cassette"
	"github.com/creativegen/creative-go/ids"
)

// speechChunks are what the service streams, 200 ms apart.
func speechChunks() [][]byte {
	var out [][]byte
	for i := range 5 {
		c := bytes.Repeat([]byte{byte('a' + i)}, 700+i)
		if i == 0 {
			c = append([]byte("ID3\x03\x00\x00\x00\x00\x00\x00"), c...)
		}
		out = append(out, c)
	}
	return out
}

const chunkPause = 200 * time.Millisecond

// An arrival is what one Read of the stream gave, and when.
type arrival struct {
	data []byte
	at   time.Duration
}

// listen reads a speech stream as a player would, noting when each piece
// came.
func listen(t *testing.T, c *creative.Client) []arrival {
	t.Helper()
	start := time.Now()
	a, err := c.TextToSpeech(context.Background(), creative.TextToSpeechRequest{Prompt: "hello", VoiceID: ids.VoiceMale1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var out []arrival
	buf := make([]byte, 64<<10)
	for {
		n, err := a.Read(buf)
		if n > 0 {
			out = append(out, arrival{bytes.Clone(buf[:n]), time.Since(start)})
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestASpeechStreamReplaysItsChunksInOrderAndPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := creativetest.NewServer(creativetest.WithInMemoryNetwork())
		defer srv.Close()
		srv.Handle("audio/text-to-speech", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "audio/mpeg")
			for i, c := range speechChunks() {
				if i > 0 {
					time.Sleep(chunkPause)
				}
				_, _ = w.Write(c)
				_ = http.NewResponseController(w).Flush()
			}
		})
		dir := t.TempDir()
		rec := open(t, dir, cassette.Record, srv)
		live := listen(t, srv.Client(rec.Option()))
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		want := speechChunks()
		// Pieces read at one instant are one chunk: the SDK reads the
		// first bytes apart, to know the audio's type.
		chunks := func(got []arrival) []arrival {
			var out []arrival
			for _, g := range got {
				if k := len(out); k > 0 && out[k-1].at == g.at {
					out[k-1].data = append(out[k-1].data, g.data...)
					continue
				}
				out = append(out, g)
			}
			return out
		}
		check := func(name string, got []arrival, paced bool) {
			t.Helper()
			got = chunks(got)
			if !paced {
				if len(got) != 1 || got[0].at != 0 || !bytes.Equal(got[0].data, bytes.Join(want, nil)) {
					t.Errorf("%s: %d pieces, the first after %v, want the whole stream at once", name, len(got), got[0].at)
				}
				return
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d chunks, want %d", name, len(got), len(want))
			}
			for i, g := range got {
				if !bytes.Equal(g.data, want[i]) {
					t.Errorf("%s: chunk %d holds %d bytes %.12q..., want %d bytes %.12q...", name, i, len(g.data), g.data, len(want[i]), want[i])
				}
				if at := time.Duration(i) * chunkPause; g.at != at {
					t.Errorf("%s: chunk %d came after %v, want %v", name, i, g.at, at)
				}
			}
		}
		check("live", live, true)
		index, _ := files(t, dir)["cassette.jsonl"]
		if !strings.Contains(index, `"chunks":[[710,0],[701,200],[702,400],[703,600],[704,800]]`) {
			t.Errorf("the index holds %s", index)
		}

		var sent atomicCount
		rep := open(t, dir, cassette.Replay, nil)
		paced, err := cassette.Open(dir, cassette.Replay, &cassette.Options{IgnoreEnv: true})
		if err != nil {
			t.Fatal(err)
		}
		defer paced.Close()
		check("replay", listen(t, offline(t, paced, &sent.n)), true)
		check("replay without pacing", listen(t, offline(t, rep, &sent.n)), false)
		if sent.n.Load() != 0 || len(srv.Requests()) != 1 {
			t.Errorf("replays sent %d requests; the service saw %d in all", sent.n.Load(), len(srv.Requests()))
		}
	})
}

// A stream read to its declared length and closed, its end never read,
// is kept; one closed half-way is not, and the next record-missing run
// pays for it again.
func TestAStreamIsKeptWhenWholeAndOnlyThen(t *testing.T) {
	ctx := context.Background()
	srv := creativetest.Start(t)
	dir := t.TempDir()
	rec := open(t, dir, cassette.Record, srv)
	c := srv.Client(rec.Option())
	speak := func(prompt string, part bool) {
		a, err := c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: prompt, VoiceID: ids.VoiceMale1})
		if err != nil {
			t.Fatal(err)
		}
		n := a.ContentLength
		if part {
			n /= 2
		}
		if _, err := io.ReadFull(a, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
	speak("whole", false)
	speak("half", true)
	rec.Close()
	srv.Reset()
	again := open(t, dir, cassette.RecordMissing, srv)
	c = srv.Client(again.Option())
	speak("whole", false)
	speak("half", false)
	if n := srv.Count("audio/text-to-speech"); n != 1 || again.Replayed() != 1 {
		t.Errorf("the second run paid %d streams and replayed %d, want the half-read one paid again and the whole one replayed", n, again.Replayed())
	}
}
