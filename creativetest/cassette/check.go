package cassette

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/internal/redact"
)

// CheckOptions say what else Check looks for.
type CheckOptions struct {
	// Keys are access keys to look for, besides CREATIVE_ACCESS_KEY, in
	// every form the SDK's redactor knows.
	Keys []string
	// Patterns describe the shape of your keys, such as
	// regexp.MustCompile(`ck_[A-Za-z0-9]{32}`): any match is a finding.
	Patterns []*regexp.Regexp
}

// A Finding is something in a cassette that looks like an access key.
type Finding struct {
	// File is the file's path, Line its line (from 1).
	File string
	Line int
	// What says what was found, without the secret itself.
	What string
}

// A CheckError lists what Check found.
type CheckError struct {
	Findings []Finding
}

// Error lists the findings, at most 20 of them.
func (e *CheckError) Error() string {
	if e == nil {
		return "cassette: <nil *CheckError>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cassette: %d finding(s) that look like an access key", len(e.Findings))
	for i, f := range e.Findings {
		if i == 20 {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Findings)-20)
			break
		}
		fmt.Fprintf(&b, "\n  %s:%d: %s", f.File, f.Line, f.What)
	}
	return b.String()
}

// What looks like a secret where no key is known: a field, header or
// query parameter named as a secret whose value is not redacted, and a
// bearer token.
var (
	secretName  = `[A-Za-z0-9_-]*(?i:access[-_]?key|api[-_]?key|secret|token|password|passwd|authorization|signature|credential)[A-Za-z0-9_-]*`
	secretField = regexp.MustCompile(`"(` + secretName + `)"\s*:\s*\[?\s*"((?:[^"\\]|\\.)*)"`)
	secretQuery = regexp.MustCompile(`[?&](` + secretName + `|key|sig)=([^&"\s#]+)`)
	bearer      = regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{12,})`)
)

// Check looks through every file under dir (a cassette, or a folder of
// them) for what looks like an access key, and returns a *CheckError
// listing what it found, or nil. It finds the keys of o and
// CREATIVE_ACCESS_KEY in every form the SDK's redactor knows (in binary
// bodies, as they are or escaped for a URL or JSON), any match of o's
// patterns, and, with no key known, a field, header or query parameter
// named as a secret (x-access-key, api_key, token, authorization ...)
// whose value is not "[redacted]", and bearer tokens. Run it in CI over
// the cassettes a change commits: go run
// github.com/creativegen/creative-go/creativetest/cassette/cassettecheck dir.
func Check(dir string, o *CheckOptions) error {
	var opts CheckOptions
	if o != nil {
		opts = *o
	}
	keys := opts.Keys
	if k := os.Getenv(creative.EnvAccessKey); k != "" {
		keys = append(keys, k)
	}
	red := redact.New(keys)
	var found []Finding
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := checkPath(p, red, opts.Patterns)
		found = append(found, f...)
		return err
	})
	if err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	if len(found) > 0 {
		return &CheckError{Findings: found}
	}
	return nil
}

// checkPath looks through the file at p: one of up to maxText bytes
// whole, as checkFile does; a longer one a window at a time, in flat
// memory (a cassette may hold videos), as checkFile would look through
// it: a window that holds a NUL as binary bytes, any other as a line of
// text, so that a key in any form the redactor knows is found, whatever
// the recording missed. A window overlaps the one before past the
// longest escaped form of a key (two layers of escapes of at most 12 bytes
// a byte) and by 4 KiB at least; a finding is reported once.
func checkPath(p string, red *redact.Redactor, patterns []*regexp.Regexp) ([]Finding, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() <= maxText {
		b, err := io.ReadAll(f)
		return checkFile(p, b, red, patterns), err
	}
	var out []Finding
	add := func(what string) {
		if !slices.ContainsFunc(out, func(f Finding) bool { return f.What == what }) {
			out = append(out, Finding{File: p, Line: 1, What: what})
		}
	}
	overlap := 4 << 10
	if len(red.Forms()) > 0 {
		overlap = max(overlap, 2*12*len(red.Forms()[0]))
	}
	err = windows(f, overlap, func(w []byte, _ bool) bool {
		if bytes.IndexByte(w, 0) >= 0 {
			for _, g := range checkBinary(p, w, red, patterns) {
				add(g.What)
			}
			return true
		}
		for _, what := range checkLine(string(w), red, patterns) {
			add(what)
		}
		return true
	})
	return out, err
}

// checkFile looks through one file: a text line by line, anything else
// for the keys' literal forms and the patterns.
func checkFile(name string, b []byte, red *redact.Redactor, patterns []*regexp.Regexp) []Finding {
	if !isTextFile(b) {
		return checkBinary(name, b, red, patterns)
	}
	var out []Finding
	keyed := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), len(b)+1)
	for n := 1; sc.Scan(); n++ {
		for _, what := range checkLine(sc.Text(), red, patterns) {
			keyed = keyed || what == keyFinding
			out = append(out, Finding{File: name, Line: n, What: what})
		}
	}
	if !keyed && red.Hide(bytes.Clone(b)) {
		// Wrapped over lines, as MIME writes base64: on none of them whole.
		out = append(out, Finding{File: name, Line: 1, What: keyFinding + ", wrapped over lines"})
	}
	return out
}

// keyFinding is what a line that holds a key is found to hold.
const keyFinding = "the access key"

// checkBinary looks through a file that is not text for the keys, in
// every form the redactor knows (as a recording writes over them), and
// the patterns.
func checkBinary(name string, b []byte, red *redact.Redactor, patterns []*regexp.Regexp) []Finding {
	var out []Finding
	if red.Hide(bytes.Clone(b)) {
		out = append(out, Finding{File: name, Line: 1, What: "the access key, in a binary body"})
	}
	for _, re := range patterns {
		if re.Match(b) {
			out = append(out, Finding{File: name, Line: 1, What: "a match of " + re.String() + ", in a binary body"})
		}
	}
	return out
}

// checkLine says what looks like a key on one line of text.
func checkLine(line string, red *redact.Redactor, patterns []*regexp.Regexp) []string {
	var out []string
	if red.Redact(line) != line {
		out = append(out, keyFinding)
	}
	for _, re := range patterns {
		if re.MatchString(line) {
			out = append(out, "a match of "+re.String())
		}
	}
	for _, m := range secretField.FindAllStringSubmatch(line, -1) {
		if v := m[2]; v != "" && v != redact.Marker {
			out = append(out, fmt.Sprintf("%q holds a value that is not %s (%s)", m[1], redact.Marker, mask(v)))
		}
	}
	for _, m := range secretQuery.FindAllStringSubmatch(line, -1) {
		if v := m[2]; v != redact.Marker && v != "%5Bredacted%5D" {
			out = append(out, fmt.Sprintf("the query parameter %s holds a value (%s)", m[1], mask(v)))
		}
	}
	for _, m := range bearer.FindAllStringSubmatch(line, -1) {
		out = append(out, "a bearer token ("+mask(m[1])+")")
	}
	return out
}

// isTextFile reports whether b reads as text: UTF-8 with no NUL.
func isTextFile(b []byte) bool {
	return !bytes.ContainsRune(b[:min(len(b), 4096)], 0) && utf8.Valid(b)
}

// mask shows a secret's length and nothing of it.
func mask(v string) string { return fmt.Sprintf("%d bytes", len(v)) }
