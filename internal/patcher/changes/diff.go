package changes

import (
	"slices"
	"strconv"
	"strings"
)

// Diff renders the change as a unified diff with a/Path and b/Path headers
// and 3 lines of context. Line endings are kept as they are (a CRLF file
// shows CRLF lines), and a last line without a line break is followed by
// git's "\ No newline at end of file".
func (f File) Diff() string {
	from := diffName("a/" + f.Path)
	if f.Created {
		from = "/dev/null"
	}
	return unifiedDiff(diffLines(f.Old), diffLines(f.New), from, diffName("b/"+f.Path))
}

// diffName writes a file name for a diff header the way git does with
// core.quotePath: quoted with escapes when it holds a control or other
// unprintable character, a quote, a backslash or a space. A line break
// in a raw name would end the header and start a forged line of the
// diff; quoted, the name stays one line and reads back exactly.
func diffName(name string) string {
	q := strconv.Quote(name)
	if q[1:len(q)-1] != name || strings.ContainsRune(name, ' ') {
		return q
	}
	return name
}

// diffLines splits b after each LF, keeping the line endings. A last line
// without one gets git's marker, so that it compares unequal to the same
// line with a line break. The lines share one copy of b.
func diffLines(b []byte) []string {
	s := string(b)
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s+"\n\\ No newline at end of file\n")
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// The unified diff of File.Diff, computed as github.com/pmezard/go-difflib
// computes it (a port of Python's difflib.SequenceMatcher, Ratcliff and
// Obershelp's longest matching block found first and the pieces on either
// side of it matched the same way), to the byte: the diffs the repository's
// goldens hold are its output. go-difflib allocates a map for every line of
// the old side in every search for a longest block, which made it most of
// the time of a plan over one large file (2.3 s of 3.4 s for 1,000 edited
// Deployments in one file); here lines are numbered once and the search
// works on integer slices allocated once per diff. The differential test
// and FuzzDiffAgreesWithDifflib hold the two to the same text.

// diffContext is the lines of context around each change.
const diffContext = 3

// unifiedDiff is the text go-difflib's WriteUnifiedDiff writes for a and b
// with the headers from and to and diffContext lines of context: nothing
// when the lines are equal.
func unifiedDiff(a, b []string, from, to string) string {
	m := newLineMatcher(a, b)
	groups := groupOpCodes(opCodes(m.matchingBlocks()), diffContext)
	if len(groups) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("--- " + from + "\n")
	sb.WriteString("+++ " + to + "\n")
	for _, g := range groups {
		writeHunk(&sb, g, a, b)
	}
	return sb.String()
}

// writeHunk writes one group of opcodes as a hunk: its header, then each
// line with its mark.
func writeHunk(sb *strings.Builder, g []opCode, a, b []string) {
	first, last := g[0], g[len(g)-1]
	sb.WriteString("@@ -")
	sb.WriteString(hunkRange(first.i1, last.i2))
	sb.WriteString(" +")
	sb.WriteString(hunkRange(first.j1, last.j2))
	sb.WriteString(" @@\n")
	for _, c := range g {
		if c.tag == 'e' {
			writeLines(sb, ' ', a[c.i1:c.i2])
			continue
		}
		if c.tag == 'r' || c.tag == 'd' {
			writeLines(sb, '-', a[c.i1:c.i2])
		}
		if c.tag == 'r' || c.tag == 'i' {
			writeLines(sb, '+', b[c.j1:c.j2])
		}
	}
}

func writeLines(sb *strings.Builder, mark byte, lines []string) {
	for _, l := range lines {
		sb.WriteByte(mark)
		sb.WriteString(l)
	}
}

// hunkRange writes the lines [start, stop) as a hunk header does: the
// first line counted from one and the length, the length left out when it
// is one, and an empty range placed at the line before it.
func hunkRange(start, stop int) string {
	first, n := start+1, stop-start
	if n == 1 {
		return strconv.Itoa(first)
	}
	if n == 0 {
		first--
	}
	return strconv.Itoa(first) + "," + strconv.Itoa(n)
}

// match is a[a:a+size] equal to b[b:b+size].
type match struct{ a, b, size int }

// opCode says how a[i1:i2] becomes b[j1:j2]: 'e' equal, 'r' replaced,
// 'd' deleted, 'i' inserted.
type opCode struct {
	tag            byte
	i1, i2, j1, j2 int
}

// lineMatcher finds matching blocks of two sequences of lines, each line
// numbered once so that lines compare as integers.
type lineMatcher struct {
	a, b []int32
	// The positions in b of line number x are pos[start[x]:start[x+1]],
	// ascending; none for a line popular in b (more than one in a hundred
	// of b's lines, once b has 200), which go-difflib's autojunk leaves
	// out of the search (but not out of extending a block found).
	start, pos []int32
	// During the search in a[i], run[j+1] is the length of the block that
	// ends at a[i-1] and b[j]; next is the same for a[i], being built.
	// Only the entries listed in set and nextSet are not zero.
	run, next    []int32
	set, nextSet []int32
	// searched are the indexes of a whose lines have positions in b, the
	// only lines the search looks at: a block it finds is made of them.
	searched []int32
}

func newLineMatcher(a, b []string) *lineMatcher {
	ids := make(map[string]int32, len(b))
	m := &lineMatcher{a: make([]int32, len(a)), b: make([]int32, len(b))}
	for j, l := range b {
		id, ok := ids[l]
		if !ok {
			id = int32(len(ids))
			ids[l] = id
		}
		m.b[j] = id
	}
	inB := int32(len(ids))
	for i, l := range a {
		id, ok := ids[l]
		if !ok {
			// Not in b: it matches nothing, and has no positions.
			id = inB
		}
		m.a[i] = id
	}
	m.index(int(inB))
	for i, id := range m.a {
		if m.start[id+1] > m.start[id] {
			m.searched = append(m.searched, int32(i))
		}
	}
	m.run = make([]int32, len(b)+1)
	m.next = make([]int32, len(b)+1)
	return m
}

// index lays out the positions of each of b's n distinct lines, leaving
// out the popular ones. Line number n, a's lines that are not in b, has
// none.
func (m *lineMatcher) index(n int) {
	count := make([]int32, n+2)
	for _, id := range m.b {
		count[id+1]++
	}
	if len(m.b) >= 200 {
		most := int32(len(m.b)/100 + 1)
		for x, c := range count {
			if c > most {
				count[x] = 0
			}
		}
	}
	for x := 1; x < len(count); x++ {
		count[x] += count[x-1]
	}
	m.start = count
	m.pos = make([]int32, count[len(count)-1])
	fill := slices.Clone(count[:n])
	for j, id := range m.b {
		if m.start[id+1]-m.start[id] == 0 {
			continue
		}
		m.pos[fill[id]] = int32(j)
		fill[id]++
	}
}

// longest finds the longest block of a[alo:ahi] equal to b[blo:bhi] made
// of lines that are not popular, the first in a and then in b of those as
// long, then extends it over equal lines on both sides, popular ones
// included: go-difflib's findLongestMatch when nothing is junk. size is
// zero when no line matches.
func (m *lineMatcher) longest(alo, ahi, blo, bhi int) match {
	best := match{a: alo, b: blo}
	first, _ := slices.BinarySearch(m.searched, int32(alo))
	prev := -1
	for _, i32 := range m.searched[first:] {
		i := int(i32)
		if i >= ahi {
			break
		}
		if i != prev+1 {
			// A line between had no positions: no block runs across it.
			m.clearRun()
		}
		prev = i
		js := m.pos[m.start[m.a[i]]:m.start[m.a[i]+1]]
		from, _ := slices.BinarySearch(js, int32(blo))
		for _, j := range js[from:] {
			if int(j) >= bhi {
				break
			}
			k := m.run[j] + 1
			m.next[j+1] = k
			m.nextSet = append(m.nextSet, j+1)
			if int(k) > best.size {
				best = match{a: i - int(k) + 1, b: int(j) - int(k) + 1, size: int(k)}
			}
		}
		m.clearRun()
		m.run, m.next = m.next, m.run
		m.set, m.nextSet = m.nextSet, m.set
	}
	m.clearRun()
	for best.a > alo && best.b > blo && m.a[best.a-1] == m.b[best.b-1] {
		best.a, best.b, best.size = best.a-1, best.b-1, best.size+1
	}
	for best.a+best.size < ahi && best.b+best.size < bhi && m.a[best.a+best.size] == m.b[best.b+best.size] {
		best.size++
	}
	return best
}

// clearRun zeroes the entries of run that are set.
func (m *lineMatcher) clearRun() {
	for _, j := range m.set {
		m.run[j] = 0
	}
	m.set = m.set[:0]
}

// matchingBlocks are the blocks found by taking the longest block, then
// the same on each side of it, in order, adjacent blocks joined, and
// ending with the empty block at len(a), len(b).
func (m *lineMatcher) matchingBlocks() []match {
	var found []match
	var blocks func(alo, ahi, blo, bhi int)
	blocks = func(alo, ahi, blo, bhi int) {
		k := m.longest(alo, ahi, blo, bhi)
		if k.size == 0 {
			return
		}
		if alo < k.a && blo < k.b {
			blocks(alo, k.a, blo, k.b)
		}
		found = append(found, k)
		if k.a+k.size < ahi && k.b+k.size < bhi {
			blocks(k.a+k.size, ahi, k.b+k.size, bhi)
		}
	}
	blocks(0, len(m.a), 0, len(m.b))
	joined := make([]match, 0, len(found)+1)
	for _, k := range found {
		if n := len(joined); n > 0 && joined[n-1].a+joined[n-1].size == k.a && joined[n-1].b+joined[n-1].size == k.b {
			joined[n-1].size += k.size
			continue
		}
		joined = append(joined, k)
	}
	return append(joined, match{a: len(m.a), b: len(m.b)})
}

// opCodes turns the matching blocks into the steps that make b from a.
func opCodes(blocks []match) []opCode {
	var codes []opCode
	i, j := 0, 0
	for _, k := range blocks {
		var tag byte
		switch {
		case i < k.a && j < k.b:
			tag = 'r'
		case i < k.a:
			tag = 'd'
		case j < k.b:
			tag = 'i'
		}
		if tag != 0 {
			codes = append(codes, opCode{tag, i, k.a, j, k.b})
		}
		i, j = k.a+k.size, k.b+k.size
		if k.size > 0 {
			codes = append(codes, opCode{'e', k.a, i, k.b, j})
		}
	}
	return codes
}

// groupOpCodes cuts the steps into hunks with n lines of context: an
// equal run longer than 2n ends one hunk with its first n lines and
// starts the next with its last n; the equal runs at either end keep n
// lines. A hunk of nothing but equal lines is none.
func groupOpCodes(codes []opCode, n int) [][]opCode {
	if len(codes) == 0 {
		return nil
	}
	if c := &codes[0]; c.tag == 'e' {
		c.i1, c.j1 = max(c.i1, c.i2-n), max(c.j1, c.j2-n)
	}
	if c := &codes[len(codes)-1]; c.tag == 'e' {
		c.i2, c.j2 = min(c.i2, c.i1+n), min(c.j2, c.j1+n)
	}
	var groups [][]opCode
	var group []opCode
	for _, c := range codes {
		if c.tag == 'e' && c.i2-c.i1 > 2*n {
			group = append(group, opCode{'e', c.i1, min(c.i2, c.i1+n), c.j1, min(c.j2, c.j1+n)})
			groups = append(groups, group)
			group = nil
			c.i1, c.j1 = max(c.i1, c.i2-n), max(c.j1, c.j2-n)
		}
		group = append(group, c)
	}
	if len(group) > 0 && (len(group) > 1 || group[0].tag != 'e') {
		groups = append(groups, group)
	}
	return groups
}
