package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

type backtestOptions struct {
	IO     streams
	Logger *slog.Logger

	Traces      []string
	MetricsFile string // a recording, replayed for the GPU workloads of Repo
	Repo        string
	Policies    []string // NAME=PATH or PATH, each a strategy
	Start       float64
	Cadence     time.Duration
	MergeDelay  time.Duration
	OOMKill     bool          // a memory breach kills the container (HAMi-core)
	Restart     time.Duration // how long a killed container takes to restart
	OutDir      string
	Plot        []string // workloads to plot; empty: a few chosen
	MaxPeak     float64  // drop traces whose peak exceeds this percent of a GPU; 0 keeps all
}

func newCmdBacktest(io streams, logger func() (*slog.Logger, error), runF func(context.Context, *backtestOptions) error) *cobra.Command {
	opts := &backtestOptions{IO: io}
	var start string
	cmd := &cobra.Command{
		Use:   "backtest --traces FILE --policies PATH",
		Short: "Replay usage traces through the policies and the usual baselines, and score them",
		Long: "backtest replays recorded usage through the decision engine under each --policies, at the job's\n" +
			"cadence with changes landing after a merge delay, and through the baselines people use (static,\n" +
			"VPA as pull requests and in Auto mode, KRR's simple strategy, peak + 15 %, and an oracle that knows\n" +
			"the future). It scores each on relative slack,\n" +
			"breach-minutes and churn.",
		Example: "  recommender backtest --traces ../shared/traces/usage.csv --policies kubex-guide=examples/quickstart/policies --out backtest",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(opts.Traces) == 0 && opts.MetricsFile == "" {
				return flagErrorf("`--traces` or `--metrics-file` is required")
			}
			if (opts.MetricsFile == "") != (opts.Repo == "") {
				return flagErrorf("`--metrics-file` and `--repo` go together: the repository names the workloads of the recording")
			}
			v, err := strconv.ParseFloat(start, 64)
			onGrid := kai.OnGrid(v)
			if err != nil || v < 0.01 || v > 64 || !onGrid {
				return flagErrorf("invalid `--start` %q: a KAI fraction (0.01 to 0.99, two decimals) or whole GPUs (1 to 64)", start)
			}
			opts.Start = v
			if opts.Cadence < time.Minute {
				return flagErrorf("`--cadence` must be at least 1m")
			}
			if opts.Restart < 0 {
				return flagErrorf("`--restart-time` must not be negative")
			}
			if opts.MergeDelay < 0 {
				return flagErrorf("`--merge-delay` must not be negative")
			}
			log, err := logger()
			if err != nil {
				return err
			}
			opts.Logger = log
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runBacktest(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.Traces, "traces", nil, "usage traces, CSV `file` (workload,timestamp_s,sm_util_pct_of_gpu,mem_used_pct_of_gpu; .gz too) (repeatable)")
	f.StringVar(&opts.MetricsFile, "metrics-file", "", "a recording (OpenMetrics with timestamps) to replay for the GPU Deployments of `--repo`")
	f.StringVar(&opts.Repo, "repo", "", "repository whose GPU Deployments the recording is replayed for")
	f.StringArrayVar(&opts.Policies, "policies", nil, "policy file or directory to backtest, as `name=path` or path (repeatable)")
	f.StringVar(&start, "start", "1", "every workload's starting allocation, in GPUs (1 or more: whole GPUs)")
	f.DurationVar(&opts.Cadence, "cadence", time.Hour, "interval between runs of the job")
	f.DurationVar(&opts.MergeDelay, "merge-delay", 2*time.Hour, "time from a pull request to its merge")
	f.BoolVar(&opts.OOMKill, "oom-kill", true, "a memory breach kills the container, as under HAMi-core: usage beyond the share is never seen")
	f.DurationVar(&opts.Restart, "restart-time", 2*time.Minute, "how long a container killed for memory takes to restart, its usage held to its share")
	f.StringVar(&opts.OutDir, "out", "", "write results.txt, results.json and SVG plots to this `directory`")
	f.Float64Var(&opts.MaxPeak, "max-peak", 0, "keep only workloads whose peak usage is at most this `percent` of one GPU (0: all)")
	f.StringArrayVar(&opts.Plot, "plot", nil, "workload to plot over time, besides those chosen from the results (repeatable)")
	return cmd
}

// inputs names where the traces came from.
func (o *backtestOptions) inputs() []string {
	in := slices.Clone(o.Traces)
	if o.MetricsFile != "" {
		in = append(in, o.MetricsFile+" (for "+o.Repo+")")
	}
	return in
}

// recordedTraces replays a recording for the GPU Deployments of a
// repository: each becomes a trace of its hottest pod, read through the
// metric mapping of the governance given (the first policy's, or Kubex's
// exporter by default).
func recordedTraces(ctx context.Context, repo, file string, g policy.Governance) ([]*backtest.Trace, error) {
	src, err := openmetrics.OpenRecorded(file)
	if err != nil {
		return nil, err
	}
	inv, err := patcher.Discover(ctx, repo)
	if err != nil {
		return nil, err
	}
	// The span leaves out samples a wrong clock dated far after the rest,
	// which would stretch the replay over empty months.
	sp := src.Span()
	q := usage.Query{At: sp.Newest, Lookback: sp.Newest.Sub(sp.Oldest) + time.Millisecond, Metrics: map[usage.Metric]usage.Mapping{}}
	relative := map[usage.Metric]bool{}
	for m, mr := range g.Sources() {
		q.Metrics[m] = mr.Source
		relative[m] = mr.Interpretation == engine.CurrentAllocation
	}
	alloc := map[usage.Ref]float64{}
	for _, w := range inv.Workloads {
		if w.Ref.Namespace == "" {
			w.Ref.Namespace = "default"
		}
		a := w.GPU.Fraction
		if a == 0 {
			a = float64(w.GPU.Whole)
		}
		if a > 0 {
			alloc[w.Ref] = a
			q.Workloads = append(q.Workloads, w.Ref)
		}
	}
	res, err := src.Usage(ctx, q)
	if err != nil {
		return nil, err
	}
	var traces []*backtest.Trace
	for _, r := range q.Workloads {
		if w, ok := res.Workloads[r]; ok {
			if tr := backtest.FromUsage(r.Namespace+"-"+r.Name, w, relative, alloc[r]); len(tr.Compute) > 0 {
				traces = append(traces, tr)
			}
		}
	}
	return traces, nil
}

func peakNote(p float64) string {
	if p <= 0 {
		return ""
	}
	return fmt.Sprintf(" peaking at most at %g%% of a GPU", p)
}

// backtestTarget is the Deployment every trace stands for when policies are
// asked who governs it: the label is the one the Kubex starter policies
// select on.
func backtestTarget(name string) policy.Target {
	return policy.Target{
		Ref:    usage.Ref{Namespace: "backtest", Kind: "Deployment", Name: name},
		Labels: map[string]string{"nvidia.com/gpu.present": "true"},
	}
}

func loadEngine(ctx context.Context, spec string) (*backtest.Engine, error) {
	name, path, ok := strings.Cut(spec, "=")
	if !ok {
		path = spec
		name = strings.TrimSuffix(filepath.Base(spec), filepath.Ext(spec))
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("policies %s: %w", spec, err)
	}
	root, rel := path, []string(nil)
	if !st.IsDir() {
		root, rel = filepath.Dir(path), []string{filepath.Base(path)}
	}
	set, err := policy.Load(ctx, root, rel...)
	if err != nil {
		return nil, err
	}
	if len(set.Errors) > 0 {
		return nil, fmt.Errorf("policies %s: %w", spec, set.Errors[0])
	}
	g := set.Govern(backtestTarget("trace"))
	if g.Skip != "" {
		return nil, fmt.Errorf("policies %s do not govern a Deployment labelled nvidia.com/gpu.present=true: %s", spec, g.Skip)
	}
	return &backtest.Engine{Label: name, Governance: g}, nil
}

func runBacktest(ctx context.Context, opts *backtestOptions) error {
	var engines []*backtest.Engine
	for _, spec := range opts.Policies {
		e, err := loadEngine(ctx, spec)
		if err != nil {
			return err
		}
		engines = append(engines, e)
	}
	var traces []*backtest.Trace
	for _, f := range opts.Traces {
		ts, err := backtest.ReadCSVFile(f)
		if err != nil {
			return err
		}
		traces = append(traces, ts...)
	}
	if opts.MetricsFile != "" {
		g := policy.Governance{}
		if len(engines) > 0 {
			g = engines[0].Governance
		}
		ts, err := recordedTraces(ctx, opts.Repo, opts.MetricsFile, g)
		if err != nil {
			return err
		}
		traces = append(traces, ts...)
	}
	if opts.MaxPeak > 0 {
		traces = slices.DeleteFunc(traces, func(t *backtest.Trace) bool { return t.Peak() > opts.MaxPeak })
	}
	if len(traces) == 0 {
		return fmt.Errorf("no workload left to replay")
	}
	opts.Logger.Info("traces loaded", "workloads", len(traces))

	startAlloc := engine.Allocation{Form: engine.Fraction, GPUs: opts.Start}
	if opts.Start >= 1 {
		startAlloc = engine.Allocation{Form: engine.WholeGPUs, GPUs: float64(int(opts.Start))}
	}
	strategies := []backtest.Strategy{backtest.Static{}}
	// The baselines are held to the first policy's bounds (or the
	// defaults), so that they differ from it in how they pick a number.
	bounds := backtest.Bounds{Ceiling: policy.DefaultCeiling, Floor: policy.DefaultFloor, MinChangePercent: policy.DefaultMinChangePercent}
	for i, e := range engines {
		strategies = append(strategies, e)
		if st := e.Governance.Strategy; i == 0 {
			bounds = backtest.Bounds{Ceiling: st.Ceiling, Floor: st.Floor, MinChangePercent: st.MinChangePercent}
		}
	}
	strategies = append(strategies, backtest.VPA{Bounds: bounds}, backtest.VPA{Bounds: bounds, Auto: true},
		backtest.KRRSimple{Bounds: bounds}, backtest.PeakPlus15{Bounds: bounds},
		backtest.CadenceOracle{Bounds: bounds, Period: 7 * 24 * time.Hour}, backtest.CadenceOracle{Bounds: bounds, Period: 24 * time.Hour},
		backtest.Oracle{Bounds: bounds, Cadence: opts.Cadence})
	cfg := backtest.Config{Start: startAlloc, Cadence: opts.Cadence, MergeDelay: opts.MergeDelay, OOMKill: opts.OOMKill, Restart: opts.Restart}

	// Every strategy is delivered both ways, so that none wins by its
	// delivery alone.
	began := time.Now()
	deliveries := []backtest.Delivery{{Name: backtest.PullRequests}, {Name: backtest.PullRequestsLive, Live: true}}
	for i := range deliveries {
		c := cfg
		c.Live = deliveries[i].Live
		results, err := backtest.Run(ctx, traces, strategies, c)
		if err != nil {
			return err
		}
		deliveries[i].Results = results
	}
	opts.Logger.Info("backtest done", "strategies", len(strategies), "workloads", len(traces), "elapsed", time.Since(began).Round(time.Millisecond))

	kills := "memory breaches kill the container, restarting in " + opts.Restart.String()
	if !opts.OOMKill {
		kills = "memory breaches have no consequence"
	}
	fmt.Fprintf(opts.IO.Out, "%d workloads from %s%s; start %s, a run every %s, merged after %s; %s\n",
		len(traces), strings.Join(opts.inputs(), ", "), peakNote(opts.MaxPeak), startAlloc, opts.Cadence, opts.MergeDelay, kills)
	if err := backtest.WriteTables(opts.IO.Out, deliveries); err != nil {
		return err
	}
	if opts.OutDir == "" {
		return nil
	}
	return writeBacktestFiles(opts, traces, cfg, deliveries)
}

func writeBacktestFiles(opts *backtestOptions, traces []*backtest.Trace, cfg backtest.Config, deliveries []backtest.Delivery) error {
	results := deliveries[0].Results
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return err
	}
	// Every write goes through a Root: whatever a name holds, no file
	// lands outside --out.
	out, err := os.OpenRoot(opts.OutDir)
	if err != nil {
		return err
	}
	defer out.Close()
	write := func(name string, fn func(f *os.File) error) error {
		f, err := out.Create(name)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return f.Close()
	}
	config := map[string]any{
		"start": cfg.Start.String(), "cadence": cfg.Cadence.String(), "mergeDelay": cfg.MergeDelay.String(),
		"policies": opts.Policies, "maxPeakPercent": opts.MaxPeak, "oomKill": cfg.OOMKill, "restart": cfg.Restart.String(),
	}
	if err := write("results.txt", func(f *os.File) error { return backtest.WriteTables(f, deliveries) }); err != nil {
		return err
	}
	var js bytes.Buffer
	if err := backtest.WriteJSON(&js, opts.inputs(), config, deliveries); err != nil {
		return err
	}
	if err := write("results.json", func(f *os.File) error { _, err := f.Write(js.Bytes()); return err }); err != nil {
		return err
	}
	// The Markdown tables are rendered from results.json as written, as
	// the check of BENCHMARKS.md renders them.
	doc, err := backtest.ReadResults(bytes.NewReader(js.Bytes()))
	if err != nil {
		return err
	}
	if err := write("results.md", func(f *os.File) error { return doc.WriteMarkdown(f) }); err != nil {
		return err
	}
	used := map[string]bool{"results.txt": true, "results.json": true, "results.md": true}
	for i, d := range deliveries {
		name := "tradeoff.svg"
		if i > 0 {
			name = "tradeoff-live.svg"
		}
		used[name] = true
		if err := write(name, func(f *os.File) error {
			return backtest.PlotTradeoff(f, fmt.Sprintf("%d workloads, start %s, %s", len(traces), cfg.Start, d.Name), d.Results)
		}); err != nil {
			return err
		}
	}
	names := chooseExamples(results)
	for _, n := range opts.Plot {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		i := slices.IndexFunc(traces, func(t *backtest.Trace) bool { return t.Name == n })
		if i < 0 {
			return fmt.Errorf("`--plot` %q: no such workload in the traces", n)
		}
		file := plotFile(n, used)
		if err := write(file, func(f *os.File) error { return backtest.PlotWorkload(f, traces[i], results) }); err != nil {
			return err
		}
		opts.Logger.Debug("workload plotted", "workload", n, "file", file)
	}
	opts.Logger.Info("results written", "dir", opts.OutDir)
	return nil
}

// plotFile names the plot of workload name: workload-<name>.svg, with
// every byte outside [A-Za-z0-9._-] replaced by '_', so that a name from
// a trace (x/../../pwned, a line break, a NUL) can only ever be one plain
// file name. The replacement can make two names one, so a name already in
// used gets -2, -3, ...; the result is added to used.
func plotFile(name string, used map[string]bool) string {
	// File names are limited to 255 bytes; leave room for the rest.
	const maxName = 200
	b := []byte(name)
	if len(b) > maxName {
		b = b[:maxName]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	base := "workload-" + string(b)
	file := base + ".svg"
	for k := 2; used[file]; k++ {
		file = fmt.Sprintf("%s-%d.svg", base, k)
	}
	used[file] = true
	return file
}

// chooseExamples picks up to three workloads worth looking at: where the
// first policy leaves the most slack, and where it and VPA
// baseline breach memory the most.
func chooseExamples(results []backtest.Result) []string {
	pick := func(r backtest.Result, score func(backtest.Score) float64) string {
		best, name := 0.0, ""
		for _, w := range r.Workloads {
			if v := score(w.Score); v > best {
				best, name = v, w.Name
			}
		}
		return name
	}
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	breach := func(s backtest.Score) float64 { return s.MemoryBreachMinutes }
	if len(results) > 1 {
		add(pick(results[1], func(s backtest.Score) float64 { return s.SlackGPUHours }))
		add(pick(results[1], breach))
	}
	for _, r := range results {
		if r.Strategy == "vpa" {
			add(pick(r, breach))
		}
	}
	return names
}
