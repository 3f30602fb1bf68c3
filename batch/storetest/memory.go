package storetest

import (
	"context"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/creativegen/creative-go/batch"
)

// A Memory is a batch.Store that keeps its objects in the memory of one
// process: for tests of programs that run batches, and as the reference
// the suite checks. It is safe for concurrent use; nothing in it is
// durable.
type Memory struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{m: map[string][]byte{}} }

// Create stores a copy of data under key unless key exists.
func (s *Memory) Create(_ context.Context, key string, data []byte) error {
	if err := batch.CheckKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; ok {
		return fmt.Errorf("storetest: %s: %w", key, batch.ErrExist)
	}
	s.m[key] = slices.Clone(data)
	return nil
}

// Put stores a copy of data under key.
func (s *Memory) Put(_ context.Context, key string, data []byte) error {
	if err := batch.CheckKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = slices.Clone(data)
	return nil
}

// Get returns a copy of the object under key.
func (s *Memory) Get(_ context.Context, key string) ([]byte, error) {
	if err := batch.CheckKey(key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[key]
	if !ok {
		return nil, fmt.Errorf("storetest: %s: %w", key, batch.ErrNotExist)
	}
	return slices.Clone(b), nil
}

// List yields the keys under prefix, in lexical order, as they were when
// it started.
func (s *Memory) List(_ context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		s.mu.Lock()
		var keys []string
		for k := range s.m {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
		s.mu.Unlock()
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, nil) {
				return
			}
		}
	}
}

// NewWriter buffers an object and stores it under key when closed, unless
// ctx ended first.
func (s *Memory) NewWriter(ctx context.Context, key string, _ map[string]string) (io.WriteCloser, error) {
	if err := batch.CheckKey(key); err != nil {
		return nil, err
	}
	return &memWriter{ctx: ctx, s: s, key: key}, nil
}

// Exists reports whether key names an object.
func (s *Memory) Exists(_ context.Context, key string) (bool, error) {
	if err := batch.CheckKey(key); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[key]
	return ok, nil
}

// Delete removes key.
func (s *Memory) Delete(_ context.Context, key string) error {
	if err := batch.CheckKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

// Close does nothing: the objects stay readable.
func (s *Memory) Close() error { return nil }

// A memWriter is an object being written to a Memory.
type memWriter struct {
	ctx context.Context
	s   *Memory
	key string
	buf []byte
}

func (w *memWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *memWriter) Close() error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	return w.s.Put(context.WithoutCancel(w.ctx), w.key, w.buf)
}
