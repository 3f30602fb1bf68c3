package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/internal/outdir"
)

// A command refused before anything is sent leaves no --out folder, and
// exits 2.
func TestARefusedOperationMakesNoFolder(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"no access key", map[string]string{"CREATIVE_BASE_URL": "http://127.0.0.1:9"}},
		{"no base URL", map[string]string{"CREATIVE_ACCESS_KEY": cliKey}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x")
			code, _, stderr := runCLI(t, tt.env, "audio", "text-to-speech", "--prompt", "hi", "--voice-id", "female-1", "--out", out)
			assert.Equal(t, exitUsage, code, stderr)
			assert.NoDirExists(t, out, "no folder made")
		})
	}
}

// A folder that cannot be written is found before the call is sent: here
// /sys, where even root makes no file.
func TestAnUnwritableFolderIsRefusedBeforeTheCall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/sys is Linux's")
	}
	if f, err := os.CreateTemp("/sys", "probe"); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skip("/sys can be written here")
	}
	srv, env := fakeEnv(t)
	code, stdout, stderr := runCLI(t, env, "audio", "text-to-speech", "--prompt", "hi", "--voice-id", "female-1", "--out", "/sys")
	assert.Equal(t, exitUsage, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "/sys cannot be written")
	assert.Empty(t, srv.Requests(), "nothing is sent, nothing is paid")
}

// An answer that arrives when its folder can no longer take it (here the
// folder is removed while the call is under way) is kept in the system's
// temporary folder, and the error names that file, the folder and the
// request id: it was paid for.
func TestAPaidAnswerTheFolderCannotTakeIsKept(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"speech, streamed", []string{"audio", "text-to-speech", "--prompt", "hi", "--voice-id", "female-1"}},
		{"an image, in the answer", []string{"image", "text-to-image", "--prompt", "fox", "--number-of-results", "1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, env := fakeEnv(t)
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			out := filepath.Join(t.TempDir(), "out")
			fake, err := url.Parse(srv.URL)
			require.NoError(t, err)
			proxy := httputil.NewSingleHostReverseProxy(fake)
			var requestID string
			proxy.ModifyResponse = func(resp *http.Response) error {
				if resp.Request.Method == http.MethodPost {
					requestID = resp.Header.Get("X-Request-Id")
					return os.Remove(out) // empty: the probe left nothing
				}
				return nil
			}
			front := httptest.NewServer(proxy)
			defer front.Close()
			env["CREATIVE_BASE_URL"] = front.URL

			code, stdout, stderr := runCLI(t, env, append(tt.args, "--out", out)...)
			assert.Equal(t, exitAPI, code, stderr)
			assert.Empty(t, stdout)
			assert.Len(t, srv.Requests(), 1)
			require.NotEmpty(t, requestID)
			assert.Contains(t, stderr, "request id "+requestID)
			assert.Contains(t, stderr, out)
			kept := regexp.MustCompile(`kept in (\S+):`).FindStringSubmatch(stderr)
			require.NotNil(t, kept, stderr)
			assert.Equal(t, tmp, filepath.Dir(kept[1]))
			b, err := os.ReadFile(kept[1])
			require.NoError(t, err)
			assert.NotEmpty(t, b)

			// The same answer, saved where it can be, has the same bytes.
			again := t.TempDir()
			code, stdout, stderr = runCLI(t, map[string]string{"CREATIVE_BASE_URL": srv.URL, "CREATIVE_ACCESS_KEY": srv.AccessKey}, append(tt.args, "--out", again)...)
			require.Equal(t, 0, code, stderr)
			saved, err := os.ReadFile(strings.TrimSpace(stdout))
			require.NoError(t, err)
			assert.Equal(t, len(saved), len(b), "the kept answer is whole")
		})
	}
}

// When the folder fails in the middle of an answer, the bytes it took and
// the rest go on to the file in the system's temporary folder: none is
// lost.
func TestAnAnswerCutByTheFolderGoesOnToTheTemporaryFolder(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	d, err := outdir.Create(t.TempDir())
	require.NoError(t, err)
	defer d.Close()
	f, err := os.Create(filepath.Join(d.Path(), "part"))
	require.NoError(t, err)
	s := &saver{dir: d, status: newCallStatus("audio/text-to-speech")}
	id := "req-1"
	s.status.requestID.Store(&id)
	r := &rescuer{s: s, stem: "text-to-speech", f: f}
	_, err = r.Write([]byte("first "))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r.f, err = os.Open(f.Name()) // read only: the next write fails
	require.NoError(t, err)
	defer r.f.Close()
	for _, p := range []string{"second ", "third"} {
		n, err := r.Write([]byte(p))
		require.NoError(t, err)
		assert.Equal(t, len(p), n)
	}
	err = r.end(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "request id req-1")
	assert.Contains(t, err.Error(), d.Path())
	b, rerr := os.ReadFile(r.rescue.Name())
	require.NoError(t, rerr)
	assert.Equal(t, "first second third", string(b))
	assert.True(t, bytes.HasPrefix([]byte(r.rescue.Name()), []byte(os.TempDir())))
	assert.Contains(t, err.Error(), r.rescue.Name())
}
