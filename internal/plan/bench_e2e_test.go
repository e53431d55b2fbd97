package plan_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// BenchmarkE2EClusterRequests is the clusters row of the end-to-end
// table: the Prometheus requests one plan makes over 1, 10 and 50
// clusters of one store, through TestRequestsDoNotGrowWithClusters'
// harness. It fails when they grow with the clusters. `make bench-e2e`
// runs it.
func BenchmarkE2EClusterRequests(b *testing.B) {
	testenv.SkipUnlessE2E(b)
	sizes := []int{1, 10, 50}
	requests := map[int]int{}
	for _, n := range sizes {
		// A sub-benchmark each, so that its Prometheus stops before the
		// next starts.
		b.Run(strconv.Itoa(n)+"-clusters", func(b *testing.B) {
			for b.Loop() {
				got := clusterRequests(b, n)
				if prev, ok := requests[n]; ok && prev != got {
					b.Fatalf("%d clusters: %d requests, then %d: the count should not vary", n, prev, got)
				}
				requests[n] = got
			}
			b.ReportMetric(float64(requests[n]), "requests/plan")
		})
	}
	var table strings.Builder
	table.WriteString("| clusters in one store | Prometheus requests per plan |\n|---:|---:|\n")
	for _, n := range sizes {
		fmt.Fprintf(&table, "| %d | %d |\n", n, requests[n])
	}
	for _, n := range sizes[1:] {
		if requests[n] != requests[sizes[0]] {
			b.Errorf("%d clusters make %d requests, 1 cluster %d: the requests grow with the clusters", n, requests[n], requests[sizes[0]])
		}
	}
	testenv.WriteSection(b, filepath.Join("..", "..", "docs", "benchmarks", "speed.md"), "clusters", table.String())
}
