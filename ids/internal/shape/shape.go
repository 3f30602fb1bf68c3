// Package shape holds the one rule for what an id looks like, shared by
// package ids (and through ids.IsID by the SDK's validation and the fake
// service) and by the generator that writes ids_gen.go, so that the three
// cannot disagree.
package shape

// IDLen is the length of an id: 24 hexadecimal characters (12 bytes).
const IDLen = 24

// IsID reports whether s is shaped as an id: 24 lower-case hexadecimal
// characters. Upper-case hex is not an id: the service compares ids as
// strings.
func IsID(s string) bool {
	if len(s) != IDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
