package creative

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig of JPEG uploads
	_ "image/png"  // DecodeConfig of PNG uploads
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-retryablehttp"
	_ "golang.org/x/image/webp" // DecodeConfig of WebP uploads
)

// A File is an upload: a file name and the bytes to send in a form part.
// Make one with FileFromPath, FileFromBytes or FileFromReader. The body is
// streamed at constant memory with an exact Content-Length when the size is
// known, and sent again on a retry when it can be re-read (a path is
// re-opened, bytes and io.Seekers are re-read; a plain io.Reader cannot be).
type File struct {
	src *fileSource
}

type fileSource struct {
	name string
	path string        // FileFromPath: opened on each attempt
	data []byte        // FileFromBytes
	at   io.ReaderAt   // FileFromReader with an io.ReaderAt: read by sections
	rs   io.ReadSeeker // FileFromReader with an io.ReadSeeker: re-wound
	sk   io.Seeker     // at's or rs's Seek, to find the start and size
	base int64         // start offset in at or rs
	one  io.Reader     // FileFromReader with a plain reader: read once

	once sync.Once
	info fileInfo
	err  error
}

type fileInfo struct {
	size        int64  // -1 when unknown
	head        []byte // first bytes, for sniffing; for one-shot readers they are replayed
	contentType string // sniffed
	width       int    // image uploads: from the header; 0 if not an image
	height      int
	format      string // "png", "jpeg", "webp" or "" when not a known image
}

// FileFromPath returns an upload of the file at path, named by its base
// name. The file is opened when the call is made (not now) and re-opened for
// each retry, so even a very large file streams at constant memory.
func FileFromPath(path string) File {
	return File{&fileSource{name: filepath.Base(path), path: path}}
}

// FileFromBytes returns an upload of b named name. b must not be changed
// until the call returns.
func FileFromBytes(name string, b []byte) File {
	return File{&fileSource{name: name, data: b}}
}

// FileFromReader returns an upload of what r yields, named name. An
// io.ReaderAt with a Seek method (such as *os.File, *bytes.Reader or
// *strings.Reader) is sent from its current offset and re-read for a retry;
// any other io.Reader is read once: its upload is not retried after its
// first bytes went out, and without a Len method it is sent with chunked
// transfer encoding.
func FileFromReader(name string, r io.Reader) File {
	src := &fileSource{name: name}
	switch v := r.(type) {
	case nil:
		return File{}
	case interface {
		io.ReaderAt
		io.Seeker
	}:
		src.at, src.sk = v, v
	case io.ReadSeeker:
		src.rs, src.sk = v, v
	default:
		src.one = r
	}
	return File{src}
}

// Name is the file name sent with the upload.
func (f File) Name() string {
	if f.src == nil {
		return ""
	}
	return f.src.name
}

// sniffLen is how much of an upload is read ahead to tell its type and, for
// images, the width and height from its header.
const sniffLen = 64 << 10

// inspect reads the start of the upload once: its size, content type and,
// for images, dimensions. A one-shot reader keeps what was read so it can be
// sent first.
func (f File) inspect() (fileInfo, error) {
	s := f.src
	s.once.Do(func() { s.info, s.err = s.inspect() })
	return s.info, s.err
}

func (s *fileSource) inspect() (fileInfo, error) {
	info := fileInfo{size: -1}
	var head []byte
	switch {
	case s.path != "":
		fh, err := os.Open(s.path)
		if err != nil {
			return info, err
		}
		defer fh.Close()
		st, err := fh.Stat()
		if err != nil {
			return info, err
		}
		if !st.Mode().IsRegular() {
			return info, fmt.Errorf("%s is not a regular file", s.path)
		}
		info.size = st.Size()
		head, err = readHead(fh)
		if err != nil {
			return info, err
		}
	case s.data != nil:
		info.size = int64(len(s.data))
		head = s.data[:min(len(s.data), sniffLen)]
	case s.sk != nil:
		cur, err := s.sk.Seek(0, io.SeekCurrent)
		if err != nil {
			return info, err
		}
		end, err := s.sk.Seek(0, io.SeekEnd)
		if err != nil {
			return info, err
		}
		s.base, info.size = cur, end-cur
		if s.at != nil {
			_, err = s.sk.Seek(cur, io.SeekStart)
			if err == nil {
				head, err = readHead(io.NewSectionReader(s.at, cur, info.size))
			}
		} else if _, err = s.rs.Seek(cur, io.SeekStart); err == nil {
			head, err = readHead(s.rs)
		}
		if err != nil {
			return info, err
		}
	case s.one != nil:
		if l, ok := s.one.(interface{ Len() int }); ok {
			info.size = int64(l.Len())
		}
		var err error
		head, err = readHead(s.one)
		if err != nil {
			return info, err
		}
	default:
		return info, errors.New("no file given")
	}
	info.head = head
	info.contentType = sniff(head)
	if cfg, format, err := image.DecodeConfig(bytes.NewReader(head)); err == nil {
		info.width, info.height, info.format = cfg.Width, cfg.Height, format
	}
	if info.size == -1 && len(head) < sniffLen {
		info.size = int64(len(head)) // the whole one-shot stream is in head
	}
	return info, nil
}

func readHead(r io.Reader) ([]byte, error) {
	buf := make([]byte, sniffLen)
	n, err := io.ReadFull(r, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return buf[:n], err
}

// sniff tells an upload's content type from its first bytes.
func sniff(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WAVE":
		return "audio/wav"
	case bytes.HasPrefix(head, []byte("ID3")), len(head) >= 2 && head[0] == 0xff && head[1]&0xe0 == 0xe0:
		return "audio/mpeg"
	}
	ct := http.DetectContentType(head)
	if ct == "text/plain; charset=utf-8" && len(head) == 0 {
		return "application/octet-stream"
	}
	return ct
}

// open returns a reader of the whole upload for one attempt.
func (s *fileSource) open() (io.ReadCloser, error) {
	switch {
	case s.path != "":
		return os.Open(s.path)
	case s.data != nil:
		return io.NopCloser(bytes.NewReader(s.data)), nil
	case s.at != nil:
		return io.NopCloser(io.NewSectionReader(s.at, s.base, s.info.size)), nil
	case s.rs != nil:
		if _, err := s.rs.Seek(s.base, io.SeekStart); err != nil {
			return nil, err
		}
		return io.NopCloser(io.LimitReader(s.rs, s.info.size)), nil
	}
	return nil, errors.New("creative: this upload is read once and cannot be opened again")
}

// A multipartBody is a form with text fields and one file part, written
// without holding the file in memory.
type multipartBody struct {
	prefix []byte // fields, then the file part's header
	suffix []byte // the closing boundary
	file   File
	info   fileInfo
	ctype  string
}

// newMultipart lays out the form: fields in name order, then the file part
// named field. The upload must have been inspected.
func newMultipart(fields url.Values, field string, f File) (*multipartBody, error) {
	info, err := f.inspect()
	if err != nil {
		return nil, err
	}
	var rnd [16]byte
	_, _ = rand.Read(rnd[:])
	boundary := "creative-go-" + hex.EncodeToString(rnd[:])

	var b bytes.Buffer
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range fields[k] {
			fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n", boundary, headerSafe(k), v)
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, headerSafe(field), headerSafe(f.Name())))
	h.Set("Content-Type", info.contentType)
	fmt.Fprintf(&b, "--%s\r\nContent-Disposition: %s\r\nContent-Type: %s\r\n\r\n", boundary, h.Get("Content-Disposition"), h.Get("Content-Type"))
	return &multipartBody{
		prefix: b.Bytes(),
		suffix: []byte("\r\n--" + boundary + "--\r\n"),
		file:   f,
		info:   info,
		ctype:  "multipart/form-data; boundary=" + boundary,
	}, nil
}

// headerSafe makes a name fit inside a quoted header parameter: quotes and
// backslashes are escaped, control characters percent-encoded (a file name
// can hold anything; a header line cannot).
func headerSafe(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (m *multipartBody) contentType() string { return m.ctype }

// size is the exact length of the body, or -1 when the file's is unknown.
func (m *multipartBody) size() int64 {
	if m.info.size < 0 {
		return -1
	}
	return int64(len(m.prefix)) + m.info.size + int64(len(m.suffix))
}

// readerFunc returns the per-attempt body factory that go-retryablehttp
// calls, and for a one-shot reader the tracker that tells whether its bytes
// went out (after which a retry is refused).
func (m *multipartBody) readerFunc() (retryablehttp.ReaderFunc, *oneShotBody) {
	src := m.file.src
	if src.one != nil {
		one := &oneShotBody{r: io.MultiReader(bytes.NewReader(m.info.head), src.one)}
		return func() (io.Reader, error) {
			if one.sent() {
				return nil, &replayError{}
			}
			r := &partsReader{prefix: m.prefix, file: one, suffix: m.suffix}
			if n := m.size(); n >= 0 {
				return &sizedReader{partsReader: r, n: n}, nil
			}
			return r, nil
		}, one
	}
	return func() (io.Reader, error) {
		// The file is opened lazily, on the first Read, so that
		// go-retryablehttp's probe for Len does not touch the disk.
		r := &partsReader{prefix: m.prefix, open: src.open, suffix: m.suffix}
		return &sizedReader{partsReader: r, n: m.size()}, nil
	}, nil
}

// A oneShotBody wraps an upload that can be read only once and notes when
// its first byte was read.
type oneShotBody struct {
	r    io.Reader
	read atomic.Bool
}

func (o *oneShotBody) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if n > 0 {
		o.read.Store(true)
	}
	return n, err
}

func (o *oneShotBody) Close() error { return nil }

func (o *oneShotBody) sent() bool { return o != nil && o.read.Load() }

type replayError struct{}

func (*replayError) Error() string {
	return "the upload's one-shot reader was already read and cannot be sent again"
}

// partsReader yields prefix, the file, then suffix.
type partsReader struct {
	prefix []byte
	open   func() (io.ReadCloser, error)
	file   io.ReadCloser
	suffix []byte
	stage  int // 0 prefix, 1 file, 2 suffix, 3 done
	off    int
}

func (p *partsReader) Read(b []byte) (int, error) {
	for {
		switch p.stage {
		case 0:
			if p.off < len(p.prefix) {
				n := copy(b, p.prefix[p.off:])
				p.off += n
				return n, nil
			}
			p.stage, p.off = 1, 0
		case 1:
			if p.file == nil {
				f, err := p.open()
				if err != nil {
					return 0, err
				}
				p.file = f
			}
			n, err := p.file.Read(b)
			if err == io.EOF {
				p.stage = 2
				err = nil
			}
			if n > 0 || err != nil {
				return n, err
			}
		case 2:
			if p.off < len(p.suffix) {
				n := copy(b, p.suffix[p.off:])
				p.off += n
				return n, nil
			}
			p.stage = 3
		default:
			return 0, io.EOF
		}
	}
}

// Close closes the file, if it was opened.
func (p *partsReader) Close() error {
	if p.file != nil {
		return p.file.Close()
	}
	return nil
}

// sizedReader tells go-retryablehttp the exact Content-Length.
type sizedReader struct {
	*partsReader
	n int64
}

func (s *sizedReader) Len() int { return int(s.n) }
