package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/sqliteledger"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
	"github.com/creativegen/creative-go/creativetest"
)

// escapes are what a hostile answer or ledger puts in a field: a window
// title (OSC), a cleared screen, a cursor move, a C1 CSI, a bidi override,
// DEL, a byte that is not UTF-8.
const escapes = "\x1b]0;pwned\x07\x1b[2J\x1b[H\u009b31m\u202eevil\x7f\xff"

func TestPrintableEscapesEveryControlCharacter(t *testing.T) {
	got := cmdutil.Printable("id " + escapes + " end")
	assert.Equal(t, `id \x1b]0;pwned\x07\x1b[2J\x1b[H\u009b31m\u202eevil\x7f\xff end`, got)
	for _, b := range []byte(got) {
		assert.True(t, b >= 0x20 && b < 0x7f, "byte %#x printed", b)
	}
	for _, s := range []string{"plain text", "tab\tkept", "café, 東京, emoji 🎉", ""} {
		assert.Equal(t, s, cmdutil.Printable(s), "left as it is")
	}
	assert.Equal(t, "a\\x1b[2J\nb\n", cmdutil.PrintableLines("a\x1b[2J\nb\n"), "line ends kept")
}

// A ledger whose records carry escape sequences (here the worker's name;
// the service's error messages too) prints none of them: batch status,
// the run's summary and the errors show 0 ESC bytes.
func TestStatusAndErrorsPrintNoEscapeFromALedgerOrTheService(t *testing.T) {
	srv, env := fakeEnv(t)
	srv.Handle(creativetest.OpTextToImage, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError) // outcome unknown: listed by status
		fmt.Fprintf(w, `{"success":false,"message":%q}`, "boom "+escapes)
	})
	out := t.TempDir()
	jobs := writeJobs(t, 2)

	// A run whose worker's name holds escapes, as a hand-edited or hostile
	// ledger may.
	c := srv.Client()
	folder, err := batch.OpenFolder(out)
	require.NoError(t, err)
	ledger, err := sqliteledger.Open(out)
	require.NoError(t, err)
	r, err := batch.New(c, ledger, folder, batch.Options{Base: filepath.Dir(jobs), Worker: "host" + strings.TrimSuffix(escapes, "\xff")})
	require.NoError(t, err)
	checked, err := r.Check(context.Background(), batch.File(jobs))
	require.NoError(t, err)
	sum, err := r.Run(context.Background(), checked)
	require.NoError(t, err)
	require.Equal(t, 2, sum.Unknown, "%+v", sum)
	require.NoError(t, errors.Join(ledger.Close(), folder.Close()))

	code, stdout, stderr := runCLI(t, env, "batch", "status", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `host\x1b]0;pwned\x07`)
	assert.Zero(t, bytes.Count([]byte(stdout+stderr), []byte{0x1b}), "no ESC byte printed: %q", stdout)

	// A single command whose error quotes the service's message.
	code, _, stderr = runCLI(t, env, "image", "text-to-image", "--prompt", "p", "--out", t.TempDir())
	assert.Equal(t, exitAPI, code)
	assert.Contains(t, stderr, "boom")
	assert.Zero(t, strings.Count(stderr, "\x1b"), "no ESC byte printed: %q", stderr)
	assert.NotContains(t, stderr, "\u202e")

	// And a batch's own messages about them.
	code, _, stderr = runCLI(t, env, "batch", jobs, "--out", t.TempDir(), "--resend-unknown")
	assert.Equal(t, exitAPI, code)
	assert.Zero(t, strings.Count(stderr, "\x1b"), "no ESC byte printed: %q", stderr)
}

// --json is JSON, and JSON leaves C1 controls, DEL and bidi overrides as
// they are: on a terminal they would drive it all the same. batch status
// --json and a command's --json escape them too, and stay JSON.
func TestJSONOutputPrintsNoControlFromALedgerOrTheService(t *testing.T) {
	srv, env := fakeEnv(t)
	srv.Handle(creativetest.OpTextToImage, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"success":false,"message":%q}`, "boom "+escapes)
	})
	srv.Handle(creativetest.OpWriterTool, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		data, _ := json.Marshal(map[string]any{"language": "English\u009b2J", "useCase": "CoverLetter", "word_count": 1,
			"text": map[string]any{"choices": []map[string]any{{"text": "Dear team " + strings.TrimSuffix(escapes, "\xff"), "index": 0, "word_count": 1}}}})
		fmt.Fprintf(w, `{"success":true,"message":"ok","data":%s}`, data)
	})
	out := t.TempDir()
	jobs := writeJobs(t, 1)
	folder, err := batch.OpenFolder(out)
	require.NoError(t, err)
	ledger, err := sqliteledger.Open(out)
	require.NoError(t, err)
	r, err := batch.New(srv.Client(), ledger, folder, batch.Options{Base: filepath.Dir(jobs), Worker: "host" + strings.TrimSuffix(escapes, "\xff")})
	require.NoError(t, err)
	checked, err := r.Check(context.Background(), batch.File(jobs))
	require.NoError(t, err)
	_, err = r.Run(context.Background(), checked)
	require.NoError(t, err)
	require.NoError(t, errors.Join(ledger.Close(), folder.Close()))

	noControls := func(t *testing.T, what, s string) {
		t.Helper()
		assert.True(t, json.Valid([]byte(s)), "%s is JSON: %q", what, s)
		for _, c := range []string{"\x1b", "\x7f", "\u009b", "\u202e"} {
			assert.NotContains(t, s, c, "%s: %q", what, s)
		}
	}
	code, stdout, stderr := runCLI(t, env, "batch", "status", "--out", out, "--json")
	require.Equal(t, 0, code, stderr)
	noControls(t, "batch status --json", stdout)
	assert.Contains(t, stdout, `host\u001b]0;pwned\u0007\u001b[2J\u001b[H\u009b31m\u202eevil\u007f`)

	code, stdout, stderr = runCLI(t, env, "text", "writer-tool", "--job-role", "x", "--job-skills", "y", "--language", "English", "--tone", "formal", "--json")
	require.Equal(t, 0, code, stderr)
	noControls(t, "writer-tool --json", stdout)
	var res struct{ Language string }
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.Equal(t, "English\u009b2J", res.Language, "the JSON reads back as the service's text")
}
