package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/internal/ops"
	"github.com/creativegen/creative-go/internal/outdir"
	"github.com/creativegen/creative-go/internal/sniff"
)

// linkSuffix ends the name of a link file: <stem>.link.json.
const linkSuffix = ".link.json"

// linkRecord is what a link file holds: the links of a paid answer whose
// files are not all saved, and how to fetch them. The SDK refuses any
// link that holds the access key when it reads the answer, so no link
// here holds it.
type linkRecord struct {
	What      string    `json:"what"`
	Op        string    `json:"op"`
	RequestID string    `json:"requestId,omitempty"`
	Time      time.Time `json:"time"`
	Stem      string    `json:"stem"`
	Links     []string  `json:"links"`
	Why       string    `json:"why,omitempty"`
	Fetch     string    `json:"fetch"`
	// Service is the origin of the service that answered: its links are
	// fetched as the command did, from a private address when it is on
	// one, with no base URL given.
	Service string `json:"service,omitempty"`
}

const linkWhat = "the links of an answer that was paid for and whose files are not all saved; fetching them costs nothing"

// A linkFile is the link file of one call's answer under --out.
type linkFile struct {
	s    *saver
	base string // its name in the folder; "" when it could not be written
	err  error  // why it could not be written
	rec  linkRecord
	left []creative.URL // the links whose files are not saved
}

// keepLinks writes the links of an answer to the first free name of
// <stem>.link.json, <stem>-2.link.json ... in the folder, before any of
// them is downloaded: the answer is then held whatever happens next (a
// download that fails, a disk that fills, a signal, a kill).
func (s *saver) keepLinks(stem string, us []creative.URL) *linkFile {
	lf := &linkFile{s: s, rec: linkRecord{What: linkWhat, Op: s.op, RequestID: s.requestID(), Time: time.Now().UTC(), Stem: stem, Service: s.service}}
	for _, u := range us {
		lf.rec.Links = append(lf.rec.Links, string(u))
	}
	tmp, err := s.dir.CreateTemp(".", tempPrefix[1:])
	if err != nil {
		lf.err = err
		return lf
	}
	defer tmp.Remove()
	for i := 1; i <= 1000; i++ {
		base := stem + linkSuffix
		if i > 1 {
			base = fmt.Sprintf("%s-%d%s", stem, i, linkSuffix)
		}
		lf.rec.Fetch = "creative fetch " + s.dir.Join(base)
		if err := tmp.Truncate(0); err != nil {
			lf.err = err
			return lf
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			lf.err = err
			return lf
		}
		if err := writeLinkRecord(tmp, &lf.rec); err != nil {
			lf.err = err
			return lf
		}
		if err := tmp.Flush(); err != nil {
			lf.err = err
			return lf
		}
		err := tmp.Link(base)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			lf.err = err
			return lf
		}
		lf.base = base
		return lf
	}
	lf.err = errors.New("no free name for the link file")
	return lf
}

// writeLinkRecord writes rec as indented JSON, its links as they are (no
// HTML escapes, which would make a link of &s six times as long).
func writeLinkRecord(w io.Writer, rec *linkRecord) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(rec)
}

// maxLinkFile bounds the link file creative fetch reads: room for a
// thousand links of 16 KiB (no file host takes a longer one), and a link of
// a few MiB.
const maxLinkFile = 16 << 20

// end ends the downloads of the answer: with every file saved (err nil)
// the link file is removed; otherwise it is rewritten with the links left
// and why, and the error says where the links are and how to fetch them.
func (lf *linkFile) end(err error) error {
	d := lf.s.dir
	if err == nil {
		if lf.base != "" {
			_ = d.Root().Remove(lf.base)
		}
		return nil
	}
	lf.rec.Links = lf.rec.Links[:0]
	for _, u := range lf.left {
		lf.rec.Links = append(lf.rec.Links, string(u))
	}
	lf.rec.Why = cmdutil.OneLine(strings.TrimPrefix(err.Error(), "creative: "))
	if lf.base != "" {
		if werr := d.WriteFile(lf.base, func(w io.Writer) error { return writeLinkRecord(w, &lf.rec) }); werr != nil {
			lf.err = werr // the first version, with every link, stays
		}
	}
	return &paidLinksError{err: err, links: lf.rec.Links, id: lf.rec.RequestID, file: lf.path(), fileErr: lf.err}
}

// path is the link file's path, "" when it could not be written.
func (lf *linkFile) path() string {
	if lf.base == "" {
		return ""
	}
	return lf.s.dir.Join(lf.base)
}

// A paidLinksError is the failure to save the files of a paid answer's
// links: it names the links, the request id and the link file that holds
// them, which creative fetch reads.
type paidLinksError struct {
	err     error
	links   []string
	id      string
	file    string // "" when the link file could not be written
	fileErr error
}

func (e *paidLinksError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "creative: ")
	if _, ok := errors.AsType[*rejectedError](e.err); !ok {
		msg = "the answer's files were not all saved: " + msg
	}
	msg = "creative: " + msg + fmt.Sprintf("; the answer (request id %s) was paid for: its links are %s", e.id, strings.Join(e.links, " "))
	if e.file == "" {
		return msg + fmt.Sprintf(" (they could not be kept in a link file: %v; save them now)", e.fileErr)
	}
	return msg + "; they are kept in " + e.file + ": creative fetch " + e.file + " fetches them without paying again"
}

// Unwrap returns the failure.
func (e *paidLinksError) Unwrap() error { return e.err }

// fetchCommand fetches the files of a link file, or of one link, without
// a call: nothing is paid.
func (a *app) fetchCommand() *cobra.Command {
	var out, op string
	cmd := &cobra.Command{
		Use:   "fetch LINKFILE|URL",
		Short: "Fetch the files of a paid answer whose download failed, without paying again",
		Long: `When a command is paid for an answer with links and cannot save its files
(the file host fails, the download is too slow for --timeout, the disk is
full, a signal ends it), it leaves <name>.link.json under --out, with the
links, the request id and why. creative fetch reads that file and
downloads the links again, through the same checks as the command (the
file must be what the operation makes), into --out (default: the link
file's folder); no call is made, so nothing is paid. When every file is
saved the link file is removed.

A single link is fetched with --op naming the operation that made it,
whose kind of file (image, audio, video) the file must be.

A link the file host no longer serves (HTTP 403, 404 or 410) has expired:
only a new call, paid again, makes the file.

Exit status: 0 every file saved, 1 a link failed or expired, 2 usage,
3 a file was fetched and is not what the operation makes (it is kept as
<name>.rejected.<ext>), 130 interrupted.`,
		Example: `  creative fetch out/text-to-music.link.json
  creative fetch https://files.example/abc.wav --op audio/text-to-music --out music`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.Ran(func(cmd *cobra.Command, args []string) error {
			return a.runFetch(cmd.Context(), args[0], op, out)
		}),
	}
	cmd.Flags().StringVar(&out, "out", "", "folder to write the files to (default: the link file's folder, or . for a URL)")
	cmd.Flags().StringVar(&op, "op", "", "the operation that made the link, such as audio/text-to-music (with a URL)")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

// runFetch fetches what arg names: a link file, or a link of operation op.
func (a *app) runFetch(ctx context.Context, arg, op, out string) error {
	rec, linkPath, err := readFetchTarget(arg, op)
	if err != nil {
		return err
	}
	if out == "" {
		out = "."
		if linkPath != "" {
			out = filepath.Dir(linkPath)
		}
	}
	c, closeClient, err := a.newClient()
	if err != nil {
		// A download sends no key: without a service configured, a client
		// that only downloads, of the service the link file names (whose
		// links may be on its private network, as it is) or of none.
		base := "https://download.invalid"
		if rec.Service != "" {
			base = rec.Service
		}
		if c, err = creative.New(creative.WithBaseURL(base), creative.WithAccessKey("unused"),
			creative.WithTimeout(a.g.timeout), creative.WithMaxRetries(a.g.retries), creative.WithUserAgent("creative-cli")); err != nil {
			return err
		}
		closeClient = c.CloseIdleConnections
	}
	defer closeClient()
	d, err := openOut(out)
	if err != nil {
		return err
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.sending.Store(true)
	signalled := a.watchSignals(cancel, func() bool { return true })
	status := newCallStatus(rec.Op)
	us := make([]creative.URL, len(rec.Links))
	for i, l := range rec.Links {
		us[i] = creative.URL(l)
	}
	status.requestID.Store(&rec.RequestID)
	s := &saver{op: rec.Op, dir: d, c: c, status: status, opts: a.downloadOpts(status.track(a.logHandler())), saved: func(p string) { fmt.Fprintln(a.stdout, cmdutil.Printable(p)) }}
	var saved saved
	err = s.fetchAll(ctx, rec.Stem, us, &saved)
	if err == nil && linkPath != "" {
		_ = os.Remove(linkPath) // every file is saved: nothing is left to fetch
	}
	if signalled() != nil {
		ie := &interruptedError{err: err}
		if err != nil {
			ie.left = "creative: the files not saved are still there to fetch: " + fetchAgain(arg, linkPath, rec.Op, out) + " fetches them, paying nothing"
		}
		return ie
	}
	return expiredLinks(err)
}

// fetchAgain is the command that fetches arg again.
func fetchAgain(arg, linkPath, op, out string) string {
	if linkPath != "" {
		return "creative fetch " + linkPath
	}
	return "creative fetch " + arg + " --op " + op + " --out " + out
}

// fetchAll downloads us as urls does, without a link file of its own: the
// one fetched from stays until every file is saved.
func (s *saver) fetchAll(ctx context.Context, stem string, us []creative.URL, out *saved) error {
	n := namer{stem: stem, several: len(us) > 1}
	var errs []error
	for _, u := range us {
		err := s.write(&n, out, sniff.FileExt, func(w io.Writer) error {
			_, err := s.c.Download(ctx, u, w, s.opts...)
			return err
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// expiredLinks says plainly when a link failed because the file host no
// longer serves it.
func expiredLinks(err error) error {
	if ae, ok := errors.AsType[*creative.APIError](err); ok && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusGone || ae.StatusCode == http.StatusForbidden) {
		return fmt.Errorf("creative: the link has expired (the file host answered HTTP %d): only a new call, paid again, makes the file: %w", ae.StatusCode, err)
	}
	return err
}

// readFetchTarget reads the link file at arg, or makes the record of the
// one link arg of operation op.
func readFetchTarget(arg, op string) (*linkRecord, string, error) {
	if u, err := url.Parse(arg); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		o, ok := ops.Lookup(op)
		if !ok || o.Result == ops.Writer {
			return nil, "", cmdutil.Usagef("fetch: a link needs --op, the operation that made it, such as audio/text-to-music")
		}
		return &linkRecord{Op: o.Name, Stem: o.Verb(), Links: []string{arg}}, "", nil
	}
	rec, err := readLinkFile(arg)
	if err != nil {
		return nil, "", cmdutil.Usagef("fetch: %v", err)
	}
	if len(rec.Links) == 0 || rec.Stem == "" {
		return nil, "", cmdutil.Usagef("fetch: %s is not a link file that creative wrote (no links, or no stem): give a link file or a URL with --op", arg)
	}
	o, ok := ops.Lookup(rec.Op)
	if !ok || o.Result == ops.Writer {
		return nil, "", cmdutil.Usagef("fetch: %s names no operation with files (%q)", arg, rec.Op)
	}
	if op != "" && op != rec.Op {
		return nil, "", cmdutil.Usagef("fetch: --op %s, but the link file is of %s", op, rec.Op)
	}
	if strings.ContainsAny(rec.Stem, `/\`) || rec.Stem == "." || rec.Stem == ".." {
		return nil, "", cmdutil.Usagef("fetch: %s names its files %q, not a plain name", arg, rec.Stem)
	}
	return rec, arg, nil
}

// readLinkFile decodes the link file at path, read through the inputs'
// gate as it comes: what is not JSON is refused at its first byte, and
// what is larger than maxLinkFile when it gets there.
func readLinkFile(path string) (*linkRecord, error) {
	f, err := outdir.OpenInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rec linkRecord
	lr := &io.LimitedReader{R: f, N: maxLinkFile + 1}
	if err := json.NewDecoder(lr).Decode(&rec); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("%s is larger than %d bytes", path, int64(maxLinkFile))
		}
		return nil, fmt.Errorf("%s is not a link file that creative wrote (%s): give a link file or a URL with --op", path, cmdutil.OneLine(err.Error()))
	}
	return &rec, nil
}
