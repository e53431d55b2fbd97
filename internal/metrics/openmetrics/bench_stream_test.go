package openmetrics_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
)

// The recording the streaming benchmarks read: 1,000 Deployments of two
// pods, each pod with the two series a plan reads, one it does not (power)
// and its kube-state-metrics series, a sample a minute for 144 minutes,
// written series after series as promtool's dump writes: about 190 MB.
const (
	streamWorkloads = 1000
	streamPods      = 2
	streamSamples   = 144
)

// writeStreamRecording writes the recording to a file in dir.
func writeStreamRecording(b *testing.B, dir string) string {
	path := filepath.Join(dir, "stream.om")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	each := func(series string, value func(i int) int) {
		for i := range streamSamples {
			line = append(line[:0], series...)
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(value(i)), 10)
			line = append(line, ' ')
			line = strconv.AppendInt(line, metricstest.T0.Unix()+int64(i)*60, 10)
			line = append(line, '\n')
			w.Write(line)
		}
	}
	one := func(int) int { return 1 }
	for d := range streamWorkloads {
		name := fmt.Sprintf("llm-%04d", d)
		rs := name + "-7d9f8c6b5d"
		each(metricstest.ReplicaSetOwner("serving", rs, "Deployment", name), one)
		for p := range streamPods {
			pod := fmt.Sprintf("%s-x2b%02d", rs, p+20)
			each(metricstest.PodOwner("serving", pod, "ReplicaSet", rs), one)
			each(metricstest.Series("kube_pod_start_time", "namespace", "serving", "pod", pod), func(int) int { return 1699990000 })
			each(metricstest.UsageOf(metricstest.SM, "serving", pod, "server"), func(i int) int { return (i*7 + d) % 100 })
			each(metricstest.UsageOf(metricstest.Mem, "serving", pod, "server"), func(i int) int { return 40 + (i+p)%13 })
			each(metricstest.UsageOf("kubex_gpu_container_power_watts", "serving", pod, "server"), func(i int) int { return 200 + i%50 })
		}
	}
	w.WriteString("# EOF\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// peakHeap samples the bytes of live heap objects every millisecond while
// it runs, without stopping the world as runtime.ReadMemStats would.
type peakHeap struct {
	stop chan struct{}
	wg   sync.WaitGroup
	peak uint64
}

func startPeakHeap() *peakHeap {
	p := &peakHeap{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			p.peak = max(p.peak, s[0].Value.Uint64())
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *peakHeap) Stop() uint64 {
	close(p.stop)
	p.wg.Wait()
	return p.peak
}

// benchOpen runs open b.N times and reports, besides time and B/op, the
// peak of live heap bytes during an open, the heap kept by its result,
// and the memory the runtime took from the system.
func benchOpen(b *testing.B, path string, open func() (any, error)) {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	var peak, kept uint64
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		ph := startPeakHeap()
		c0 := cpuTime(b)
		b.StartTimer()
		r, err := open()
		b.StopTimer()
		cpu += cpuTime(b) - c0
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, ph.Stop()-min(ph.peak, base.HeapAlloc))
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if after.HeapAlloc > base.HeapAlloc {
			kept = after.HeapAlloc - base.HeapAlloc
		}
		runtime.KeepAlive(r)
		b.StartTimer()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// CPU time is steadier than wall time on a shared machine.
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(kept)/(1<<20), "kept-MiB")
	b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB")
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareParse is the floor: a streaming read that splits lines and parses
// each one's value and timestamp, keeping nothing.
func bareParse(path string) (any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var sum float64
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		ts := bytes.LastIndexByte(line, ' ')
		vs := bytes.LastIndexByte(line[:ts], ' ')
		v, err := strconv.ParseFloat(string(line[vs+1:ts]), 64)
		if err != nil {
			return nil, err
		}
		t, err := strconv.ParseFloat(string(line[ts+1:]), 64)
		if err != nil {
			return nil, err
		}
		sum += v + t
	}
	return sum, sc.Err()
}

// BenchmarkOpenRecordedStream opens a recording of about 190 MB: whole
// (what the backtest needs), and as the bare streaming parse that is the
// floor; benchKeep adds what plan and run keep. (The cases are apart so
// that this file also runs on the commit before KeepMetrics, for the
// whole-file parse it replaced.)
func BenchmarkOpenRecordedStream(b *testing.B) {
	path := writeStreamRecording(b, b.TempDir())
	b.Run("all", func(b *testing.B) {
		benchOpen(b, path, func() (any, error) { return openmetrics.OpenRecorded(path) })
	})
	b.Run("bare", func(b *testing.B) {
		benchOpen(b, path, func() (any, error) { return bareParse(path) })
	})
	benchKeep(b, path)
}
