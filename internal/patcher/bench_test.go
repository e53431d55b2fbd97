package patcher_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

func benchService(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %[1]s
  namespace: serving
spec:
  selector:
    app: %[1]s
  ports:
    - name: http
      port: 80
      targetPort: http
`, name)
}

func BenchmarkApply(b *testing.B) {
	var docs []string
	for i := 0; len(strings.Split(strings.Join(docs, "---\n"), "\n")) < 300; i++ {
		docs = append(docs, benchService(fmt.Sprintf("llm-%d", i)), kubeenv.Deployment(fmt.Sprintf("llm-%d", i)))
	}
	src := strings.Join(docs, "---\n")
	root := b.TempDir()
	require.NoError(b, os.WriteFile(filepath.Join(root, "apps.yaml"), []byte(src), 0o644))
	ctx := context.Background()
	inv, err := patcher.Discover(ctx, root)
	require.NoError(b, err)
	target := inv.Workloads[len(inv.Workloads)/2].Ref
	edits := []patcher.Edit{{Workload: target, Ops: []workload.Op{
		patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33"),
	}}}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		res, err := patcher.Apply(ctx, root, inv, edits)
		if err != nil || len(res.Files) != 1 {
			b.Fatal(err, res.Refused)
		}
	}
	b.ReportMetric(float64(strings.Count(src, "\n")), "lines")
}

func BenchmarkDiscover(b *testing.B) {
	root := b.TempDir()
	for i := range 200 {
		body := kubeenv.Deployment(fmt.Sprintf("llm-%d", i))
		if i%2 == 0 {
			body = benchService(fmt.Sprintf("llm-%d", i)) + "---\n" + body
		}
		p := filepath.Join(root, fmt.Sprintf("team-%d", i%10), fmt.Sprintf("app-%d.yaml", i))
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, []byte(body), 0o644))
	}
	ctx := context.Background()
	for b.Loop() {
		inv, err := patcher.Discover(ctx, root)
		if err != nil || len(inv.Workloads) != 200 {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyManyDocuments edits every Deployment of one large
// multi-document file (n Deployments and their Services), four ops each:
// the cost of verification must grow with the edited document, not with
// the file, so the time per Deployment stays flat as n grows.
func BenchmarkApplyManyDocuments(b *testing.B) {
	for _, n := range []int{100, 300, 600} {
		b.Run(fmt.Sprintf("deployments=%d", n), func(b *testing.B) {
			var docs []string
			for i := range n {
				docs = append(docs, benchService(fmt.Sprintf("llm-%d", i)), kubeenv.Deployment(fmt.Sprintf("llm-%d", i)))
			}
			src := strings.Join(docs, "---\n")
			root := b.TempDir()
			require.NoError(b, os.WriteFile(filepath.Join(root, "apps.yaml"), []byte(src), 0o644))
			ctx := context.Background()
			inv, err := patcher.Discover(ctx, root)
			require.NoError(b, err)
			var edits []patcher.Edit
			for _, w := range inv.Workloads {
				edits = append(edits, patcher.Edit{Workload: w.Ref, Ops: []workload.Op{
					patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33"),
					patcher.SetSchedulerName("kai-scheduler"), patcher.SetPodLabel("kai.scheduler/queue", "default-queue"),
				}})
			}
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				res, err := patcher.Apply(ctx, root, inv, edits)
				if err != nil || len(res.Files) != 1 || len(res.Refused) > 0 {
					b.Fatal(err, res.Refused)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/deployment")
		})
	}
}

// BenchmarkApplyChangeSets is what a run does: one Apply a change set,
// here one edit each, against the inventory of a repository of n
// Deployments, one a file. Finding a change set's workloads costs its
// edits, not the inventory: ns/op stays flat as n grows.
func BenchmarkApplyChangeSets(b *testing.B) {
	for _, n := range []int{500, 2000, 10000} {
		b.Run(fmt.Sprintf("deployments=%d", n), func(b *testing.B) {
			root := b.TempDir()
			for i := range n {
				p := filepath.Join(root, "apps", fmt.Sprintf("d%05d.yaml", i))
				require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(b, os.WriteFile(p, []byte(kubeenv.Deployment(fmt.Sprintf("d%05d", i))), 0o644))
			}
			ctx := context.Background()
			inv, err := patcher.Discover(ctx, root)
			require.NoError(b, err)
			require.Len(b, inv.Workloads, n)
			ops := []workload.Op{patcher.SetGPUFraction("0.37")}
			i := 0
			for b.Loop() {
				w := inv.Workloads[i%n]
				i++
				res, err := patcher.Apply(ctx, root, inv, []patcher.Edit{{Workload: w.Ref, File: w.File, Ops: ops}})
				if err != nil || len(res.Files) != 1 {
					b.Fatal(err, res.Refused)
				}
			}
		})
	}
}
