package located

import "strings"

// Nearest is the name among known that a misspelt name most likely
// meant, for an "unknown field" error: one differing only in case, else
// the only one it begins, else the closest by edit distance (insertions,
// deletions, substitutions and swaps of neighbours, ignoring case). It
// must be close for the length: one edit for names up to five letters,
// two beyond, so that a short name is not matched to an unrelated one.
// Ties go to the first in known, which callers list in a fixed order.
// ok is false when none is close.
func Nearest(name string, known []string) (nearest string, ok bool) {
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	// A name cut short (headroom for headroomPercent) is far by edits
	// but plain to a reader, when it starts one known name only.
	var prefixed []string
	for _, k := range known {
		if len(name) >= 4 && strings.HasPrefix(strings.ToLower(k), strings.ToLower(name)) {
			prefixed = append(prefixed, k)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0], true
	}
	limit := 1
	if len([]rune(name)) > 5 {
		limit = 2
	}
	best := limit + 1
	for _, k := range known {
		if d := distance(strings.ToLower(name), strings.ToLower(k)); d < best {
			nearest, best = k, d
		}
	}
	return nearest, best <= limit
}

// distance is the optimal string alignment distance between a and b:
// Levenshtein's, with a swap of two neighbouring letters counted as one
// edit, the commonest slip of a typist.
func distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// Three rows: the one before the previous is needed for swaps.
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
