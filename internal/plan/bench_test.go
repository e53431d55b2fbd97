package plan_test

import (
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// BenchmarkMakeQuickstart is a whole plan of the quickstart repository, the
// recorded metrics already parsed: policies, discovery, one usage query,
// seven decisions and four verified edits.
func BenchmarkMakeQuickstart(b *testing.B) {
	src := recorded(b)
	b.ReportAllocs()
	for b.Loop() {
		p, err := plan.Make(b.Context(), plan.Options{Repo: repo, At: at, Source: src})
		if err != nil || len(p.Files) != 4 {
			b.Fatal(err)
		}
	}
}
