package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/internal/answer"
	"github.com/creativegen/creative-go/internal/outdir"
	"github.com/creativegen/creative-go/internal/sniff"
)

// A saver writes results as files in one folder, through the folder's
// gate (package internal/outdir). Every file is named by one rule,
// <stem>.<ext> for a result of one file and <stem>-1.<ext>, <stem>-2.<ext>
// ... for several, the number going up past names already taken; it is
// written to a temporary file in the same folder first and then linked to
// its name, so it appears whole or not at all, and never replaces a file.
// Files get mode 0644, less the umask. An answer the folder cannot take
// (the disk filled, the folder went away) is kept in the system's
// temporary folder instead, and the error says where: it was paid for.
type saver struct {
	op     string // the operation's name: what its files must be (package answer)
	dir    *outdir.Dir
	c      *creative.Client
	status *callStatus // the call's; may be nil
	// opts are the options of each download: the call's, which keep
	// status current, and its bound (app.downloadOpts).
	opts []creative.Option
	// saved is told each file's path as soon as it is in place.
	saved func(path string)
	// service is the origin of the service that answered (scheme and
	// host), kept in a link file: "" for the built-in fake.
	service string
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
		out.text = v.Text()
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
		err = s.write(&n, &out, func(head []byte) string { return sniff.DeclaredExt(v.Ext(), head) }, func(w io.Writer) error {
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
	var rejected []error
	for _, im := range ims {
		ext := im.Ext()
		err := s.write(&n, out, func([]byte) string { return ext }, func(w io.Writer) error {
			_, err := im.WriteTo(w)
			return err
		})
		if _, ok := errors.AsType[*rejectedError](err); ok {
			rejected = append(rejected, err) // kept: the others are saved too
			continue
		}
		if err != nil {
			return err
		}
	}
	return errors.Join(rejected...)
}

// urls downloads the files an answer links to. The links are written to a
// link file under the folder first (see keepLinks), so that a paid answer
// is held before anything else can fail; once every file is saved the
// link file is removed, and otherwise it is left saying which links are
// still to fetch and why, for creative fetch.
func (s *saver) urls(ctx context.Context, stem string, us []creative.URL, out *saved) error {
	for _, u := range us {
		out.urls = append(out.urls, string(u))
	}
	lf := s.keepLinks(stem, us)
	n := namer{stem: stem, several: len(us) > 1}
	var rejected []error
	for i, u := range us {
		err := s.write(&n, out, sniff.FileExt, func(w io.Writer) error {
			if s.status != nil {
				s.status.attempt.Store(0) // the attempts of this download
			}
			_, err := s.c.Download(ctx, u, w, s.opts...)
			return err
		})
		if _, ok := errors.AsType[*rejectedError](err); ok {
			rejected = append(rejected, err)
			lf.left = append(lf.left, u)
			continue
		}
		if err != nil {
			lf.left = append(lf.left, us[i:]...)
			return lf.end(err)
		}
	}
	return lf.end(errors.Join(rejected...))
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

// write fills a temporary file in the folder, names it by what ext says
// of its first bytes and the first free name from n, and records it. The
// temporary file is removed whatever happens, also when ctx ends. When the
// folder fails to take the bytes, they go on to a file in the system's
// temporary folder (see rescuer). An answer the content check refuses
// (package answer) is paid for all the same: it is kept whole under a
// name that says so, <name>.rejected.<ext>, and the *rejectedError names it.
func (s *saver) write(n *namer, out *saved, ext func(head []byte) string, fill func(io.Writer) error) error {
	tmp, err := s.dir.CreateTemp(".", tempPrefix[1:])
	if err != nil {
		r := &rescuer{s: s, stem: n.stem, why: err}
		return r.end(fill(r))
	}
	defer tmp.Remove()
	w := &rescuer{s: s, stem: n.stem, f: tmp.File}
	_, err = answer.Keep(s.op, w, func(cw io.Writer) (int64, error) { return 0, fill(cw) }, nil)
	if w.rescue != nil {
		return w.end(err)
	}
	refused, isRefused := errors.AsType[*answer.Error](err)
	if ferr := tmp.Flush(); (err == nil || isRefused) && ferr != nil {
		return s.rescueFrom(tmp, n.stem, ferr)
	}
	if err != nil && !isRefused {
		return err
	}
	head, err := readHead(s.dir, tmp.Name())
	if err != nil {
		return s.rescueFrom(tmp, n.stem, err)
	}
	e := ext(head)
	if isRefused {
		e = rejectedMark + sniff.FileExt(head)
	}
	for {
		base := n.next() + e
		err := tmp.Link(base)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return s.rescueFrom(tmp, n.stem, err)
		}
		name := s.dir.Join(base)
		if isRefused {
			return &rejectedError{op: s.op, path: name, id: s.requestID(), err: refused}
		}
		out.files = append(out.files, base)
		if s.saved != nil {
			s.saved(name)
		}
		return nil
	}
}

// rejectedMark comes before the extension of an answer the content check
// refused, kept whole: text-to-image.rejected.bin.
const rejectedMark = ".rejected"

// A rejectedError is an answer that is not what its operation promises
// (package answer refused it), paid for and kept at path.
type rejectedError struct {
	op, path, id string
	err          *answer.Error
}

func (e *rejectedError) Error() string {
	return fmt.Sprintf("creative: the answer (request id %s) is not what %s promises (%s); it was paid for and is kept as %s",
		e.id, e.op, strings.TrimPrefix(e.err.Error(), "answer: "), e.path)
}

// Unwrap returns the check's refusal.
func (e *rejectedError) Unwrap() error { return e.err }

// A rescuer is where an answer's bytes are written: the temporary file in
// the folder, f, until a write to it fails, then a new file in the
// system's temporary folder, which gets the bytes written so far and the
// rest. No write of an answer fails for the folder's sake alone.
type rescuer struct {
	s      *saver
	stem   string
	f      *os.File // the temporary file in the folder; nil when none
	n      int64    // bytes written to f
	why    error    // the folder's failure
	rescue *os.File // in the system's temporary folder, once f failed
	err    error    // the rescue's own failure
}

func (r *rescuer) Write(p []byte) (int, error) {
	k := 0
	if r.rescue == nil && r.why == nil {
		var err error
		k, err = r.f.Write(p)
		r.n += int64(k)
		if err == nil {
			return k, nil
		}
		r.why = err
	}
	if r.rescue == nil && r.err == nil {
		var took io.Reader
		if r.n > 0 {
			took = io.NewSectionReader(r.f, 0, r.n) // the bytes the folder took
		}
		r.start(took)
	}
	if r.err != nil {
		return k, r.err
	}
	m, err := r.rescue.Write(p[k:])
	return k + m, r.fail(err)
}

// start creates the rescue file and copies from, when not nil, into it.
func (r *rescuer) start(from io.Reader) {
	r.rescue, r.err = os.CreateTemp("", "creative-"+r.stem+"-*")
	if r.err == nil && from != nil {
		_, r.err = io.Copy(r.rescue, from)
	}
}

func (r *rescuer) fail(err error) error {
	if err != nil && r.err == nil {
		r.err = err
	}
	return err
}

// end closes the rescue file and returns the error that says where the
// answer is, or that it is lost: fillErr is the failure of the answer's
// own stream, if any.
func (r *rescuer) end(fillErr error) error {
	if r.rescue == nil && r.err == nil {
		r.start(nil) // an answer of no bytes
	}
	if r.rescue != nil {
		if err := r.rescue.Sync(); r.err == nil {
			r.err = err
		}
		if err := r.rescue.Close(); r.err == nil {
			r.err = err
		}
	}
	return r.s.lostErr(r.why, r.rescue, r.err, fillErr)
}

// rescueFrom copies the answer, whole in the temporary file tmp of the
// folder, into the system's temporary folder, after the folder failed to
// flush it or give it its name (why).
func (s *saver) rescueFrom(tmp *outdir.Temp, stem string, why error) error {
	r := &rescuer{s: s, stem: stem, why: why}
	f, err := s.dir.OpenFile(tmp.Name(), os.O_RDONLY, 0)
	if err != nil {
		r.err = err
		return r.end(nil)
	}
	defer f.Close()
	r.start(f)
	return r.end(nil)
}

// lostErr is the error of an answer the folder could not take (why): it
// names the folder, the call's request id and where the answer was kept
// (rescue), or says that it could not be kept (rerr). fillErr, when not
// nil, is a failure of the answer itself: what was kept is only part of it.
func (s *saver) lostErr(why error, rescue *os.File, rerr, fillErr error) error {
	msg := fmt.Sprintf("creative: the answer (request id %s) was paid for and could not be saved in %s (%v)", s.requestID(), s.dir.Path(), why)
	switch {
	case rerr != nil:
		if rescue != nil {
			_ = os.Remove(rescue.Name()) // a part of the answer, which misleads
		}
		return fmt.Errorf("%s, nor kept in %s (%v): it is lost; do not send the request again before checking with the service", msg, os.TempDir(), rerr)
	case fillErr != nil:
		return fmt.Errorf("%s; the part that arrived is kept in %s: %w", msg, rescue.Name(), fillErr)
	}
	return fmt.Errorf("%s; it is kept in %s: move it where you want it", msg, rescue.Name())
}

// requestID is the request id of the call's answer, or says that none
// was given.
func (s *saver) requestID() string {
	if s.status != nil {
		if v := s.status.requestID.Load(); v != nil && *v != "" {
			return *v
		}
	}
	return "not given"
}

// tempPrefix starts the names of temporary files; they are hidden and
// never left behind.
const tempPrefix = ".creative-"

func readHead(d *outdir.Dir, name string) ([]byte, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	return head[:n], nil
}

// openOut opens the folder --out of an operation, making it when missing,
// and proves it writable through its gate before the call is sent: a
// folder that cannot take the answer is a usage error, and nothing is
// paid for.
func openOut(dir string) (*outdir.Dir, error) {
	d, err := outdir.Create(dir)
	if err != nil {
		return nil, cmdutil.Usagef("--out: %v", err)
	}
	if err := d.ProveWritable(); err != nil {
		d.Close()
		return nil, cmdutil.Usagef("--out: %v", err)
	}
	return d, nil
}
