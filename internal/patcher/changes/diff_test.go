package changes_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
)

// difflibDiff is the diff File.Diff wrote with go-difflib before it had a
// matcher of its own: the text every diff in the goldens is.
func difflibDiff(t testing.TB, f changes.File) string {
	from := "a/" + f.Path
	if f.Created {
		from = "/dev/null"
	}
	s, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: changes.DiffLines(f.Old), B: changes.DiffLines(f.New),
		FromFile: from, ToFile: "b/" + f.Path, Context: 3,
	})
	require.NoError(t, err)
	return s
}

// lines writes one line per letter of s, so that tests can write short
// sequences: "abac" is the lines a, b, a, c.
func lines(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, string(r)+"\n"...)
	}
	return b
}

// numbered is a file of one line per byte of p, the byte's value modulo
// alphabet: small alphabets make lines repeat, and past 200 lines make
// some of them popular, which go-difflib's matcher leaves out of its
// search.
func numbered(p []byte, alphabet uint8) []byte {
	var b []byte
	for _, c := range p {
		b = strconv.AppendInt(b, int64(c%alphabet), 10)
		b = append(b, '\n')
	}
	return b
}

type diffCase struct {
	name     string
	old, new []byte
	created  bool
}

// TestDiffAgreesWithDifflib: File.Diff writes go-difflib's text, byte
// for byte, on the cases where a shortcut would differ and on random
// pairs.
func TestDiffAgreesWithDifflib(t *testing.T) {
	tests := []diffCase{
		{name: "trimming the common prefix would differ", old: lines("ababc"), new: lines("abc")},
		{name: "longest block first", old: lines("ab"), new: lines("acab")},
		{name: "a line not in b ends a block", old: lines("xZy"), new: lines("xy")},
		{name: "a popular line ends a block", old: append(lines("xpy"), numbered(make([]byte, 250), 1)...), new: append(lines("xy"), numbered(make([]byte, 250), 1)...)},
		{name: "equal", old: lines("abc"), new: lines("abc")},
		{name: "both empty"},
		{name: "from nothing", new: lines("ab")},
		{name: "created", new: lines("ab"), created: true},
		{name: "to nothing", old: lines("ab")},
		{name: "last line without a break", old: []byte("a\nb"), new: []byte("a\nb\n")},
		{name: "CRLF", old: []byte("a\r\nb\r\n"), new: []byte("a\r\nc\r\n")},
		{name: "far apart changes make two hunks", old: lines("abcdefghijklmnop"), new: lines("Xbcdefghijklmnop")},
		{name: "percent signs", old: []byte("%d\n%s\n"), new: []byte("%v\n%s\n")},
		{name: "popular lines only", old: numbered(bytes.Repeat([]byte{0, 1, 2}, 100), 3), new: numbered(bytes.Repeat([]byte{0, 2, 1}, 90), 3)},
	}
	deployments := editedDeployments(100)
	tests = append(tests, diffCase{name: "100 edited Deployments", old: deployments.Old, new: deployments.New})
	rnd := rand.New(rand.NewPCG(23, 1))
	for n := range 300 {
		old, new := randomPair(rnd)
		tests = append(tests, diffCase{name: fmt.Sprintf("random %d", n), old: old, new: new})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := changes.File{Path: "deploy.yaml", Old: tt.old, New: tt.new, Created: tt.created}
			require.Equal(t, difflibDiff(t, f), f.Diff())
		})
	}
}

// randomPair is two files of lines from a small alphabet, up to 600
// lines: unrelated, or the second an edit of the first as edits are.
func randomPair(rnd *rand.Rand) (old, new []byte) {
	alphabet := uint8(1 + rnd.IntN(60))
	p := make([]byte, rnd.IntN(600))
	for i := range p {
		p[i] = byte(rnd.IntN(256))
	}
	q := make([]byte, 0, len(p)+10)
	if rnd.IntN(3) == 0 {
		for range rnd.IntN(600) {
			q = append(q, byte(rnd.IntN(256)))
		}
		return numbered(p, alphabet), numbered(q, alphabet)
	}
	for _, c := range p {
		switch rnd.IntN(40) {
		case 0: // deleted
		case 1: // changed
			q = append(q, byte(rnd.IntN(256)))
		case 2: // inserted before
			q = append(q, byte(rnd.IntN(256)), c)
		default:
			q = append(q, c)
		}
	}
	return numbered(p, alphabet), numbered(q, alphabet)
}

// FuzzDiffAgreesWithDifflib: for any two files, File.Diff writes
// go-difflib's text. With alphabet zero the inputs are the files; else
// each byte is a line (see numbered), so that lines repeat and, past 200
// of them, become popular.
func FuzzDiffAgreesWithDifflib(f *testing.F) {
	for _, pair := range goldenPairs(f) {
		f.Add(pair[0], pair[1], uint8(0))
	}
	rnd := rand.New(rand.NewPCG(23, 2))
	for range 8 {
		old, new := randomPair(rnd)
		f.Add(old, new, uint8(0))
	}
	f.Add(bytes.Repeat([]byte{0, 1, 2, 3}, 60), bytes.Repeat([]byte{0, 1, 3, 2}, 70), uint8(4))
	f.Add([]byte("abcabba"), []byte("cbabac"), uint8(3))
	f.Fuzz(func(t *testing.T, old, new []byte, alphabet uint8) {
		if alphabet > 0 {
			old, new = numbered(old, alphabet), numbered(new, alphabet)
		}
		file := changes.File{Path: "deploy.yaml", Old: old, New: new}
		if got, want := file.Diff(), difflibDiff(t, file); got != want {
			t.Fatalf("File.Diff:\n%s\ngo-difflib:\n%s", got, want)
		}
	})
}

// goldenPairs are the manifests of the patcher's goldens, each before and
// after its edit.
func goldenPairs(tb testing.TB) [][2][]byte {
	expected, err := filepath.Glob("../testdata/golden/*/expected/*")
	require.NoError(tb, err)
	var pairs [][2][]byte
	for _, path := range expected {
		after, err := os.ReadFile(path)
		require.NoError(tb, err)
		before, err := os.ReadFile(strings.Replace(path, "/expected/", "/original/", 1))
		if err != nil {
			continue // a file the edit created
		}
		pairs = append(pairs, [2][]byte{before, after})
	}
	require.NotEmpty(tb, pairs)
	return pairs
}
