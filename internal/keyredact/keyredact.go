// Package keyredact lends the SDK's redactor to the packages of its module
// that write what came from the network to disk (creativetest/cassette): the
// one list of the forms an access key takes when a server echoes it, kept
// in package creative. Package creative sets New when it is initialised,
// so any program that imports it finds New set.
package keyredact

// Marker is what a key is replaced with, as in the SDK's errors.
const Marker = "[redacted]"

// A Redactor removes a set of access keys from text.
type Redactor struct {
	// Redact returns s without the keys, in every form the SDK's redactor
	// knows: as they are, escaped for a URL, quoted for Go or JSON, in a
	// JSON pointer, and written with HTML, JSON, Go or URL escapes in any
	// mix.
	Redact func(s string) string
	// Forms are the keys' literal forms, longest first and folded to lower
	// case (see Fold): what to look for in bytes that are not text.
	Forms []string
}

// New returns the Redactor of keys. Keys shorter than 4 bytes are not
// looked for.
var New func(keys []string) Redactor

// Fold appends b to dst[:0] with ASCII letters in lower case: the Forms
// are folded so, since a server may echo a key in another case, and bytes
// are looked through for them once folded alike.
func Fold(dst, b []byte) []byte {
	dst = append(dst[:0], b...)
	for i, c := range dst {
		if 'A' <= c && c <= 'Z' {
			dst[i] = c + ('a' - 'A')
		}
	}
	return dst
}
