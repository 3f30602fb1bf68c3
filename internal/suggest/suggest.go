// Package suggest finds, among the names a program knows, those nearest to
// a name it does not: the "did you mean" of a mistyped flag, field or
// operation. Batch and the command line share it, so that both suggest by
// one rule.
package suggest

import (
	"strings"
	"unicode"
)

// Distance returns the Levenshtein distance between a and b: the fewest
// runes inserted, deleted or replaced to turn one into the other.
func Distance(a, b string) int {
	row := lastRow([]rune(a), []rune(b))
	return row[len(row)-1]
}

// lastRow returns the last row of the edit-distance table of a against b:
// its j-th cell is the distance from a to the first j runes of b.
func lastRow(a, b []rune) []int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev
}

// Nearest returns the names nearest to word, in the order given, or none
// when no name is near. Names are compared without case and without "-"
// and "_", so "numberOfResults", "number-of-results" and
// "number_of_results" are one name. A name is near when word is within one
// edit per three of its runes of the name or of a start of it ("promt" of
// "prompt", "colour" of "colorId", "style" of "styleId"), or, for a word of
// three runes or more, when the name contains it ("size" in
// "imageSizeId"), or when word starts with a name of three runes or more
// ("output" of "out"). Of the names near, those at the least distance are
// returned.
func Nearest(word string, names []string) []string {
	w := fold(word)
	tolerance := len(w) / 3
	best := tolerance + 1
	var near []string
	for _, name := range names {
		d := score(w, fold(name), tolerance)
		switch {
		case d < best:
			best, near = d, []string{name}
		case d == best && d <= tolerance:
			near = append(near, name)
		}
	}
	return near
}

// score is the distance from w to the nearest start of name, or tolerance
// when name contains w but does not start near it.
func score(w, name []rune, tolerance int) int {
	if len(w) == 0 {
		return tolerance + 1
	}
	d := tolerance + 1
	for _, cell := range lastRow(w, name)[1:] {
		d = min(d, cell)
	}
	switch {
	case d <= tolerance:
	case len(w) >= 3 && strings.Contains(string(name), string(w)):
		d = tolerance
	case len(name) >= 3 && strings.HasPrefix(string(w), string(name)):
		d = tolerance // "output" of "out"
	}
	return d
}

// fold is name in lower case without "-" and "_".
func fold(name string) []rune {
	out := make([]rune, 0, len(name))
	for _, r := range name {
		if r != '-' && r != '_' {
			out = append(out, unicode.ToLower(r))
		}
	}
	return out
}
