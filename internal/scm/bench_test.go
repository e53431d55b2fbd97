package scm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// BenchmarkCommit is one change set's commit on a checkout of a
// repository of many files, as a run makes one per branch: its cost
// should not grow with the files the commit does not touch.
func BenchmarkCommit(b *testing.B) {
	for _, files := range []int{100, 2000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			srv := testenv.NewGitServer(b)
			tree := map[string]string{}
			for i := range files {
				tree[fmt.Sprintf("apps/team-%02d/app-%04d/deployment.yaml", i%50, i)] = fmt.Sprintf("name: app-%d\ngpu: 0.5\n", i)
			}
			url := srv.NewRepo(b, "acme/gitops", tree)
			r, err := scm.Clone(context.Background(), url, "main", filepath.Join(b.TempDir(), "clone"), scm.Auth{Token: srv.Token})
			if err != nil {
				b.Fatal(err)
			}
			change := []scm.File{{Path: "apps/team-07/app-0007/deployment.yaml", Data: []byte("name: app-7\ngpu: 0.25\n")}}
			b.ResetTimer()
			for i := range b.N {
				if _, err := r.Commit(change, fmt.Sprintf("change %d", i), who, time.Unix(1_800_000_000, 0)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLocalOpen: a run's Find and Open of one change set against a
// Local that already holds n records. Each costs the records of its
// branch, not all n: ns/op stays flat as n grows.
func BenchmarkLocalOpen(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{500, 2000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			// The records, as earlier runs left them, read once.
			dir := b.TempDir()
			for i := 1; i <= n; i++ {
				rec := fmt.Sprintf(`{"number":%d,"state":"closed","branch":"gpu-rightsizing/w%05d","base":"main","title":"t","body":"b"}`, i, i)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d.json", i)), []byte(rec), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			l, err := scm.NewLocal(dir)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.All(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				branch := fmt.Sprintf("gpu-rightsizing/new%06d", i)
				if _, err := l.Find(ctx, branch); err != nil {
					b.Fatal(err)
				}
				if _, err := l.Open(ctx, scm.NewPullRequest{Branch: branch, Base: "main", Title: "t", Body: "b"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
