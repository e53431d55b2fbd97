package plan_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
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

// BenchmarkValidate is `policy validate` on a repository of n Deployments
// a file each, selected by the quickstart's policies: reading, discovery,
// governing and the summary of which workloads each policy selects, at
// 1,000 and 10,000, so that time per workload at both sizes shows
// whether any part grows faster than the repository.
func BenchmarkValidate(b *testing.B) {
	pol, err := os.ReadFile(filepath.Join(repo, "policies", "kai-gpu-sharing.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1000, 10000} {
		dir := b.TempDir()
		write := func(rel, data string) {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		write("policies/kai-gpu-sharing.yaml", string(pol))
		for i := range n {
			name := fmt.Sprintf("d%05d", i)
			write(filepath.Join("apps", name, "deployment.yaml"), strings.Replace(kubeenv.Deployment(name),
				"    kai.scheduler/queue: serving\n", "    kai.scheduler/queue: serving\n    nvidia.com/gpu.present: \"true\"\n", 1))
		}
		b.Run(fmt.Sprintf("deployments=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v, err := plan.Validate(b.Context(), plan.Options{Repo: dir, At: at})
				if err != nil || len(v.Workloads) != n {
					b.Fatalf("%d workloads, want %d (%v)", len(v.Workloads), n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/workload")
		})
	}
}
