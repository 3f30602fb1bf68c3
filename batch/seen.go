package batch

import "encoding/binary"

// A seen set tells, in fixed memory, which identities may occur more than
// once in a pass over the jobs: a Bloom filter of 2^24 bits (2 MiB) says
// whether an identity was maybe met before, and only those (the true
// repeats, and about 0.2% false alarms at a million jobs) are kept exactly.
// A later pass counts the occurrences of the kept ones exactly.
type seen struct {
	bits  []uint64
	cands map[[32]byte]int // maybe repeated identities -> occurrences counted so far
}

const seenBits = 1 << 24

func newSeen() *seen { return &seen{bits: make([]uint64, seenBits/64), cands: map[[32]byte]int{}} }

// add records an identity; it reports whether it may have been met before
// (then it becomes a candidate).
func (s *seen) add(id [32]byte) bool {
	all := true
	for i := range 4 {
		b := binary.LittleEndian.Uint64(id[i*8:]) % seenBits
		if s.bits[b/64]&(1<<(b%64)) == 0 {
			all = false
			s.bits[b/64] |= 1 << (b % 64)
		}
	}
	if all {
		s.cands[id] = 0
	}
	return all
}

// count counts one more occurrence of id and returns its number (from 1).
// An identity that was never a candidate occurs once.
func (s *seen) count(id [32]byte) int {
	n, ok := s.cands[id]
	if !ok {
		return 1
	}
	s.cands[id] = n + 1
	return n + 1
}

// reset forgets the counts of a pass, for the next.
func (s *seen) reset() {
	for id := range s.cands {
		s.cands[id] = 0
	}
}
