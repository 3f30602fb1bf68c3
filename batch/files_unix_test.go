//go:build unix

package batch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// A file field that names no regular file is refused at once, without
// being opened: a named pipe would hold the check until a writer came.
func TestFileFieldsThatAreNoRegularFileAreRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.png"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "folder.png"), 0o755))
	jobs := []batch.Job{
		{Op: "image/re-imagine", Fields: map[string]any{"image": "pipe.png"}},
		{Op: "image/re-imagine", Fields: map[string]any{"image": "folder.png"}},
		{Op: "image/re-imagine", Fields: map[string]any{"image": "/dev/null"}},
	}
	r, err := batch.New(nil, nil, nil, batch.Options{Base: dir, AllowOutside: true})
	require.NoError(t, err)
	checked := make(chan error, 1)
	go func() {
		_, err := r.Check(context.Background(), batch.Values(slices.Values(jobs)))
		checked <- err
	}()
	select {
	case err = <-checked:
	case <-time.After(30 * time.Second):
		t.Fatal("the check still waits on a file field")
	}
	var ce *batch.CheckError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Len(t, ce.Lines, 3)
	for i, name := range []string{"pipe.png", "folder.png", "/dev/null"} {
		assert.Equal(t, i+1, ce.Lines[i].Line)
		assert.Equal(t, "image", ce.Lines[i].Field)
		assert.Contains(t, ce.Lines[i].Err.Error(), name+" is not a regular file")
	}
}
