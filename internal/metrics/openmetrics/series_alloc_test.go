package openmetrics_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
)

// TestParseAllocatesEachSeriesOnce: reading a recording of many series
// allocates for each what it holds, not again and again as the series
// are collected. Grown as one slice, the series were copied on every
// growth: three times their size in all, a tenth of reading a recording
// of 10,000 Deployments.
func TestParseAllocatesEachSeriesOnce(t *testing.T) {
	const n = 20000
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "kube_pod_owner{namespace=\"serving\",pod=\"p%05d\"} 1 %d\n", i, 1700000000)
	}
	b.WriteString("# EOF\n")
	rec := b.Bytes()
	parse := func() {
		// Samples of another metric are not kept: what is left is the
		// series themselves.
		if _, err := openmetrics.ParseRecorded(bytes.NewReader(rec), "many.om", openmetrics.KeepMetrics("other")); err != nil {
			t.Fatal(err)
		}
	}
	parse()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	parse()
	runtime.ReadMemStats(&after)
	// Each series keeps its labels, interned values and entries in three
	// maps: about 1,150 bytes. Copies of a growing slice added 500 more.
	perSeries := float64(after.TotalAlloc-before.TotalAlloc) / n
	if perSeries > 1400 {
		t.Errorf("reading %d series allocated %.0f bytes for each, want at most 1,400", n, perSeries)
	}
}
