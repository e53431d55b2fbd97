package splice

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestComments(t *testing.T) {
	src := "# head\n" +
		"a: \"x # not\" # one\n" +
		"b: 'y # not'\t# two\n" +
		"c: z#not # three\n" +
		"d: |  # four\n" +
		"  body # not\n" +
		"  # not either\n" +
		"# five\n" +
		"e: &x !!str \"q # not\"\n" +
		"f: [g, # six\n" +
		"  h]\n" +
		"i: >2\n" +
		"   folded # not\n" +
		"j: \"multi\n" +
		"  # not\"\n"
	s, err := Parse([]byte(src))
	require.NoError(t, err)
	cs, err := s.comments()
	require.NoError(t, err)
	var got []string
	for _, c := range cs {
		require.Equal(t, c.text, src[c.off:c.end])
		got = append(got, c.text)
	}
	require.Equal(t, []string{"# head", "# one", "# two", "# three", "# four", "# five", "# six"}, got)
}

// oldFlowDelete removes a flow mapping entry the way deleteEntry once did:
// from the end of the previous value, which takes the comments between
// the two entries with it. It declares only the entry as removed.
func oldFlowDelete(key string) func(d *Doc) error {
	return func(d *Doc) error {
		ann := Lookup(d.Root, "spec", "template", "metadata", "annotations")
		k, v := Field(ann, key)
		_, pe, err := d.sp.span(ann.Content[IndexOf(ann.Content, k)-1])
		if err != nil {
			return err
		}
		ks, err := d.sp.entryStart(k)
		if err != nil {
			return err
		}
		_, ve, err := d.sp.span(v)
		if err != nil {
			return err
		}
		d.splices = append(d.splices, splice{off: pe, end: ve})
		d.removed = append(d.removed, [2]int{ks, ve})
		em, err := d.expNode(ann)
		if err != nil {
			return err
		}
		_, err = yaml.NewRNode(em).Pipe(yaml.Clear(key))
		return err
	}
}

// A step that loses a comment outside what it means to remove is
// refused, even though the result parses to the intended tree.
func TestRefusesALostComment(t *testing.T) {
	src := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    metadata:
      annotations: {
        prometheus.io/scrape: "true",  # scrape me
        gpu-fraction: "0.5"
      }
    spec:
      containers: [{name: c, image: x}]
`
	f, err := NewFile("d.yaml", []byte(src), false)
	require.NoError(t, err)
	_, _, err = f.EditDoc(0, []Step{{Name: "oldFlowDelete", Run: oldFlowDelete("gpu-fraction")}})
	require.ErrorIs(t, err, ErrVerify)
	require.ErrorContains(t, err, `the comment "# scrape me" is lost`)
	_, changed := f.Result()
	require.False(t, changed)
}

// TestCommentsAllocateNothingPerQuotedScalar: the comment check, run on
// every document an edit proves, finds where quoted scalars are without
// an allocation for each: a document of fifty costs what one of one does.
func TestCommentsAllocateNothingPerQuotedScalar(t *testing.T) {
	quoted := func(n int) *Stream {
		src := "# head\n"
		for i := range n {
			src += "k" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": \"v # not\" # c\n"
		}
		s, err := Parse([]byte(src))
		require.NoError(t, err)
		return s
	}
	allocs := func(s *Stream) float64 {
		return testing.AllocsPerRun(20, func() {
			if _, err := s.comments(); err != nil {
				t.Fatal(err)
			}
		})
	}
	one, fifty := allocs(quoted(1)), allocs(quoted(50))
	// Each comment found is a string of its own, and the lists grow.
	require.LessOrEqual(t, fifty-one, 49+20.0, "allocations for 49 more quoted scalars and comments: %v against %v", fifty, one)
}

// commentsByByte is commentsOutside as it was written first: a flag for
// each byte of the text in a skipped range.
func commentsByByte(t *text, skip [][2]int) []comment {
	inside := make([]bool, len(t.b)+1)
	for _, r := range skip {
		for i := r[0]; i < r[1]; i++ {
			inside[i] = true
		}
	}
	var out []comment
	b := t.b
	for i := t.bom; i < len(b); i++ {
		if b[i] != '#' || inside[i] {
			continue
		}
		if i > t.bom && !isBlank(b[i-1]) && breakLen(b, i-1) == 0 {
			continue
		}
		e := t.lineEnd(i)
		out = append(out, comment{off: i, end: e, text: string(b[i:e])})
		i = e
	}
	return out
}

// FuzzCommentsOutside: for any text and any ranges, in any order and
// overlapping or not, the sweep over sorted ranges finds the comments
// that a flag for each byte finds.
func FuzzCommentsOutside(f *testing.F) {
	f.Add([]byte("a: 1 # c\n'#': \"x # y\" # z\n"), []byte{3, 9, 12, 20, 0, 2})
	f.Add([]byte("\ufeff# top\nk: |\n  # body\n# after\n"), []byte{15, 24, 16, 18})
	f.Fuzz(func(t *testing.T, b []byte, ranges []byte) {
		tx := newText(b)
		var skip [][2]int
		for i := 0; i+1 < len(ranges); i += 2 {
			s := int(ranges[i]) % (len(b) + 1)
			skip = append(skip, [2]int{s, min(len(b), s+int(ranges[i+1])%32)})
		}
		want := commentsByByte(tx, skip)
		got := tx.commentsOutside(slices.Clone(skip))
		if !slices.Equal(got, want) {
			t.Fatalf("%q skipping %v: %v, by byte %v", b, skip, got, want)
		}
	})
}
