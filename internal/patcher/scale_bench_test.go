package patcher_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// The scale benchmarks of the editor: a generated repository of 10,000
// Deployments, as plain files and as 100 overlays of 100 bases, through
// discovery and edits, next to a bare kyaml parse of the same files.
//
//	make bench-scale   # RECOMMENDER_BENCH_SCALE=1, several minutes
//
// ratio is the run's wall time over the bare parse's, cpu-ratio the same
// for CPU time (user + system, every thread); peak-heap-MiB the largest
// heap in use, sampled every millisecond. See measure.

const scaleN = 10000

// scaleRepo writes the plain repository: one Deployment per file.
func scaleRepo(b *testing.B) string {
	skipUnlessScale(b)
	root := b.TempDir()
	for i := range scaleN {
		p := filepath.Join(root, "apps", fmt.Sprintf("d%05d", i), "deployment.yaml")
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(b, os.WriteFile(p, []byte(kubeenv.Deployment(fmt.Sprintf("d%05d", i))), 0o644))
	}
	return root
}

// scaleOverlayRepo writes 100 bases of 100 Deployments each, and one
// overlay per base giving it a namespace.
func scaleOverlayRepo(b *testing.B) string {
	skipUnlessScale(b)
	root := b.TempDir()
	for o := range 100 {
		base := filepath.Join(root, "bases", fmt.Sprintf("b%03d", o))
		require.NoError(b, os.MkdirAll(base, 0o755))
		var k bytes.Buffer
		k.WriteString("resources:\n")
		for i := range scaleN / 100 {
			name := fmt.Sprintf("d%05d", o*100+i)
			require.NoError(b, os.WriteFile(filepath.Join(base, name+".yaml"), []byte(kubeenv.Deployment(name)), 0o644))
			fmt.Fprintf(&k, "  - %s.yaml\n", name)
		}
		require.NoError(b, os.WriteFile(filepath.Join(base, "kustomization.yaml"), k.Bytes(), 0o644))
		ov := filepath.Join(root, "overlays", fmt.Sprintf("o%03d", o))
		require.NoError(b, os.MkdirAll(ov, 0o755))
		require.NoError(b, os.WriteFile(filepath.Join(ov, "kustomization.yaml"),
			fmt.Appendf(nil, "namespace: ns-%03d\nresources:\n  - ../../bases/b%03d\n", o, o), 0o644))
	}
	return root
}

// skipUnlessScale keeps the two minutes these take out of make bench.
func skipUnlessScale(b *testing.B) {
	if os.Getenv("RECOMMENDER_BENCH_SCALE") == "" {
		b.Skip("set RECOMMENDER_BENCH_SCALE=1 (make bench-scale)")
	}
}

// bareParse reads every YAML file under root with kyaml, as the floor.
func bareParse(b *testing.B, root string) {
	n := 0
	require.NoError(b, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true, OmitReaderAnnotations: false}).Read()
		n += len(nodes)
		return err
	}))
	require.Positive(b, n)
}

// peakHeap samples the heap in use (runtime.MemStats.HeapInuse: live
// objects and the free space of their spans) every millisecond until stop
// is called. It reads runtime/metrics, which does not stop the world as
// runtime.ReadMemStats does.
func peakHeap() (stop func() uint64) {
	var peak uint64
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64()+sample[1].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak }
}

func BenchmarkScalePlain(b *testing.B) {
	root := scaleRepo(b)
	ctx := context.Background()
	run := func() {
		inv, err := patcher.Discover(ctx, root)
		require.NoError(b, err)
		require.Len(b, inv.Workloads, scaleN)
		edits := make([]patcher.Edit, len(inv.Workloads))
		for i, w := range inv.Workloads {
			edits[i] = patcher.Edit{Workload: w.Ref, File: w.File, Reason: "bench", Ops: []workload.Op{patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33")}}
		}
		res, err := patcher.Apply(ctx, root, inv, edits)
		require.NoError(b, err)
		require.Len(b, res.Files, scaleN)
	}
	b.ResetTimer()
	for range b.N {
		r := measure(b, root, run)
		b.ReportMetric(r.wall.Seconds()/r.bareWall.Seconds(), "ratio")
		b.ReportMetric(r.cpu.Seconds()/r.bareCPU.Seconds(), "cpu-ratio")
		b.ReportMetric(r.wall.Seconds(), "run-s")
		b.ReportMetric(r.bareWall.Seconds(), "bare-parse-s")
		b.ReportMetric(float64(r.peak)/(1<<20), "peak-heap-MiB")
	}
}

// rounds is how often measure runs the bare parse and the run, taking
// the fastest of each: on a shared machine one run alone says more about
// the neighbours than about the code.
const rounds = 3

// figures are what measure found: the fastest wall and CPU (user +
// system, every thread: GC included) times of the run and of the bare
// parse, and the largest heap in use during any run.
type figures struct {
	wall, cpu, bareWall, bareCPU time.Duration
	peak                         uint64
}

func measure(b *testing.B, root string, run func()) figures {
	f := figures{wall: time.Hour, cpu: time.Hour, bareWall: time.Hour, bareCPU: time.Hour}
	for range rounds {
		runtime.GC()
		c0, t0 := cpuTime(b), time.Now()
		bareParse(b, root)
		f.bareWall, f.bareCPU = min(f.bareWall, time.Since(t0)), min(f.bareCPU, cpuTime(b)-c0)

		runtime.GC()
		stop := peakHeap()
		c0, t0 = cpuTime(b), time.Now()
		run()
		f.wall, f.cpu = min(f.wall, time.Since(t0)), min(f.cpu, cpuTime(b)-c0)
		f.peak = max(f.peak, stop())
	}
	return f
}

// cpuTime is the process's user and system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScaleOverlays discovers the 100 overlays (each root built
// once, with origins) and edits one Deployment of each, the edits proven
// by building again the overlays that read their files.
func BenchmarkScaleOverlays(b *testing.B) {
	root := scaleOverlayRepo(b)
	ctx := context.Background()
	discovered := time.Hour
	run := func() {
		start := time.Now()
		inv, err := patcher.Discover(ctx, root)
		require.NoError(b, err)
		require.Len(b, inv.Workloads, scaleN)
		discovered = min(discovered, time.Since(start))
		var edits []patcher.Edit
		for i, w := range inv.Workloads {
			if i%100 == 0 {
				edits = append(edits, patcher.Edit{Workload: w.Ref, File: w.File, Reason: "bench", Ops: []workload.Op{patcher.SetGPUFraction("0.37")}})
			}
		}
		res, err := patcher.Apply(ctx, root, inv, edits)
		require.NoError(b, err)
		require.Empty(b, res.Refused)
		require.Len(b, res.Files, 100)
	}
	b.ResetTimer()
	for range b.N {
		r := measure(b, root, run)
		b.ReportMetric(discovered.Seconds()/r.bareWall.Seconds(), "discover-ratio")
		b.ReportMetric(r.wall.Seconds()/r.bareWall.Seconds(), "ratio")
		b.ReportMetric(r.cpu.Seconds()/r.bareCPU.Seconds(), "cpu-ratio")
		b.ReportMetric(r.wall.Seconds(), "run-s")
		b.ReportMetric(r.bareWall.Seconds(), "bare-parse-s")
		b.ReportMetric(float64(r.peak)/(1<<20), "peak-heap-MiB")
	}
}

// BenchmarkScaleTenAFile is the plain repository ten Deployments a file
// (1,000 files), through discovery and edits: one Deployment of each file
// asks for a GPU and is edited, the other nine ask for none (as the proof
// of an edit need not parse them); or all ten ask and are edited.
func BenchmarkScaleTenAFile(b *testing.B) {
	skipUnlessScale(b)
	for _, all := range []bool{false, true} {
		name := "edited=1-in-10"
		if all {
			name = "edited=all"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			for f := range scaleN / 10 {
				var buf bytes.Buffer
				for i := range 10 {
					if i > 0 {
						buf.WriteString("---\n")
					}
					d := kubeenv.Deployment(fmt.Sprintf("d%05d", f*10+i))
					if i > 0 && !all {
						d = strings.Replace(d, `gpu-fraction: "0.5" # last set by the bot`, `team: ml # no GPU`, 1)
					}
					buf.WriteString(d)
				}
				p := filepath.Join(root, "apps", fmt.Sprintf("f%04d", f), "deployment.yaml")
				require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(b, os.WriteFile(p, buf.Bytes(), 0o644))
			}
			want := scaleN / 10
			if all {
				want = scaleN
			}
			ctx := context.Background()
			run := func() {
				inv, err := patcher.Discover(ctx, root)
				require.NoError(b, err)
				var edits []patcher.Edit
				for _, w := range inv.Workloads {
					if w.GPU.FractionText != "" {
						edits = append(edits, patcher.Edit{Workload: w.Ref, File: w.File, Reason: "bench", Ops: []workload.Op{patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33")}})
					}
				}
				require.Len(b, edits, want)
				res, err := patcher.Apply(ctx, root, inv, edits)
				require.NoError(b, err)
				require.Empty(b, res.Refused)
				require.Len(b, res.Files, scaleN/10)
			}
			b.ResetTimer()
			for range b.N {
				r := measure(b, root, run)
				b.ReportMetric(r.wall.Seconds()/r.bareWall.Seconds(), "ratio")
				b.ReportMetric(r.cpu.Seconds()/r.bareCPU.Seconds(), "cpu-ratio")
				b.ReportMetric(r.wall.Seconds(), "run-s")
				b.ReportMetric(r.bareWall.Seconds(), "bare-parse-s")
				b.ReportMetric(float64(r.peak)/(1<<20), "peak-heap-MiB")
			}
		})
	}
}
