package changes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
)

// BenchmarkWriteFiles is plan --write on 1,000 changed files in 50
// directories: all at once (WriteFiles), against one file at a time
// (WriteFile, each with its own fsync), as plan --write did before.
func BenchmarkWriteFiles(b *testing.B) {
	const n = 1000
	setup := func(b *testing.B) (string, []changes.File) {
		root := b.TempDir()
		files := make([]changes.File, n)
		for i := range files {
			p := fmt.Sprintf("team-%02d/app-%04d.yaml", i%50, i)
			files[i] = changes.File{Path: p, Old: []byte("gpu: 0.5\n"), New: []byte("gpu: 0.25\n")}
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, p), files[i].Old, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		return root, files
	}
	b.Run("all-at-once", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			root, files := setup(b)
			b.StartTimer()
			for _, err := range changes.WriteFiles(root, files) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			root, files := setup(b)
			b.StartTimer()
			for _, f := range files {
				if err := changes.WriteFile(root, f); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
