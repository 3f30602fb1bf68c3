package creative

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeWAV writes a file of size bytes that sniffs as WAV.
func writeWAV(t *testing.T, path string, size int) [32]byte {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	h := sha256.New()
	chunk := make([]byte, 1<<20)
	copy(chunk, "RIFF\x00\x00\x00\x00WAVE")
	for written := 0; written < size; written += len(chunk) {
		b := chunk[:min(len(chunk), size-written)]
		b[len(b)-1] = byte(written >> 20)
		_, err := io.MultiWriter(f, h).Write(b)
		require.NoError(t, err)
		chunk[0] = byte(written) // only the first chunk starts with RIFF
	}
	require.NoError(t, f.Close())
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// countingAt counts what is read of an io.ReaderAt (with Seek).
type countingAt struct {
	*bytes.Reader
	bytes atomic.Int64
	heads atomic.Int64 // reads at offset 0
}

func (c *countingAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.Reader.ReadAt(p, off)
	c.bytes.Add(int64(n))
	if off == 0 {
		c.heads.Add(1)
	}
	return n, err
}

// received is what a test server got in one request with an upload.
type received struct {
	contentLength int64    // -1: chunked
	bodyLen       int64    // the bytes that came
	name          string   // the file part's file name
	file          []byte   // the file part's bytes, as far as they came (not kept by a hashOnly recorder)
	sum           [32]byte // the SHA-256 of the file part's bytes
	complete      bool     // the multipart body came whole, to its closing boundary
}

// recorder keeps what a test server received, request by request: the
// one harness of the upload tests.
type recorder struct {
	hashOnly bool // keep the file part's hash, not its bytes (large uploads)
	mu       sync.Mutex
	reqs     []received
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
		if p.FileName() == "" {
			if _, err := io.Copy(io.Discard, p); err != nil {
				return got
			}
			continue
		}
		got.name = p.FileName()
		h := sha256.New()
		var kept bytes.Buffer
		w := io.Writer(h)
		if !rec.hashOnly {
			w = io.MultiWriter(h, &kept)
		}
		_, err = io.Copy(w, p)
		got.file = kept.Bytes()
		copy(got.sum[:], h.Sum(nil))
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

func (s *seekOnly) Read(p []byte) (int, error) { return s.r.Read(p) }

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

// wavOf returns n bytes that sniff as WAV, each position distinct enough
// that a shifted or mixed copy differs.
func wavOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>10)
	}
	copy(b, "RIFF\x24\x00\x00\x00WAVEfmt ")
	return b
}

// oneShot hides every method of its reader but Read.
type oneShot struct{ r io.Reader }

func (o oneShot) Read(p []byte) (int, error) { return o.r.Read(p) }
