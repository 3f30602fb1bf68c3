package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A folder --out that cannot be used is reported in the words of the
// person who named it: what the path is, or why the folder cannot be
// made, without the system call or a package of the program.
func TestAnOutThatIsNoFolderIsSaidPlainly(t *testing.T) {
	srv, env := fakeEnv(t)
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	qr := []string{"image", "generate-qr", "--url", "https://e.example", "--prompt", "p", "--out"}
	tests := []struct {
		name, out, want string
	}{
		{"a file", file, "creative: --out: " + file + " is not a folder\n"},
		{"a folder under a file", filepath.Join(file, "x"), "creative: --out: cannot create folder " + filepath.Join(file, "x") + ": " + file + " is not a folder\n"},
	}
	if runtime.GOOS == "linux" {
		tests = append(tests, struct{ name, out, want string }{"a folder where none can be made", "/proc/nope", "creative: --out: cannot create folder /proc/nope: no such file or directory\n"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, env, append(qr, tt.out)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tt.want, stderr)
		})
	}
	assert.Zero(t, srv.Count("image/generate-qr"), "nothing was sent")
}
