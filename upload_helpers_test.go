package creative

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"sync"
	"testing"
)

// received is what a test server got in one request with an upload.
type received struct {
	contentLength int64  // -1: chunked
	bodyLen       int64  // the bytes that came
	file          []byte // the file part's bytes, as far as they came
	complete      bool   // the multipart body came whole, to its closing boundary
}

// recorder keeps what a test server received, request by request.
type recorder struct {
	mu   sync.Mutex
	reqs []received
}

// read reads r's multipart body to its end, keeping the file part.
func (rec *recorder) read(r *http.Request) received {
	got := received{contentLength: r.ContentLength}
	body := &byteCounter{r: r.Body}
	defer func() {
		_, _ = io.Copy(io.Discard, body)
		got.bodyLen = body.n
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, got)
		rec.mu.Unlock()
	}()
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return got
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			got.complete = true
			return got
		}
		if err != nil {
			return got
		}
		b, err := io.ReadAll(p)
		if p.FileName() != "" {
			got.file = b
		}
		if err != nil {
			return got
		}
	}
}

// byteCounter counts the bytes read through it.
type byteCounter struct {
	r io.Reader
	n int64
}

func (c *byteCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (rec *recorder) all() []received {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]received(nil), rec.reqs...)
}

// completeUploads returns the file parts of the requests that came whole.
func (rec *recorder) completeUploads() [][]byte {
	var out [][]byte
	for _, r := range rec.all() {
		if r.complete {
			out = append(out, r.file)
		}
	}
	return out
}

// okImage is a success answer of the image operations.
const okImage = `{"success":true,"message":"ok","data":{"base64":"iVBORw0KGgo="}}`

// okURL is a success answer of the operations that return a URL.
const okURL = `{"success":true,"message":"ok","data":"http://127.0.0.1/e.wav"}`

// errDisk is what the failing readers of these tests return.
var errDisk = errors.New("input/output error on the test's disk")

// failingReader yields data and then errDisk, after limit bytes: a plain
// io.Reader, read once.
type failingReader struct {
	data  []byte
	limit int
	off   int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.off >= f.limit {
		return 0, errDisk
	}
	n := copy(p, f.data[f.off:min(len(f.data), f.limit)])
	f.off += n
	return n, nil
}

// failingReaderAt is an io.ReaderAt and io.Seeker over data whose reads at
// or past limit fail with errDisk.
type failingReaderAt struct {
	*bytes.Reader
	data  []byte
	limit int64
}

func newFailingReaderAt(data []byte, limit int64) *failingReaderAt {
	return &failingReaderAt{Reader: bytes.NewReader(data), data: data, limit: limit}
}

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.limit {
		return 0, errDisk
	}
	n := copy(p, f.data[off:min(int64(len(f.data)), f.limit)])
	if n < len(p) {
		return n, errDisk
	}
	return n, nil
}

// seekOnly hides every method of a *bytes.Reader but Read and Seek: an
// io.ReadSeeker without ReadAt.
type seekOnly struct{ r *bytes.Reader }

func newSeekOnly(b []byte) *seekOnly { return &seekOnly{bytes.NewReader(b)} }

func (s *seekOnly) Read(p []byte) (int, error)                { return s.r.Read(p) }
func (s *seekOnly) Seek(off int64, whence int) (int64, error) { return s.r.Seek(off, whence) }

// failingSeeker is an io.ReadSeeker without ReadAt whose reads at or past
// limit fail with errDisk.
type failingSeeker struct {
	*seekOnly
	limit int64
}

func (f *failingSeeker) Read(p []byte) (int, error) {
	pos, _ := f.Seek(0, io.SeekCurrent)
	if pos >= f.limit {
		return 0, errDisk
	}
	if rest := f.limit - pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	return f.seekOnly.Read(p)
}

// paddedPNG returns a w×h PNG followed by filler up to size bytes, so that
// images of different dimensions can have the same length.
func paddedPNG(t *testing.T, w, h, size int) []byte {
	t.Helper()
	b := pngHeader(w, h)
	if len(b) > size {
		t.Fatalf("a %dx%d PNG takes %d bytes, more than %d", w, h, len(b), size)
	}
	return append(b, bytes.Repeat([]byte{0}, size-len(b))...)
}

// jpegWithAPP returns a w×h JPEG with at least app bytes of APP1 segments
// between its SOI marker and the rest, as cameras and editors write Exif,
// XMP and ICC profiles.
func jpegWithAPP(w, h, app int) []byte {
	img := jpegOf(w, h)
	out := append([]byte{}, img[:2]...)
	seg := make([]byte, 65533)
	copy(seg, "Exif\x00\x00")
	for added := 0; added < app; added += len(seg) + 4 {
		out = append(out, 0xff, 0xe1, byte((len(seg)+2)>>8), byte(len(seg)+2))
		out = append(out, seg...)
	}
	return append(out, img[2:]...)
}
