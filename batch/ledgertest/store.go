package ledgertest

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/batch"
)

// RunStore checks that a batch.Store of outputs keeps what a run relies
// on: an object is seen only once its writer closed whole, and replaces
// the one before; a writer whose context ended, or whose write failed,
// leaves nothing; a large object streams; keys that would leave the store
// are refused. open returns a new, empty store, closed by the suite, and
// read reads an object's bytes back (nil when there is none).
func RunStore(t *testing.T, open func(t *testing.T) (s batch.Store, read func(key string) []byte)) {
	t.Run("an object is seen once its writer closed, and replaces the one before", func(t *testing.T) {
		s, read := open(t)
		t.Cleanup(func() { _ = s.Close() })
		for _, body := range []string{"first", "second, longer"} {
			w, err := s.NewWriter(t.Context(), "sub/a.png", nil)
			require.NoError(t, err)
			_, err = io.WriteString(w, body)
			require.NoError(t, err)
			if body == "first" {
				ok, err := s.Exists(t.Context(), "sub/a.png")
				require.NoError(t, err)
				assert.False(t, ok, "seen before Close")
			}
			require.NoError(t, w.Close())
			ok, err := s.Exists(t.Context(), "sub/a.png")
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, body, string(read("sub/a.png")))
		}
	})
	t.Run("a writer whose context ended leaves nothing", func(t *testing.T) {
		s, read := open(t)
		t.Cleanup(func() { _ = s.Close() })
		ctx, cancel := context.WithCancel(t.Context())
		w, err := s.NewWriter(ctx, "b.png", nil)
		require.NoError(t, err)
		_, _ = io.WriteString(w, "part")
		cancel()
		_ = w.Close()
		ok, err := s.Exists(t.Context(), "b.png")
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Nil(t, read("b.png"))
	})
	t.Run("a large object streams", func(t *testing.T) {
		s, read := open(t)
		t.Cleanup(func() { _ = s.Close() })
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
		w, err := s.NewWriter(t.Context(), "big.bin", nil)
		require.NoError(t, err)
		for p := big; len(p) > 0; p = p[64<<10:] {
			_, err := w.Write(p[:64<<10])
			require.NoError(t, err)
		}
		require.NoError(t, w.Close())
		assert.True(t, bytes.Equal(big, read("big.bin")))
	})
	t.Run("List finds the keys with a prefix, Get reads one, Delete removes it", func(t *testing.T) {
		s, _ := open(t)
		t.Cleanup(func() { _ = s.Close() })
		for _, k := range []string{"000001-a.png", "000001-a-2.png", "000002-b.png"} {
			w, err := s.NewWriter(t.Context(), k, nil)
			require.NoError(t, err)
			_, _ = io.WriteString(w, k)
			require.NoError(t, w.Close())
		}
		var got []string
		for k, err := range s.List(t.Context(), "000001-") {
			require.NoError(t, err)
			got = append(got, k)
		}
		assert.ElementsMatch(t, []string{"000001-a.png", "000001-a-2.png"}, got)
		b, err := s.Get(t.Context(), "000002-b.png")
		require.NoError(t, err)
		assert.Equal(t, "000002-b.png", string(b))
		require.NoError(t, s.Delete(t.Context(), "000002-b.png"))
		require.NoError(t, s.Delete(t.Context(), "000002-b.png"), "a key that is gone")
		_, err = s.Get(t.Context(), "000002-b.png")
		assert.ErrorIs(t, err, fs.ErrNotExist)
	})
	t.Run("keys that would leave the store are refused", func(t *testing.T) {
		s, _ := open(t)
		t.Cleanup(func() { _ = s.Close() })
		for _, k := range []string{"", "/abs", "../up", "a/../../b", "a//b", `a\b`, "."} {
			_, err := s.NewWriter(t.Context(), k, nil)
			assert.Error(t, err, "%q", k)
			_, err = s.Exists(t.Context(), k)
			assert.Error(t, err, "%q", k)
		}
	})
}
