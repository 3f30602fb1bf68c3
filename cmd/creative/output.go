package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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

	creative "github.com/creativegen/creative-go"
)

// A saver writes results as files in one directory. Every file is named
// by one rule, <stem>.<ext> for a result of one file and <stem>-1.<ext>,
// <stem>-2.<ext> ... for several, the number going up past names already
// taken; it is written to a temporary file in the same directory first and
// then linked to its name, so it appears whole or not at all, and never
// replaces a file. Files get mode 0644, less the umask.
type saver struct {
	dir    string
	c      *creative.Client
	status *callStatus // the call's; may be nil
	// opts are the call's options, given to each download too: they keep
	// status current.
	opts []creative.Option
	// saved is told each file's path as soon as it is in place.
	saved func(path string)
}

// A saved result is what save wrote, for batch's results.jsonl.
type saved struct {
	files []string
	urls  []string
	text  string
}

// save writes the result of one call. Writer texts are not files: their
// text is returned.
func (s *saver) save(ctx context.Context, stem string, res any) (out saved, err error) {
	switch v := res.(type) {
	case *creative.WriterResult:
		texts := make([]string, len(v.Choices))
		for i, ch := range v.Choices {
			texts[i] = ch.Text
		}
		out.text = strings.Join(texts, "\n\n---\n\n")
	case creative.Image:
		err = s.images(stem, []creative.Image{v}, &out)
	case []creative.Image:
		err = s.images(stem, v, &out)
	case creative.URL:
		err = s.urls(ctx, stem, []creative.URL{v}, &out)
	case []creative.URL:
		err = s.urls(ctx, stem, v, &out)
	case *creative.Audio:
		defer v.Close()
		n := namer{stem: stem}
		// Named as the SDK names the type the service declared; by the
		// first bytes when it declared none it knows.
		err = s.write(&n, &out, func(head []byte) string {
			if ext := v.Ext(); ext != ".bin" {
				return ext
			}
			return sniffExt(head, "")
		}, func(w io.Writer) error {
			_, err := io.Copy(w, v)
			return err
		})
	default:
		err = fmt.Errorf("creative: no way to write a %T", res)
	}
	return out, err
}

func (s *saver) images(stem string, ims []creative.Image, out *saved) error {
	n := namer{stem: stem, several: len(ims) > 1}
	for _, im := range ims {
		ext := im.Ext()
		if err := s.write(&n, out, func([]byte) string { return ext }, func(w io.Writer) error {
			_, err := im.WriteTo(w)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func (s *saver) urls(ctx context.Context, stem string, us []creative.URL, out *saved) error {
	for _, u := range us {
		out.urls = append(out.urls, string(u))
	}
	n := namer{stem: stem, several: len(us) > 1}
	for _, u := range us {
		link := string(u)
		err := s.write(&n, out, func(head []byte) string { return sniffExt(head, link) }, func(w io.Writer) error {
			if s.status != nil {
				s.status.attempt.Store(0) // the attempts of this download
			}
			_, err := s.c.Download(ctx, u, w, s.opts...)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// A namer hands out the names of one result's files in order.
type namer struct {
	stem    string
	several bool
	n       int // the last number given
}

// next returns the next name to try, without its extension.
func (n *namer) next() string {
	if !n.several && n.n == 0 {
		n.n = -1
		return n.stem
	}
	if n.n < 0 {
		n.n = 0
	}
	n.n++
	return n.stem + "-" + strconv.Itoa(n.n)
}

// write fills a temporary file in the directory, names it by what ext
// says of its first bytes and the first free name from n, and records it.
// The temporary file is removed whatever happens, also when ctx ends.
func (s *saver) write(n *namer, out *saved, ext func(head []byte) string, fill func(io.Writer) error) error {
	tmp, err := createTemp(s.dir)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = fill(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	head, err := readHead(tmp.Name())
	if err != nil {
		return err
	}
	e := ext(head)
	for {
		name := filepath.Join(s.dir, n.next()+e)
		err := place(tmp.Name(), name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.dir, name)
		out.files = append(out.files, filepath.ToSlash(rel))
		if s.saved != nil {
			s.saved(name)
		}
		return nil
	}
}

// tempPrefix starts the names of temporary files; they are hidden and
// never left behind.
const tempPrefix = ".creative-"

// createTemp creates a new empty file in dir with mode 0644 less the umask
// (os.CreateTemp would give 0600).
func createTemp(dir string) (*os.File, error) {
	for range 100 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		f, err := os.OpenFile(filepath.Join(dir, tempPrefix+hex.EncodeToString(b[:])+".tmp"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("creative: no free temporary file name in %s", dir)
}

// place gives the file at tmp the name name, failing with fs.ErrExist when
// the name is taken. A hard link does it in one step; where links are not
// supported the name is reserved with an exclusive create and then
// replaced by the file.
func place(tmp, name string) error {
	err := os.Link(tmp, name)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

func readHead(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	return head[:n], nil
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
	if u, err := url.Parse(link); err == nil && link != "" {
		if ext := path.Ext(u.Path); ext != "" && len(ext) <= 6 && !strings.ContainsAny(ext, `\/`) {
			return ext
		}
	}
	return ".bin"
}
