package splice

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// setScalar is a step that sets the scalar at path to value.
func setScalar(value string, path ...string) Step {
	return Step{Name: "set " + strings.Join(path, "."), Run: func(d *Doc) error {
		_, err := d.ReplaceScalar(Lookup(d.Root, path...), value, strings.Join(path, "."), ScalarOpts{})
		return err
	}}
}

// copyName sets the container's image to the document's name as the
// step finds it: it reads what an earlier step may have changed.
var copyName = Step{Name: "copy the name", Run: func(d *Doc) error {
	name := Lookup(d.Root, "metadata", "name").Value
	_, err := d.ReplaceScalar(Lookup(d.Root, "spec", "template", "spec", "containers").Content[0].Content[3], name, "image", ScalarOpts{})
	return err
}}

// batch runs steps by document on a batch File of src, and Finish.
func batch(t *testing.T, src string, steps map[int][]Step) (*File, *Stream, error) {
	t.Helper()
	s, err := Parse([]byte(src))
	require.NoError(t, err)
	f, err := NewParsedFile("d.yaml", []byte(src), s)
	require.NoError(t, err)
	require.True(t, f.Batch())
	for idx := range len(s.Docs) {
		if len(steps[idx]) > 0 {
			if _, _, err := f.EditDoc(idx, steps[idx]); err != nil {
				return f, s, err
			}
		}
	}
	return f, s, f.Finish()
}

// A batch gives the bytes the steps give one by one, from the parse it is
// handed, which it leaves as it was.
func TestBatchAsStepByStep(t *testing.T) {
	steps := map[int][]Step{
		0: {setScalar("y", "spec", "template", "spec", "containers", "0", "image"), setScalar("renamed", "metadata", "name")},
		1: {setScalar("z", "metadata", "name")},
	}
	seq, err := Edit("d.yaml", []byte(twoDocs), func(f *File) {
		for idx := range 2 {
			_, _, err := f.EditDoc(idx, steps[idx])
			require.NoError(t, err)
		}
	})
	require.NoError(t, err)
	want, changed := seq.Result()
	require.True(t, changed)

	f, s, err := batch(t, twoDocs, steps)
	require.NoError(t, err)
	got, changed := f.Result()
	require.True(t, changed)
	require.Equal(t, string(want), string(got))
	require.Equal(t, seq.Splices(), f.Splices())
	require.Equal(t, "a", s.Docs[0].Content[0].Content[5].Content[1].Value, "the parse handed in is not changed")

	// The same parse serves another batch.
	f, _, err = batch(t, twoDocs, map[int][]Step{1: {setScalar("w", "metadata", "name")}})
	require.NoError(t, err)
	got, _ = f.Result()
	require.Equal(t, strings.Replace(twoDocs, "name: b", "name: w", 1), string(got))
}

// Finish refuses a batch whose result is not proven, and leaves the text
// as it was: a step that read what an earlier one changed (only the
// expected tree had it), a result that no longer parses to the expected
// documents, a lost comment, steps whose splices overlap.
func TestBatchRefused(t *testing.T) {
	withComment := strings.Replace(twoDocs, "  name: a\n", "  name: a # keep me\n", 1)
	for _, tc := range []struct {
		name, src string
		steps     map[int][]Step
	}{
		{name: "a step reads an earlier one", src: twoDocs,
			steps: map[int][]Step{0: {setScalar("renamed", "metadata", "name"), copyName}}},
		{name: "the file no longer parses to the documents", src: twoDocs,
			steps: map[int][]Step{0: {{Name: "dropFinalBreak", Run: dropFinalBreak}}}},
		{name: "a lost comment", src: withComment,
			steps: map[int][]Step{0: {{Name: "drop the comment", Run: func(d *Doc) error {
				at := strings.Index(string(d.t.b), " # keep me")
				d.splices = append(d.splices, splice{off: at, end: at + len(" # keep me")})
				return nil
			}}}}},
		{name: "overlapping splices", src: twoDocs,
			steps: map[int][]Step{1: {setScalar("x", "metadata", "name"), setScalar("y", "metadata", "name")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := batch(t, tc.src, tc.steps)
			require.ErrorIs(t, err, ErrVerify)
			got, changed := f.Result()
			require.False(t, changed)
			require.Equal(t, tc.src, string(got))

			// Step by step, each step is proven on its own: what is
			// wrong is refused, with what the batch could not tell.
			_, err = Edit("d.yaml", []byte(tc.src), func(f *File) {
				for idx := range 2 {
					_, _, _ = f.EditDoc(idx, tc.steps[idx])
				}
			})
			require.NoError(t, err)
		})
	}

	// Step by step, the copy reads the new name.
	seq, err := Edit("d.yaml", []byte(twoDocs), func(f *File) {
		_, _, err := f.EditDoc(0, []Step{setScalar("renamed", "metadata", "name"), copyName})
		require.NoError(t, err)
	})
	require.NoError(t, err)
	got, _ := seq.Result()
	require.Contains(t, string(got), "image: renamed")
}

// A step that fails spoils the batch: Finish refuses it with that error.
func TestBatchSpoiledByAFailingStep(t *testing.T) {
	f, _, err := batch(t, twoDocs, map[int][]Step{0: {setScalar("y", "metadata", "name"), {Name: "fail", Run: func(d *Doc) error {
		return d.Fail(d.Root, "x", ErrUnsupported)
	}}}})
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorIs(t, f.Finish(), ErrUnsupported)
	_, changed := f.Result()
	require.False(t, changed)
}
