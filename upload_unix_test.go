//go:build unix

package creative

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// A path that is not a regular file is refused with a *ValidationError
// before anything is opened that could block: a FIFO without a writer
// would block open(2) forever.
func TestFileFromPathRefusesWhatIsNotARegularFileWithoutBlocking(t *testing.T) {
	dir, err := os.MkdirTemp("", "up") // short: a socket's path is limited to about 100 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })

	fifo := filepath.Join(dir, "fifo.wav")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	// If a call did open the FIFO, it would wait for a writer: opening it
	// for writing at the end lets such a call go, so the test cannot hang.
	t.Cleanup(func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	sock := filepath.Join(dir, "s.wav")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	link := filepath.Join(dir, "link-to-fifo.wav")
	require.NoError(t, os.Symlink(fifo, link))

	tests := []struct{ name, path, rule string }{
		{"a named pipe (FIFO)", fifo, "is a named pipe (FIFO), not a regular file"},
		{"a symbolic link to a FIFO", link, "is a named pipe (FIFO), not a regular file"},
		{"a socket", sock, "is a socket, not a regular file"},
		{"a device", "/dev/null", "is a device, not a regular file"},
		{"a directory", dir, "is a directory, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.path); err != nil {
				t.Skipf("%s: %v", tt.path, err)
			}
			rt := &requestCounter{}
			c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: rt}))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := c.EnhanceAudio(ctx, EnhanceAudioRequest{Audio: FileFromPath(tt.path), TypeID: ids.EnhancePodcast})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the call blocked on the path")
			}
			assert.Less(t, time.Since(start), 2*time.Second, "refused at once, not at the deadline")
			var v *ValidationError
			require.ErrorAs(t, err, &v)
			assert.Equal(t, "audio", v.Field)
			assert.Contains(t, v.Rule, tt.rule)
			assert.ErrorIs(t, err, ErrInvalidRequest)
			assert.Equal(t, int64(0), rt.n.Load(), "nothing is sent")
		})
	}
}

func TestFileFromPathFollowsASymbolicLinkToARegularFile(t *testing.T) {
	dir := t.TempDir()
	content := append(pngHeader(32, 32), make([]byte, 10<<10)...)
	real := filepath.Join(dir, "real.png")
	require.NoError(t, os.WriteFile(real, content, 0o644))
	link := filepath.Join(dir, "link.png")
	require.NoError(t, os.Symlink(real, link))
	rec := &recorder{}
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.read(r)
		replyJSON(200, okImage)(w, r)
	})
	c := newTestClient(t, ts.URL)
	_, err := c.ReImagine(context.Background(), ReImagineRequest{Image: FileFromPath(link)})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{content}, rec.completeUploads())
}

// envUnreadable names the file the child process of
// TestAnUnreadableFileIsAValidationErrorThatUnwrapsToPermission tries.
const envUnreadable = "CREATIVE_TEST_UNREADABLE"

// A file the process may not read is a *ValidationError that unwraps to
// fs.ErrPermission. Root reads anything, so as root the check runs in a
// child process of this test binary as the user nobody.
func TestAnUnreadableFileIsAValidationErrorThatUnwrapsToPermission(t *testing.T) {
	if path := os.Getenv(envUnreadable); path != "" {
		checkUnreadable(t, path)
		return
	}
	dir, err := os.MkdirTemp("", "perm")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	path := filepath.Join(dir, "secret.wav")
	require.NoError(t, os.WriteFile(path, wavBytes, 0o000))
	if os.Geteuid() != 0 {
		checkUnreadable(t, path)
		return
	}
	// Copy the test binary where nobody may run it, and run this test there.
	bin := filepath.Join(dir, "creative.test")
	in, err := os.Open(os.Args[0])
	require.NoError(t, err)
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	in.Close()
	require.NoError(t, errors.Join(err, out.Close()))
	cmd := exec.Command(bin, "-test.run=^TestAnUnreadableFileIsAValidationErrorThatUnwrapsToPermission$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), envUnreadable+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	output, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Skipf("cannot run the check as another user: %v", err)
	}
	require.NoError(t, err, "%s", output)
	assert.Contains(t, string(output), "--- PASS")
}

func checkUnreadable(t *testing.T, path string) {
	_, err := os.ReadFile(path)
	require.ErrorIs(t, err, fs.ErrPermission, "the file must be unreadable for this test")
	rt := &requestCounter{}
	c := newTestClient(t, "https://api.example.com", WithHTTPClient(&http.Client{Transport: rt}))
	_, err = c.EnhanceAudio(context.Background(), EnhanceAudioRequest{Audio: FileFromPath(path), TypeID: ids.EnhancePodcast})
	var v *ValidationError
	require.ErrorAs(t, err, &v)
	assert.Contains(t, v.Rule, "cannot be read")
	assert.ErrorIs(t, err, fs.ErrPermission)
	assert.Equal(t, int64(0), rt.n.Load())
}
