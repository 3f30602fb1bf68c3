// Package bench measures the SDK against a hand-written net/http +
// encoding/json call doing the same work, in the same process and run.
// Every benchmark has two sub-benchmarks, sdk and raw; see README.md.
package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/ids"
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

// rawPost is the hand-written call: JSON in, the response handed to read.
func rawPost(hc *http.Client, url string, in any, read func(io.Reader) error) error {
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
	return read(resp.Body)
}

type musicReq struct {
	Prompt string `json:"prompt"`
}

func BenchmarkCall(b *testing.B) {
	s := newServer(b, "application/json", []byte(`{"success":true,"message":"Music generated","data":"https://files.example.com/a.wav"}`))
	b.Run("sdk", func(b *testing.B) {
		c := sdkClient(b, s.URL)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		url := s.URL + "/audio/v1/text-to-music"
		b.ReportAllocs()
		for b.Loop() {
			err := rawPost(http.DefaultClient, url, musicReq{"calm piano"}, func(r io.Reader) error {
				var env struct {
					Success bool   `json:"success"`
					Data    string `json:"data"`
				}
				if err := json.NewDecoder(r).Decode(&env); err != nil {
					return err
				}
				if !env.Success || env.Data == "" {
					return fmt.Errorf("bad envelope")
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

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
	decoded := float64(n * size)
	report := func(b *testing.B, start runtime.MemStats) {
		var end runtime.MemStats
		runtime.ReadMemStats(&end)
		b.ReportMetric(float64(end.TotalAlloc-start.TotalAlloc)/float64(b.N)/decoded, "alloc-B/decoded-B")
	}
	b.Run("sdk", func(b *testing.B) {
		c := sdkClient(b, s.URL)
		ctx := context.Background()
		b.ReportAllocs()
		b.SetBytes(int64(decoded))
		var start runtime.MemStats
		runtime.ReadMemStats(&start)
		for b.Loop() {
			ims, err := c.TextToImage(ctx, creative.TextToImageRequest{Prompt: "a fox", NumberOfResults: n, StyleID: ids.StyleAnime})
			if err != nil || len(ims) != n || len(ims[n-1].Data) != size {
				b.Fatal(err, len(ims))
			}
		}
		report(b, start)
	})
	b.Run("raw", func(b *testing.B) {
		url := s.URL + "/image/v1/text-to-image"
		b.ReportAllocs()
		b.SetBytes(int64(decoded))
		var start runtime.MemStats
		runtime.ReadMemStats(&start)
		for b.Loop() {
			err := rawPost(http.DefaultClient, url, map[string]any{"prompt": "a fox", "numberOfResults": n}, func(r io.Reader) error {
				raw, err := io.ReadAll(r)
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
				if len(env.Data) != n || len(env.Data[n-1].Base64) != size {
					return fmt.Errorf("bad data")
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
}

func BenchmarkSpeech(b *testing.B) {
	const size = 20 << 20
	audio := bytes.Repeat([]byte{0xff, 0xfb, 0x14, 0xc4}, size/4)
	s := newServer(b, "audio/mpeg", audio)
	b.Run("sdk", func(b *testing.B) {
		c := sdkClient(b, s.URL)
		ctx := context.Background()
		b.ReportAllocs()
		b.SetBytes(size)
		for b.Loop() {
			a, err := c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: "hello", VoiceID: ids.VoiceFemale1})
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, a)
			a.Close()
			if err != nil || n != size {
				b.Fatal(err, n)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		url := s.URL + "/audio/v1/text-to-speech"
		b.ReportAllocs()
		b.SetBytes(size)
		for b.Loop() {
			err := rawPost(http.DefaultClient, url, map[string]string{"prompt": "hello", "voiceId": string(ids.VoiceFemale1)}, func(r io.Reader) error {
				n, err := io.Copy(io.Discard, r)
				if err == nil && n != size {
					err = fmt.Errorf("short: %d", n)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
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
	b.Run("sdk", func(b *testing.B) {
		c := sdkClient(b, s.URL)
		ctx := context.Background()
		b.ReportAllocs()
		b.SetBytes(st.Size())
		stop := make(chan struct{})
		peak := peakHeap(stop)
		for b.Loop() {
			if _, err := c.EnhanceAudio(ctx, creative.EnhanceAudioRequest{Audio: creative.FileFromPath(path), TypeID: ids.EnhancePodcast}); err != nil {
				b.Fatal(err)
			}
		}
		close(stop)
		b.ReportMetric(<-peak, "peak-heap-MiB")
	})
	b.Run("raw", func(b *testing.B) {
		url := s.URL + "/audio/v1/enhance"
		b.ReportAllocs()
		b.SetBytes(st.Size())
		stop := make(chan struct{})
		peak := peakHeap(stop)
		for b.Loop() {
			if err := rawUpload(url, path); err != nil {
				b.Fatal(err)
			}
		}
		close(stop)
		b.ReportMetric(<-peak, "peak-heap-MiB")
	})
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
// have), and reports the TCP connections the server saw opened per op.
func BenchmarkConcurrent(b *testing.B) {
	const calls, workers = 2000, 64
	body := []byte(`{"success":true,"message":"ok","data":"https://files.example.com/a.wav"}`)
	run := func(b *testing.B, s *server, newCall func() (call func() error, done func())) {
		b.ReportAllocs()
		for b.Loop() {
			call, done := newCall()
			var wg sync.WaitGroup
			var next atomic.Int64
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= calls {
						if err := call(); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			done()
		}
		b.ReportMetric(float64(s.conns.Load())/float64(b.N), "conns/op")
	}
	b.Run("sdk", func(b *testing.B) {
		s := newServer(b, "application/json", body)
		ctx := context.Background()
		run(b, s, func() (func() error, func()) {
			c, err := creative.New(creative.WithBaseURL(s.URL), creative.WithAccessKey(key))
			if err != nil {
				b.Fatal(err)
			}
			return func() error {
				_, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano"})
				return err
			}, c.CloseIdleConnections
		})
	})
	b.Run("raw", func(b *testing.B) {
		s := newServer(b, "application/json", body)
		url := s.URL + "/audio/v1/text-to-music"
		run(b, s, func() (func() error, func()) {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = workers
			hc := &http.Client{Transport: tr}
			return func() error {
				return rawPost(hc, url, musicReq{"calm piano"}, func(r io.Reader) error {
					var env struct {
						Data string `json:"data"`
					}
					return json.NewDecoder(r).Decode(&env)
				})
			}, tr.CloseIdleConnections
		})
	})
}
