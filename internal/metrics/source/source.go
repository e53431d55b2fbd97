// Package source is where a command reads usage from, as its flags name
// it. That is a recording (--metrics-file) or a server with Prometheus'
// HTTP API (--prometheus-url), read through a preset of series, at an
// evaluation time. plan, run and report share these flags. This package
// registers and checks them, and opens the source they name. It also
// makes the plan of a checkout with it: govern first, so that a
// recording keeps only the series the queries read, then evaluate.
package source

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"slices"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/neighbours"
	"github.com/gpu-rightsizing/recommender/internal/placement"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Options say where usage comes from and when a plan is made.
type Options struct {
	MetricsFile string
	// Prometheus is the server to read usage from, when URL is set;
	// exactly one of it and MetricsFile is.
	Prometheus prometheus.Config
	// Preset names the exporter whose series policies read by default.
	Preset preset.Preset
	At     time.Time // zero: the newest recorded sample, or now
	// Progress counts the queries for a person at a terminal; nil: none
	// shown.
	Progress Progress
	// ClusterLabel reads the series of one cluster alone
	// (`--cluster-label`), from a recording or a server.
	ClusterLabel plan.ClusterLabel
	// WholeStore reads a store of the one cluster `--cluster` names
	// whole (`--whole-store`).
	WholeStore bool
}

// Progress is a counter of a stage's steps, drawn for a person watching.
type Progress interface {
	// Start begins a stage of total steps (0: unknown).
	Start(label string, total int)
	// Step counts one step of the stage.
	Step()
	// Clear ends the stage, its line erased.
	Clear()
}

// open opens the usage source and settles the evaluation time. name says
// where usage comes from, for a pull request's body. A recording keeps
// only the series that queries read, and with `--at` only their window,
// unless queries is nil.
func (o *Options) open(log *slog.Logger, now func() time.Time, queries []usage.Query) (src plan.UsageSource, at time.Time, name string, err error) {
	if o.Prometheus.URL != "" {
		cfg := o.Prometheus
		cfg.Logger = log
		prom, err := prometheus.New(cfg)
		if err != nil {
			return nil, time.Time{}, "", err
		}
		src, at, name = prom, o.At, "Prometheus"
		if at.IsZero() {
			at = now().UTC()
		}
	} else {
		rec, err := openmetrics.OpenRecorded(o.MetricsFile, o.keep(queries)...)
		if err != nil {
			return nil, time.Time{}, "", err
		}
		if at, err = evaluationTime(o.At, rec.Span(), log, now); err != nil {
			return nil, time.Time{}, "", err
		}
		src, name = rec, "the recording "+filepath.Base(o.MetricsFile)
	}
	if o.Preset != "" {
		src = preset.Wrap(src, o.Preset)
	}
	return src, at, name, nil
}

// Series is where a report reads series of its own: kube-state-metrics'
// for the placement without cluster access, and HAMi's per-device ones
// for the noisy neighbours; from the server, or the recording.
func (o *Options) Series(log *slog.Logger) (placement.Series, error) {
	return o.SeriesOf(log, o.ClusterLabel)
}

// SeriesOf is Series of the one cluster whose series carry the label
// l (no label: the whole store).
func (o *Options) SeriesOf(log *slog.Logger, l plan.ClusterLabel) (placement.Series, error) {
	if o.Prometheus.URL != "" {
		cfg := o.Prometheus
		cfg.Logger = log
		if l.Name != "" {
			cfg.Matcher = &prometheus.LabelMatcher{Name: l.Name, Value: l.Value}
		}
		return prometheus.New(cfg)
	}
	rec, err := openmetrics.OpenRecorded(o.MetricsFile, openmetrics.KeepMetrics(append(placement.SeriesMetrics(), neighbours.HAMiMetrics()...)...))
	if err != nil {
		return nil, err
	}
	ss := rec.Series()
	if l.Name != "" {
		ss = slices.DeleteFunc(slices.Clone(ss), func(s metrics.Series) bool { return metrics.LabelValue(s.Labels, l.Name) != l.Value })
	}
	return placement.Fixed(ss), nil
}

// keep says what of a recording answering queries needs: their metrics,
// through the preset, and with `--at` the window of the longest lookback
// before it. A nil queries keeps everything.
func (o *Options) keep(queries []usage.Query) []openmetrics.Option {
	if queries == nil {
		return nil
	}
	opts := []openmetrics.Option{openmetrics.KeepMetrics(o.Preset.MetricsOf(queries)...)}
	if !o.At.IsZero() {
		var longest time.Duration
		for _, q := range queries {
			longest = max(longest, q.Lookback)
		}
		opts = append(opts, openmetrics.KeepWindow(o.At.Add(-longest), o.At))
	}
	return opts
}

// Plan makes the plan of the checkout opts names with usage from o:
// govern first, so that a recording is opened with only the series the
// queries read, then evaluate. name says where usage came from, for a
// pull request's body.
func (o *Options) Plan(ctx context.Context, opts plan.Options, log *slog.Logger, now func() time.Time) (p *plan.Plan, name string, err error) {
	opts.Logger = log
	opts.ClusterLabel, opts.WholeStore = o.ClusterLabel, o.WholeStore
	defer o.clear()
	o.start("reading the repository", 0)
	p, err = plan.Govern(ctx, opts)
	var oe *plan.OptionsError
	if errors.As(err, &oe) {
		return nil, "", config.FlagErrorf("%s", oe.Msg)
	}
	if err != nil {
		return nil, "", err
	}
	var qs []usage.Query
	if o.MetricsFile != "" {
		qs = p.Queries
		if qs == nil {
			qs = []usage.Query{}
		}
	}
	src, at, name, err := o.open(log, now, qs)
	if err != nil {
		return nil, "", err
	}
	restore := func() {}
	if o.MetricsFile != "" {
		restore = collectOften()
	}
	err = p.Use(ctx, o.counted(src, len(p.Queries)), at)
	restore()
	if err != nil {
		return nil, "", err
	}
	// The recording is garbage from here; the edits and their proofs run
	// at the GC percent the process had, not at a tenth of a heap that
	// no longer holds it.
	o.start("editing the manifests", 0)
	if err := p.Preview(ctx); err != nil {
		return nil, "", err
	}
	return p, name, nil
}

// evaluationTime is the time a plan is made at: at, which must fall where
// the recording has samples, or the end of the recording. A time far from
// every sample would turn each workload into "no data, no change" without
// a word, so it is a usage mistake that names the span.
func evaluationTime(at time.Time, sp openmetrics.Span, log *slog.Logger, now func() time.Time) (time.Time, error) {
	if sp.Newest.IsZero() {
		// No samples: nothing to check against, and nothing to decide on.
		if at.IsZero() {
			return now(), nil
		}
		return at, nil
	}
	if sp.Stragglers > 0 {
		log.Warn("ignoring samples far after the rest of the recording: a clock was wrong when they were taken",
			"samples", sp.Stragglers, "newest", sp.Straggler.Format(time.RFC3339), "line", sp.Line,
			"recording", sp.String())
	}
	if at.IsZero() {
		return sp.Newest, nil
	}
	if at.Before(sp.Oldest) || at.After(sp.Newest.Add(openmetrics.EvalAfter)) {
		return time.Time{}, config.FlagErrorf("`--at` %s is outside the recording: its samples run from %s, and an evaluation time must fall within them or up to a day after",
			at.Format(time.RFC3339), sp)
	}
	return at, nil
}

func (o *Options) start(label string, total int) {
	if o.Progress != nil {
		o.Progress.Start(label, total)
	}
}

func (o *Options) clear() {
	if o.Progress != nil {
		o.Progress.Clear()
	}
}

// counted counts the usage queries src answers, total of them in all.
func (o *Options) counted(src plan.UsageSource, total int) plan.UsageSource {
	if o.Progress == nil {
		return src
	}
	o.Progress.Start("querying usage", total)
	return countedSource{p: o.Progress, src: src}
}

type countedSource struct {
	p   Progress
	src plan.UsageSource
}

var _ plan.UsageSource = countedSource{}

func (s countedSource) Usage(ctx context.Context, q usage.Query) (usage.Result, error) {
	defer s.p.Step()
	return s.src.Usage(ctx, q)
}

// heldGCPercent is the least GC percent while a recording is held: a
// tenth of the live heap, which a large recording's samples are, is room
// enough for the garbage of an evaluation.
const heldGCPercent = 10

// heldGarbage is the garbage a collection may wait for while a recording
// is held, when a tenth of the live heap is less. A plan of 10,000
// workloads held 90 MiB of them and a small recording: at a tenth, it
// marked that heap eight times while deciding, a tenth of the plan's CPU.
const heldGarbage = 48 << 20

// heldPercent is the GC percent for a live heap of live bytes: room for
// a tenth of it, or heldGarbage when that is more; the default 100 at
// most.
func heldPercent(live uint64) int {
	if live == 0 {
		return heldGCPercent
	}
	return int(min(100, max(heldGCPercent, heldGarbage*100/live)))
}

// collectOften lowers the GC percent to heldPercent while a plan reads
// and decides on its recording, and returns what restores it. The recording's samples
// live until the plan is made, and at the default of 100 the garbage
// beside them could grow as large as they before a collection: a week
// of 1,000 pods ran at 1.6 times its samples. Its samples hold no
// pointers, so a collection costs little more for them. A lower setting
// (GOGC=off included) is left as it is.
//
// Restoring also collects, unless collections are off: the recording is
// garbage by then, and the next collection's goal would otherwise be
// twice a heap that held it. At 10,000 changes the edits grew the heap
// to 343 MiB before one, holding 121 MiB.
func collectOften() (restore func()) {
	p := heldPercent(liveHeap())
	old := debug.SetGCPercent(p)
	if old < p {
		debug.SetGCPercent(old)
	}
	return func() {
		debug.SetGCPercent(old)
		if old >= 0 {
			runtime.GC()
		}
	}
}

// liveHeap is the heap the last collection found live, 0 when unknown.
func liveHeap() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
