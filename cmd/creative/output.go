package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	creative "github.com/creativegen/creative-go"
)

// progress counts the bytes of an upload or download in flight.
type progress struct{ bytes atomic.Int64 }

// countingFile is an *os.File that counts what is read of it, keeping
// ReadAt and Seek so the SDK can re-read it for a retry.
type countingFile struct {
	f *os.File
	p *progress
}

func (c *countingFile) Read(b []byte) (int, error) {
	n, err := c.f.Read(b)
	c.p.bytes.Add(int64(n))
	return n, err
}

func (c *countingFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(b, off)
	c.p.bytes.Add(int64(n))
	return n, err
}

func (c *countingFile) Seek(off int64, whence int) (int64, error) { return c.f.Seek(off, whence) }

// showProgress writes the elapsed time (and bytes) on stderr, in place,
// while a call runs, when stderr is a terminal. The returned func stops it
// and clears the line.
func (a *app) showProgress(label string, p *progress) func() {
	if !a.progress {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(a.stderr, "\r\033[K")
				return
			case <-t.C:
				line := fmt.Sprintf("\r\033[K%s %.1fs", label, time.Since(start).Seconds())
				if p != nil && p.bytes.Load() > 0 {
					line += " " + humanBytes(p.bytes.Load())
				}
				fmt.Fprint(a.stderr, line)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + " B"
}

// writer turns a result into files under --out (or JSON on stdout).
type writer struct {
	app *app
	g   *globals
	c   *creative.Client
	op  string // file name stem, the operation's name
}

// jsonImage is how --json shows an image: nothing paid for is dropped.
type jsonImage struct {
	ContentType string `json:"contentType"`
	Bytes       int    `json:"bytes"`
	Base64      []byte `json:"base64"`
}

func (w *writer) write(ctx context.Context, res any) error {
	switch v := res.(type) {
	case *creative.WriterResult:
		if w.g.json {
			return jsonOut(w.app.stdout, v)
		}
		for i, ch := range v.Choices {
			if i > 0 {
				fmt.Fprintln(w.app.stdout, "\n---")
			}
			fmt.Fprintln(w.app.stdout, ch.Text)
		}
		return nil
	case creative.Image:
		return w.images([]creative.Image{v})
	case []creative.Image:
		return w.images(v)
	case creative.URL:
		return w.urls(ctx, []creative.URL{v})
	case []creative.URL:
		return w.urls(ctx, v)
	case *creative.Audio:
		defer v.Close()
		if w.g.json {
			b, err := io.ReadAll(v)
			if err != nil {
				return err
			}
			return jsonOut(w.app.stdout, struct {
				ContentType string `json:"contentType"`
				Bytes       int    `json:"bytes"`
				Base64      []byte `json:"base64"`
			}{v.ContentType, len(b), b})
		}
		ext := ".mp3"
		if !strings.Contains(v.ContentType, "mpeg") {
			ext = ".bin"
		}
		return w.save(ext, func(f *os.File) error { _, err := io.Copy(f, v); return err })
	}
	return fmt.Errorf("creative: no way to write a %T", res)
}

func (w *writer) images(ims []creative.Image) error {
	if w.g.json {
		out := make([]jsonImage, len(ims))
		for i, im := range ims {
			out[i] = jsonImage{im.ContentType(), len(im.Data), im.Data}
		}
		return jsonOut(w.app.stdout, out)
	}
	for _, im := range ims {
		if err := w.save(im.Ext(), func(f *os.File) error { _, err := im.WriteTo(f); return err }); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) urls(ctx context.Context, us []creative.URL) error {
	if w.g.json {
		return jsonOut(w.app.stdout, us)
	}
	if w.g.noDownload {
		for _, u := range us {
			fmt.Fprintln(w.app.stdout, u)
		}
		return nil
	}
	for _, u := range us {
		if err := w.download(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// download fetches u into a temporary file in --out, then gives it its
// final name from the content's first bytes.
func (w *writer) download(ctx context.Context, u creative.URL) error {
	tmp, err := os.CreateTemp(w.g.out, ".creative-download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	p := &progress{}
	stop := w.app.showProgress("download", p)
	_, err = w.c.Download(ctx, u, io.MultiWriter(tmp, progressWriter{p}))
	stop()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	head := make([]byte, 16)
	if f, err := os.Open(tmp.Name()); err == nil {
		n, _ := io.ReadFull(f, head)
		head = head[:n]
		f.Close()
	}
	ext := sniffExt(head, string(u))
	for n := 0; ; n++ {
		name := filepath.Join(w.g.out, stem(w.op, n)+ext)
		err := os.Link(tmp.Name(), name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(w.app.stdout, name)
		return nil
	}
}

type progressWriter struct{ p *progress }

func (p progressWriter) Write(b []byte) (int, error) {
	p.p.bytes.Add(int64(len(b)))
	return len(b), nil
}

// save creates the first free <op>[-N]<ext> in --out, never overwriting,
// writes it and prints its path.
func (w *writer) save(ext string, fill func(*os.File) error) error {
	for n := 0; ; n++ {
		name := filepath.Join(w.g.out, stem(w.op, n)+ext)
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = fill(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return err
		}
		fmt.Fprintln(w.app.stdout, name)
		return nil
	}
}

func stem(op string, n int) string {
	if n == 0 {
		return op
	}
	return op + "-" + strconv.Itoa(n)
}

// sniffExt names a downloaded file's extension from its first bytes, else
// from the URL's path.
func sniffExt(head []byte, link string) string {
	switch {
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WAVE":
		return ".wav"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return ".webp"
	case bytes.HasPrefix(head, []byte("ID3")), len(head) >= 2 && head[0] == 0xff && head[1]&0xe0 == 0xe0:
		return ".mp3"
	case bytes.HasPrefix(head, []byte("GIF8")):
		return ".gif"
	case bytes.HasPrefix(head, []byte("\x89PNG")):
		return ".png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return ".jpg"
	case len(head) >= 8 && string(head[4:8]) == "ftyp":
		return ".mp4"
	case bytes.HasPrefix(head, []byte("\x1a\x45\xdf\xa3")):
		return ".webm"
	case bytes.HasPrefix(head, []byte("OggS")):
		return ".ogg"
	case bytes.HasPrefix(head, []byte("fLaC")):
		return ".flac"
	}
	if u, err := url.Parse(link); err == nil {
		if ext := path.Ext(u.Path); ext != "" && len(ext) <= 6 {
			return ext
		}
	}
	return ".bin"
}
