package changes_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// BenchmarkDiff: the diff of one file of n Deployments, each with its
// gpu-fraction and vLLM's memory flag changed, as File.Diff writes it and
// as go-difflib wrote it before (the same text), at 100 and 1,000
// Deployments for the growth. At 1,000 (about 50,000 lines, 2,000
// changed) go-difflib took 2.3 s of the 3.4 s of a plan.
func BenchmarkDiff(b *testing.B) {
	for _, n := range []int{100, 1000} {
		f := editedDeployments(n)
		b.Run(fmt.Sprintf("deployments=%d/ours", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = f.Diff()
			}
		})
		b.Run(fmt.Sprintf("deployments=%d/go-difflib", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = difflibDiff(b, f)
			}
		})
	}
}

// editedDeployments is one file of n Deployments before and after the
// edits a plan makes to each.
func editedDeployments(n int) changes.File {
	var old, new strings.Builder
	for i := range n {
		d := kubeenv.Deployment(fmt.Sprintf("llm-%d", i))
		old.WriteString("---\n" + d)
		d = strings.Replace(d, `gpu-fraction: "0.5"`, `gpu-fraction: "0.72"`, 1)
		new.WriteString("---\n" + strings.Replace(d, `- "0.45"`, `- "0.64"`, 1))
	}
	return changes.File{Path: "deployments.yaml", Old: []byte(old.String()), New: []byte(new.String())}
}
