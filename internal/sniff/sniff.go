// Package sniff is the one table of the file types the SDK, the fake
// service and the command line tell apart: their signatures (the first
// bytes that identify them), their content types and their file name
// extensions.
package sniff

import (
	"bytes"
	"net/http"
	"strings"
)

// A kind is one type of file.
type kind struct {
	ctype   string   // the content type a sniff reports
	aliases []string // other content types that name it
	ext     string   // the file name extension, with its dot
	match   func(head []byte) bool
}

// kinds is the table. A kind without match is known by its content type
// only: its bytes are told by another kind's signature or not at all.
var kinds = []kind{
	{ctype: "image/png", ext: ".png", match: prefix("\x89PNG\r\n\x1a\n")},
	{ctype: "image/jpeg", ext: ".jpg", match: prefix("\xff\xd8\xff")},
	{ctype: "image/webp", ext: ".webp", match: riff("WEBP")},
	{ctype: "image/gif", ext: ".gif", match: prefix("GIF8")},
	{ctype: "audio/wav", aliases: []string{"audio/x-wav", "audio/wave"}, ext: ".wav", match: riff("WAVE")},
	{ctype: "audio/mpeg", aliases: []string{"audio/mp3"}, ext: ".mp3", match: mp3},
	{ctype: "audio/ogg", aliases: []string{"audio/opus", "application/ogg"}, ext: ".ogg", match: prefix("OggS")},
	{ctype: "audio/flac", ext: ".flac", match: prefix("fLaC")},
	{ctype: "audio/aac", ext: ".aac", match: adts},
	{ctype: "audio/mp4", aliases: []string{"audio/x-m4a"}, ext: ".m4a", match: ftyp("M4A ", "M4B ")},
	{ctype: "video/mp4", ext: ".mp4", match: ftyp("")},
	{ctype: "video/webm", aliases: []string{"audio/webm"}, ext: ".webm", match: prefix("\x1a\x45\xdf\xa3")},
}

func prefix(sig string) func([]byte) bool {
	return func(h []byte) bool { return bytes.HasPrefix(h, []byte(sig)) }
}

// riff matches a RIFF container of the given form ("WAVE", "WEBP").
func riff(form string) func([]byte) bool {
	return func(h []byte) bool { return len(h) >= 12 && string(h[:4]) == "RIFF" && string(h[8:12]) == form }
}

// ftyp matches an ISO media file (MP4) of one of the major brands given,
// or of any brand when the one given is "".
func ftyp(brands ...string) func([]byte) bool {
	return func(h []byte) bool {
		if len(h) < 12 || string(h[4:8]) != "ftyp" {
			return false
		}
		for _, b := range brands {
			if b == "" || string(h[8:12]) == b {
				return true
			}
		}
		return false
	}
}

// mp3 matches an ID3 tag or an MPEG audio frame's sync bits with a layer
// (an AAC stream's ADTS header has the same sync and layer 0).
func mp3(h []byte) bool {
	return bytes.HasPrefix(h, []byte("ID3")) || len(h) >= 2 && h[0] == 0xff && h[1]&0xe0 == 0xe0 && h[1]&0x06 != 0
}

// adts matches an AAC stream's ADTS header: twelve sync bits, layer 0.
func adts(h []byte) bool { return len(h) >= 2 && h[0] == 0xff && h[1]&0xf6 == 0xf0 }

// Type returns the content type of the table whose signature head starts
// with, or "" when none does.
func Type(head []byte) string {
	for _, k := range kinds {
		if k.match != nil && k.match(head) {
			return k.ctype
		}
	}
	return ""
}

// ContentType returns Type(head), or else what http.DetectContentType
// says of it; "application/octet-stream" for no bytes at all.
func ContentType(head []byte) string {
	if ct := Type(head); ct != "" {
		return ct
	}
	if len(head) == 0 {
		return "application/octet-stream"
	}
	return http.DetectContentType(head)
}

// Ext returns the file name extension, such as ".png", of the content
// type ct (parameters and case are ignored), or "" when the table does not
// know it.
func Ext(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	for _, k := range kinds {
		if k.ctype == mt {
			return k.ext
		}
		for _, a := range k.aliases {
			if a == mt {
				return k.ext
			}
		}
	}
	return ""
}

// FileExt names a file's extension from its first bytes, or ".bin" when
// they show no type of the table. The name of the link a file came from is
// never asked: a service's link that ends in .html or .svg must not name a
// file that a browser would run.
func FileExt(head []byte) string {
	if ext := Ext(Type(head)); ext != "" {
		return ext
	}
	return ".bin"
}

// DeclaredExt names a stream of audio, wherever it is saved: the extension
// its first bytes head show, else the one of the type the answer declared
// (declared, ".bin" for a type not known).
func DeclaredExt(declared string, head []byte) string {
	if ext := Ext(Type(head)); ext != "" {
		return ext
	}
	return declared
}
