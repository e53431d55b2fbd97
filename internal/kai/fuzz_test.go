package kai_test

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// webhookAccepts is KAI's admission check of a gpu-fraction annotation as
// its source writes it (KAI v0.17.0, pkg/binder/plugins/gpusharing/
// gpu-request/gpu_request_validator.go, validateGpuFractionAnnotation),
// with the same two parsers.
func webhookAccepts(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f >= 1 {
		return 0, false
	}
	if _, err := resource.ParseQuantity(s); err != nil {
		return 0, false
	}
	return f, true
}

// FuzzParseFraction holds ParseFraction to KAI's webhook: it accepts what
// the webhook accepts, with the same value. A fraction read, written on
// KAI's grid and within its bounds, reads back to the same step.
func FuzzParseFraction(f *testing.F) {
	for _, s := range []string{"0.5", ".25", "0.999", "1", "0", "-0.1", "1e-1", "5E-1", "+0.5", "0x1p-1", " 0.3", "0.3\n",
		"NaN", "0.", "00.10", "5e-1m", "0.5Ki", "1e+0", ".5e", "+-0.5", "0.5e+01", "inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := kai.ParseFraction(s)
		want, ok := webhookAccepts(s)
		if ok != (err == nil) || ok && v != want {
			t.Fatalf("ParseFraction(%q) = %v, %v; KAI's webhook: %v, %v", s, v, err, want, ok)
		}
		if err != nil {
			return
		}
		// What the tool writes is on the grid and within KAI's bounds.
		g := kai.ClampFraction(kai.CeilFraction(v))
		w, err := kai.ParseFraction(kai.FormatFraction(g))
		if err != nil || !kai.Same(w, g) {
			t.Fatalf("%q: %v, written %q, read %v (%v)", s, v, kai.FormatFraction(g), w, err)
		}
	})
}
