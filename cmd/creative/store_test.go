package main

import (
	"errors"
	"testing"

	"github.com/creativegen/creative-go/cmd/creative/internal/bucket"
)

func TestIsURL(t *testing.T) {
	for name, want := range map[string]bool{
		"out": false, "./out": false, "/srv/out": false, `C:\out`: false, "": false,
		"s3://b/p?region=eu-west-1": true, "gs://b": true, "azblob://c/p": true,
		"file:///srv/out": true, "mem://": true,
	} {
		if got := isURL(name); got != want {
			t.Errorf("isURL(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestOpenStoreBucketURLs(t *testing.T) {
	s, err := openStore(t.Context(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*bucket.Store); !ok {
		t.Fatalf("openStore(mem://) = %T, want a bucket store", s)
	}
	if _, err := openStore(t.Context(), "ftp://host/out"); err == nil {
		t.Fatal("openStore(ftp://...) = nil error, want the schemes it takes")
	}
	_, err = openStore(t.Context(), "file://otherhost/out")
	if err == nil || errors.Is(err, bucket.ErrNoConditionalCreate) {
		t.Fatalf("openStore(file://otherhost/...) = %v, want a refusal of a remote file URL", err)
	}
}
