package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/answer"
	"github.com/creativegen/creative-go/internal/atomicfile"
	"github.com/creativegen/creative-go/internal/sniff"
)

// A saver writes results as files in one directory. Every file is named
// by one rule, <stem>.<ext> for a result of one file and <stem>-1.<ext>,
// <stem>-2.<ext> ... for several, the number going up past names already
// taken; it is written to a temporary file in the same directory first and
// then linked to its name, so it appears whole or not at all, and never
// replaces a file. Files get mode 0644, less the umask.
type saver struct {
	op     string // the operation's name: what its files must be (package answer)
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
		err := s.write(&n, out, sniff.FileExt, func(w io.Writer) error {
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
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return fmt.Errorf("creative: %w", err)
	}
	defer root.Close()
	tmp, err := atomicfile.CreateTemp(root, ".", tempPrefix[1:])
	if err != nil {
		return fmt.Errorf("creative: %w", err)
	}
	defer tmp.Remove()
	_, err = answer.Fill(s.op, tmp, func(w io.Writer) (int64, error) { return 0, fill(w) })
	if ferr := tmp.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	head, err := readHead(root, tmp.Name())
	if err != nil {
		return err
	}
	e := ext(head)
	for {
		base := n.next() + e
		err := tmp.Link(base)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		name := filepath.Join(s.dir, base)
		out.files = append(out.files, base)
		if s.saved != nil {
			s.saved(name)
		}
		return nil
	}
}

// tempPrefix starts the names of temporary files; they are hidden and
// never left behind.
const tempPrefix = ".creative-"

func readHead(root *os.Root, name string) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	return head[:n], nil
}
