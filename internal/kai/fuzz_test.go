package kai_test

import (
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// FuzzParseFraction: an annotation's text is the repository's. A fraction
// read is strictly between 0 and 1, and written on KAI's grid it reads
// back to the same step.
func FuzzParseFraction(f *testing.F) {
	for _, s := range []string{"0.5", ".25", "0.999", "1", "0", "-0.1", "1e-1", "0x1p-1", " 0.3", "0.3\n", "NaN", "0.", "00.10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := kai.ParseFraction(s)
		if err != nil {
			return
		}
		if !(v > 0 && v < 1) {
			t.Fatalf("%q read as %v", s, v)
		}
		w, err := kai.ParseFraction(kai.FormatFraction(kai.CeilFraction(v)))
		if kai.CeilFraction(v) < 1 && (err != nil || !kai.Same(w, kai.CeilFraction(v))) {
			t.Fatalf("%q: %v, written %q, read %v (%v)", s, v, kai.FormatFraction(kai.CeilFraction(v)), w, err)
		}
	})
}
