package checkout_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// benchRepo writes the repository of the issue: 10,000 Deployments in
// 7,401 files (one file in three holds two) across 100 team directories,
// and the quickstart's policies.
func benchRepo(b *testing.B) string {
	root := b.TempDir()
	const files, deployments = 7401, 10000
	for i := range files {
		body := kubeenv.Deployment(fmt.Sprintf("llm-%d", i))
		if j := files + i; j < deployments {
			body += "---\n" + kubeenv.Deployment(fmt.Sprintf("llm-%d", j))
		}
		p := filepath.Join(root, fmt.Sprintf("team-%02d", i%100), "apps", fmt.Sprintf("app-%d.yaml", i))
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, []byte(body), 0o644))
	}
	starter, err := os.ReadFile("../../examples/quickstart/policies/kai-gpu-sharing.yaml")
	require.NoError(b, err)
	require.NoError(b, os.MkdirAll(filepath.Join(root, "policies"), 0o755))
	require.NoError(b, os.WriteFile(filepath.Join(root, "policies", "kai-gpu-sharing.yaml"), starter, 0o644))
	return root
}

// BenchmarkReadRepository compares reading a repository for a run with
// the least any reader does: walk, read and parse every YAML file with
// kyaml. "reader" is one checkout.Read feeding policy.LoadFiles and
// patcher.DiscoverFiles; "wrappers" is policy.Load then patcher.Discover,
// each reading the checkout.
func BenchmarkReadRepository(b *testing.B) {
	root := benchRepo(b)
	ctx := context.Background()
	b.Run("kyaml", func(b *testing.B) {
		for b.Loop() {
			docs := 0
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" {
					return err
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				dec := yaml.NewDecoder(bytes.NewReader(data))
				for {
					var n yaml.Node
					if err := dec.Decode(&n); errors.Is(err, io.EOF) {
						return nil
					} else if err != nil {
						return err
					}
					docs++
				}
			})
			if err != nil || docs != 10000+3 {
				b.Fatal(err, docs)
			}
		}
	})
	check := func(b *testing.B, set *policy.Set, inv *patcher.Inventory) {
		if len(set.Strategies) != 1 || len(set.Errors) > 0 || len(inv.Workloads) != 10000 || len(inv.Problems) > 0 {
			b.Fatal(len(set.Strategies), set.Errors, len(inv.Workloads), inv.Problems)
		}
	}
	b.Run("reader", func(b *testing.B) {
		for b.Loop() {
			d, err := checkout.OpenDir(root)
			if err != nil {
				b.Fatal(err)
			}
			files, err := checkout.Read(ctx, d, checkout.Options{})
			if err != nil {
				b.Fatal(err)
			}
			set, err := policy.LoadFiles(files)
			if err != nil {
				b.Fatal(err)
			}
			inv, err := patcher.DiscoverFiles(ctx, files)
			if err != nil {
				b.Fatal(err)
			}
			d.Close()
			check(b, set, inv)
		}
	})
	b.Run("wrappers", func(b *testing.B) {
		for b.Loop() {
			set, err := policy.Load(ctx, root)
			if err != nil {
				b.Fatal(err)
			}
			inv, err := patcher.Discover(ctx, root)
			if err != nil {
				b.Fatal(err)
			}
			check(b, set, inv)
		}
	})
}
