// Package bench measures the SDK against a hand-written net/http +
// encoding/json call doing the same work, in the same process and run.
// Every benchmark has the sub-benchmarks raw and sdk; BenchmarkImages also
// has floor, the least work that hands back decoded images. The baselines
// run first and the later cases report their time as a ratio to the
// baselines' median (x-raw, x-floor); see README.md.
package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/ids"
	fastbase64 "github.com/segmentio/asm/base64"
)

const key = "bench-key"

// server answers every request with a fixed body, after reading the
// request body, and counts the connections opened to it.
type server struct {
	*httptest.Server
	conns atomic.Int64
}

func newServer(b *testing.B, contentType string, body []byte) *server {
	b.Helper()
	s := &server{}
	length := strconv.Itoa(len(body))
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", length)
		_, _ = w.Write(body)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	b.Cleanup(s.Close)
	return s
}

func sdkClient(b *testing.B, url string) *creative.Client {
	b.Helper()
	c, err := creative.New(creative.WithBaseURL(url), creative.WithAccessKey(key))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.CloseIdleConnections)
	return c
}

// rawPost is the hand-written call: JSON in, the 200 response handed to
// read, which reads its body.
func rawPost(hc *http.Client, url string, in any, read func(*http.Response) error) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-access-key", key)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return read(resp)
}

// perOp is what one run of a case cost per op.
type perOp struct {
	ns     float64 // time
	allocs float64 // heap allocations, as allocs/op
	bytes  float64 // bytes allocated, as B/op
	conns  float64 // connections the server saw opened (BenchmarkConcurrent)
}

// measure runs op under b.Loop and returns its cost per op; an error from
// op ends the benchmark. The memory statistics are read around the loop,
// as the testing package reads them for -benchmem, so allocs and bytes are
// allocs/op and B/op.
func measure(b *testing.B, op func() error) perOp {
	b.ReportAllocs()
	var start, end runtime.MemStats
	runtime.ReadMemStats(&start)
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&end)
	n := float64(b.N)
	return perOp{
		ns:     float64(b.Elapsed().Nanoseconds()) / n,
		allocs: float64(end.Mallocs-start.Mallocs) / n,
		bytes:  float64(end.TotalAlloc-start.TotalAlloc) / n,
	}
}

// baselines holds, by case name, the runs of the cases that later cases of
// the same benchmark are compared with. The testing package runs one case
// -count times before the next, so a ratio is to the median of the
// baseline's runs in this process, not to one run of it. A case run alone
// (-bench Images/sdk) reports no ratio.
type baselines map[string][]perOp

func (bl baselines) add(name string, m perOp) { bl[name] = append(bl[name], m) }

// median returns the median of f over the runs of name; ok is false when
// name has not run.
func (bl baselines) median(name string, f func(perOp) float64) (v float64, ok bool) {
	runs := bl[name]
	if len(runs) == 0 {
		return 0, false
	}
	vs := make([]float64, len(runs))
	for i, r := range runs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// ratios reports m's time over each baseline's median time, in units
// x-<name>: 1.04 x-raw is 4% slower than raw.
func (bl baselines) ratios(b *testing.B, m perOp, names ...string) {
	for _, name := range names {
		if ns, ok := bl.median(name, func(p perOp) float64 { return p.ns }); ok && ns > 0 {
			b.ReportMetric(m.ns/ns, "x-"+name)
		}
	}
}

// paired runs base and op in turn within each op of b, each first every
// other time, and reports op's total time over base's as x-<name>. Drift
// of the machine (another process, the CPU's clock) falls on both alike,
// so the ratio is steadier than one of cases run seconds apart. It suits
// two ops that allocate alike, since each pays for garbage of the other.
// It also reports the median of the ratios of each op's two calls as
// x-<name>-med: a call that another process held up for a while moves the
// total of one side, and the median of the pairs not at all.
func paired(b *testing.B, name string, base, op func() error) {
	var tBase, tOp time.Duration
	timed := func(f func() error, d *time.Duration) time.Duration {
		t := time.Now()
		err := f()
		took := time.Since(t)
		*d += took
		if err != nil {
			b.Fatal(err)
		}
		return took
	}
	var ratios ratioHist
	b.ReportAllocs()
	first := false
	for b.Loop() {
		var dBase, dOp time.Duration
		if first = !first; first {
			dBase = timed(base, &tBase)
			dOp = timed(op, &tOp)
		} else {
			dOp = timed(op, &tOp)
			dBase = timed(base, &tBase)
		}
		ratios.add(dOp, dBase)
	}
	b.ReportMetric(float64(tOp)/float64(tBase), "x-"+name)
	if m, ok := ratios.median(); ok {
		b.ReportMetric(m, "x-"+name+"-med")
	}
}

// ratioHist counts ratios of two durations in bins a thousandth wide on a
// log scale, from 1/16 to 16 (the outer bins take whatever lies beyond):
// a median to within 0.05%, in a fixed 45 KiB, whatever the number of ops.
type ratioHist struct {
	n     [2 * ratioBins]int
	total int
}

const ratioBins = 2774 // log(16)/log(1.001), bins on each side of 1

func (h *ratioHist) add(a, b time.Duration) {
	if a <= 0 || b <= 0 {
		return
	}
	i := ratioBins + int(math.Floor(math.Log(float64(a)/float64(b))/math.Log1p(0.001)))
	h.n[min(max(i, 0), len(h.n)-1)]++
	h.total++
}

// median returns the middle bin's centre; ok is false when nothing was
// counted.
func (h *ratioHist) median() (float64, bool) {
	if h.total == 0 {
		return 0, false
	}
	seen := 0
	for i, c := range h.n {
		if seen += c; 2*seen >= h.total {
			return math.Exp((float64(i-ratioBins) + 0.5) * math.Log1p(0.001)), true
		}
	}
	return 0, false
}

// The median of the pairs is the middle pair's ratio, within a bin's
// width, whatever the other pairs took.
func TestRatioHistMedian(t *testing.T) {
	var h ratioHist
	if _, ok := h.median(); ok {
		t.Fatal("a median of nothing")
	}
	for _, p := range [][2]time.Duration{{100, 100}, {103, 100}, {1, 1000}, {5000, 10}, {90, 100}, {1030, 1000}, {7, 7}} {
		h.add(p[0], p[1])
	}
	h.add(0, 5) // a pair that took no time is left out
	// In order: 0.001, 0.9, 1, 1, 1.03, 1.03, 500.
	m, ok := h.median()
	if !ok || math.Abs(m-1) > 0.001 {
		t.Fatalf("median %v, %v; want 1 within 0.1%%", m, ok)
	}
	h.add(1030, 1000)
	h.add(1030, 1000)
	if m, _ = h.median(); math.Abs(m-1.03) > 0.0011 {
		t.Fatalf("median %v; want 1.03 within 0.1%%", m)
	}
}

type musicReq struct {
	Prompt string `json:"prompt"`
}

// BenchmarkCall is one small call. sdk reports its time over raw's (x-raw)
// and the allocations it makes beyond raw's (allocs-over-raw); paired
// reports the time ratio from calls made in turn.
// decodeMusic is raw's reading of a music answer: its envelope decoded
// with encoding/json, and checked.
func decodeMusic(resp *http.Response) error {
	var env struct {
		Success bool   `json:"success"`
		Data    string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return err
	}
	if !env.Success || env.Data == "" {
		return fmt.Errorf("bad envelope")
	}
	return nil
}

func BenchmarkCall(b *testing.B) {
	s := newServer(b, "application/json", []byte(`{"success":true,"message":"Music generated","data":"https://files.example.com/a.wav"}`))
	url := s.URL + "/audio/v1/text-to-music"
	raw := func() error {
		return rawPost(http.DefaultClient, url, musicReq{"calm piano"}, decodeMusic)
	}
	c := sdkClient(b, s.URL)
	ctx := context.Background()
	sdk := func() error {
		_, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano"})
		return err
	}
	bl := baselines{}
	b.Run("raw", func(b *testing.B) { bl.add("raw", measure(b, raw)) })
	b.Run("sdk", func(b *testing.B) {
		m := measure(b, sdk)
		bl.ratios(b, m, "raw")
		if allocs, ok := bl.median("raw", func(p perOp) float64 { return p.allocs }); ok {
			b.ReportMetric(m.allocs-allocs, "allocs-over-raw")
		}
	})
	b.Run("paired", func(b *testing.B) { paired(b, "raw", raw, sdk) })
}

// inMemory is a transport that reads a request's body to its end and
// answers every request with body, from memory.
type inMemory struct{ body []byte }

func (m inMemory) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(m.body)),
		ContentLength: int64(len(m.body)),
		Request:       r,
	}, nil
}

// BenchmarkCallInMemory is BenchmarkCall's call through a transport that
// answers from memory, on both sides: the calling goroutine's own work,
// without the network, the server or net/http's transport. paired reports
// the SDK's time over raw's.
func BenchmarkCallInMemory(b *testing.B) {
	body := []byte(`{"success":true,"message":"Music generated","data":"https://files.example.com/a.wav"}`)
	const base = "http://127.0.0.1:1"
	rawClient := &http.Client{Transport: inMemory{body}}
	raw := func() error {
		return rawPost(rawClient, base+"/audio/v1/text-to-music", musicReq{"calm piano"}, decodeMusic)
	}
	c, err := creative.New(creative.WithBaseURL(base), creative.WithAccessKey(key), creative.WithHTTPClient(&http.Client{Transport: inMemory{body}}))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	sdk := func() error {
		_, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano"})
		return err
	}
	b.Run("paired", func(b *testing.B) { paired(b, "raw", raw, sdk) })
}

// base64Key opens each image's base64 string in the images answer.
var base64Key = []byte(`"base64":"`)

// floorImages is the least work that still hands the caller decoded
// images: the body read into a fresh buffer of its Content-Length, each
// base64 string found with bytes.Index and decoded in place with the SIMD
// decoder the SDK uses (github.com/segmentio/asm/base64), so the floor stays
// the least possible work. No JSON is
// parsed and nothing is checked beyond what decoding needs: it is what an
// images call cannot do with less, not a client.
func floorImages(url string, in any, n int) ([][]byte, error) {
	var ims [][]byte
	err := rawPost(http.DefaultClient, url, in, func(resp *http.Response) error {
		if resp.ContentLength < 0 {
			return errors.New("no Content-Length")
		}
		buf := make([]byte, resp.ContentLength)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return err
		}
		ims = make([][]byte, 0, n)
		for i := 0; ; {
			j := bytes.Index(buf[i:], base64Key)
			if j < 0 {
				return nil
			}
			start := i + j + len(base64Key)
			end := bytes.IndexByte(buf[start:], '"')
			if end < 0 {
				return errors.New("unterminated base64 string")
			}
			end += start
			k, err := fastbase64.StdEncoding.Decode(buf[start:end], buf[start:end])
			if err != nil {
				return err
			}
			ims = append(ims, buf[start:start+k:start+k])
			i = end + 1
		}
	})
	return ims, err
}

// rawImages is the hand-written images call: the body read whole and
// unmarshalled by encoding/json, which decodes the base64 into []byte.
func rawImages(url string, in any) ([][]byte, error) {
	var ims [][]byte
	err := rawPost(http.DefaultClient, url, in, func(resp *http.Response) error {
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		var env struct {
			Success bool `json:"success"`
			Data    []struct {
				Base64 []byte `json:"base64"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			return err
		}
		if !env.Success {
			return fmt.Errorf("bad envelope")
		}
		ims = make([][]byte, len(env.Data))
		for i, d := range env.Data {
			ims[i] = d.Base64
		}
		return nil
	})
	return ims, err
}

// BenchmarkImages is one text-to-image call answered with ten 1 MiB
// images, every case against the same server and body. Each case reports
// the bytes it allocated per decoded image byte (alloc-B/decoded-B); raw
// reports its time over floor's, sdk over floor's and raw's, and paired
// sdk's over floor's from calls made in turn.
func BenchmarkImages(b *testing.B) {
	const n, size = 10, 1 << 20
	var body bytes.Buffer
	body.WriteString(`{"success":true,"message":"Images generated","data":[`)
	img := make([]byte, size)
	_, _ = rand.Read(img)
	for i := 0; i < n; i++ {
		if i > 0 {
			body.WriteString(",")
		}
		body.WriteString(`{"base64":"` + base64.StdEncoding.EncodeToString(img) + `"}`)
	}
	body.WriteString("]}")
	s := newServer(b, "application/json", body.Bytes())
	url := s.URL + "/image/v1/text-to-image"
	rawReq := map[string]any{"prompt": "a fox", "numberOfResults": n}
	c := sdkClient(b, s.URL)
	ctx := context.Background()
	sdkReq := creative.TextToImageRequest{Prompt: "a fox", NumberOfResults: n, StyleID: ids.StyleAnime}
	wrong := fmt.Errorf("want %d images of %d bytes", n, size)

	// Each op checks the count and one length: all of every image is
	// checked once, below, before the cases run.
	floor := func() error {
		ims, err := floorImages(url, rawReq, n)
		if err == nil && (len(ims) != n || len(ims[n-1]) != size) {
			err = wrong
		}
		return err
	}
	raw := func() error {
		ims, err := rawImages(url, rawReq)
		if err == nil && (len(ims) != n || len(ims[n-1]) != size) {
			err = wrong
		}
		return err
	}
	sdk := func() error {
		ims, err := c.TextToImage(ctx, sdkReq)
		if err == nil && (len(ims) != n || len(ims[n-1].Data) != size) {
			err = wrong
		}
		return err
	}
	for _, k := range []struct {
		name string
		call func() ([][]byte, error)
	}{
		{"floor", func() ([][]byte, error) { return floorImages(url, rawReq, n) }},
		{"raw", func() ([][]byte, error) { return rawImages(url, rawReq) }},
		{"sdk", func() ([][]byte, error) {
			ims, err := c.TextToImage(ctx, sdkReq)
			data := make([][]byte, len(ims))
			for i, im := range ims {
				data[i] = im.Data
			}
			return data, err
		}},
	} {
		ims, err := k.call()
		if err != nil || len(ims) != n {
			b.Fatal(k.name, err, len(ims))
		}
		for i, im := range ims {
			if !bytes.Equal(im, img) {
				b.Fatalf("%s: image %d differs from the one sent", k.name, i)
			}
		}
	}

	decoded := float64(n * size)
	bl := baselines{}
	run := func(b *testing.B, name string, op func() error, than ...string) {
		b.SetBytes(int64(decoded))
		m := measure(b, op)
		b.ReportMetric(m.bytes/decoded, "alloc-B/decoded-B")
		bl.ratios(b, m, than...)
		bl.add(name, m)
	}
	b.Run("floor", func(b *testing.B) { run(b, "floor", floor) })
	b.Run("raw", func(b *testing.B) { run(b, "raw", raw, "floor") })
	b.Run("sdk", func(b *testing.B) { run(b, "sdk", sdk, "floor", "raw") })
	b.Run("paired", func(b *testing.B) { paired(b, "floor", floor, sdk) })
}

func BenchmarkSpeech(b *testing.B) {
	const size = 20 << 20
	audio := bytes.Repeat([]byte{0xff, 0xfb, 0x14, 0xc4}, size/4)
	s := newServer(b, "audio/mpeg", audio)
	url := s.URL + "/audio/v1/text-to-speech"
	raw := func() error {
		return rawPost(http.DefaultClient, url, map[string]string{"prompt": "hello", "voiceId": string(ids.VoiceFemale1)}, func(resp *http.Response) error {
			n, err := io.Copy(io.Discard, resp.Body)
			if err == nil && n != size {
				err = fmt.Errorf("short: %d", n)
			}
			return err
		})
	}
	c := sdkClient(b, s.URL)
	ctx := context.Background()
	sdk := func() error {
		a, err := c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: "hello", VoiceID: ids.VoiceFemale1})
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, a)
		a.Close()
		if err == nil && n != size {
			err = fmt.Errorf("short: %d", n)
		}
		return err
	}
	bl := baselines{}
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(size)
		bl.add("raw", measure(b, raw))
	})
	b.Run("sdk", func(b *testing.B) {
		b.SetBytes(size)
		bl.ratios(b, measure(b, sdk), "raw")
	})
}

// uploadMiB is the size of BenchmarkUpload's file: 256 MiB, or
// BENCH_UPLOAD_MIB.
func uploadMiB() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_UPLOAD_MIB")); err == nil && v > 0 {
		return v
	}
	return 256
}

var (
	uploadOnce sync.Once
	uploadPath string
)

// uploadFile writes the upload once per process, in a directory removed
// when the process's benchmarks end.
func uploadFile(b *testing.B) string {
	uploadOnce.Do(func() {
		dir, err := os.MkdirTemp("", "creative-bench-")
		if err != nil {
			b.Fatal(err)
		}
		uploadPath = filepath.Join(dir, "big.wav")
		f, err := os.Create(uploadPath)
		if err != nil {
			b.Fatal(err)
		}
		chunk := make([]byte, 1<<20)
		copy(chunk, "RIFF\x00\x00\x00\x00WAVE")
		for i := 0; i < uploadMiB(); i++ {
			chunk[len(chunk)-1] = byte(i)
			if _, err := f.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	})
	return uploadPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if uploadPath != "" {
		os.RemoveAll(filepath.Dir(uploadPath))
	}
	os.Exit(code)
}

// peakHeap samples HeapInuse until stop is closed and returns the peak
// above the heap in use at the start.
func peakHeap(stop <-chan struct{}) <-chan float64 {
	out := make(chan float64, 1)
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base, peak := m.HeapInuse, m.HeapInuse
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				out <- float64(peak-base) / (1 << 20)
				return
			case <-t.C:
			}
		}
	}()
	return out
}

func BenchmarkUpload(b *testing.B) {
	path := uploadFile(b)
	st, _ := os.Stat(path)
	s := newServer(b, "application/json", []byte(`{"success":true,"message":"ok","data":"https://files.example.com/e.wav"}`))
	url := s.URL + "/audio/v1/enhance"
	c := sdkClient(b, s.URL)
	ctx := context.Background()
	sdk := func() error {
		_, err := c.EnhanceAudio(ctx, creative.EnhanceAudioRequest{Audio: creative.FileFromPath(path), TypeID: ids.EnhancePodcast})
		return err
	}
	// run measures op and the peak heap above the start (peak-heap-MiB).
	run := func(b *testing.B, op func() error) perOp {
		b.SetBytes(st.Size())
		stop := make(chan struct{})
		peak := peakHeap(stop)
		m := measure(b, op)
		close(stop)
		b.ReportMetric(<-peak, "peak-heap-MiB")
		return m
	}
	bl := baselines{}
	b.Run("raw", func(b *testing.B) { bl.add("raw", run(b, func() error { return rawUpload(url, path) })) })
	b.Run("sdk", func(b *testing.B) { bl.ratios(b, run(b, sdk), "raw") })
}

// rawUpload streams a multipart form through an io.Pipe, the usual
// hand-written way (chunked: the length is not computed).
func rawUpload(url, path string) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			if err := mw.WriteField("typeId", string(ids.EnhancePodcast)); err != nil {
				return err
			}
			part, err := mw.CreateFormFile("audio", filepath.Base(path))
			if err != nil {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(part, f); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest(http.MethodPost, url, pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("x-access-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// BenchmarkConcurrent makes 2,000 calls from 64 goroutines per op, each op
// with a fresh client (a cold pool, as a program starting a batch would
// have), and reports the TCP connections the server saw opened per op. raw
// is a client tuned for this load (64 idle connections per host). sdk
// reports its time and connections over raw's (x-raw, conns-x-raw), and
// paired the same from batches run in turn.
func BenchmarkConcurrent(b *testing.B) {
	const calls, workers = 2000, 64
	body := []byte(`{"success":true,"message":"ok","data":"https://files.example.com/a.wav"}`)
	// batch returns one op: a fresh client from newCall, its calls made by
	// the workers, its idle connections closed at the end.
	batch := func(newCall func() (call func() error, done func())) func() error {
		return func() error {
			call, done := newCall()
			defer done()
			var wg sync.WaitGroup
			var next atomic.Int64
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= calls {
						if err := call(); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			return <-errs
		}
	}
	rawSrv := newServer(b, "application/json", body)
	rawURL := rawSrv.URL + "/audio/v1/text-to-music"
	raw := batch(func() (func() error, func()) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = workers
		hc := &http.Client{Transport: tr}
		return func() error {
			return rawPost(hc, rawURL, musicReq{"calm piano"}, func(resp *http.Response) error {
				var env struct {
					Data string `json:"data"`
				}
				return json.NewDecoder(resp.Body).Decode(&env)
			})
		}, tr.CloseIdleConnections
	})
	sdkSrv := newServer(b, "application/json", body)
	ctx := context.Background()
	sdk := batch(func() (func() error, func()) {
		c, err := creative.New(creative.WithBaseURL(sdkSrv.URL), creative.WithAccessKey(key))
		if err != nil {
			return func() error { return err }, func() {}
		}
		return func() error {
			_, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano"})
			return err
		}, c.CloseIdleConnections
	})
	// run measures op and the connections s saw opened per op (conns/op).
	run := func(b *testing.B, s *server, op func() error) perOp {
		before := s.conns.Load()
		m := measure(b, op)
		m.conns = float64(s.conns.Load()-before) / float64(b.N)
		b.ReportMetric(m.conns, "conns/op")
		return m
	}
	bl := baselines{}
	b.Run("raw", func(b *testing.B) { bl.add("raw", run(b, rawSrv, raw)) })
	b.Run("sdk", func(b *testing.B) {
		m := run(b, sdkSrv, sdk)
		bl.ratios(b, m, "raw")
		if c, ok := bl.median("raw", func(p perOp) float64 { return p.conns }); ok && c > 0 {
			b.ReportMetric(m.conns/c, "conns-x-raw")
		}
	})
	b.Run("paired", func(b *testing.B) {
		r0, s0 := rawSrv.conns.Load(), sdkSrv.conns.Load()
		paired(b, "raw", raw, sdk)
		if r := rawSrv.conns.Load() - r0; r > 0 {
			b.ReportMetric(float64(sdkSrv.conns.Load()-s0)/float64(r), "conns-x-raw")
		}
	})
}
