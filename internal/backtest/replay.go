package backtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Options are one backtest as the command asks for it: where the traces
// come from, the policies, the delivery model, and where results go.
type Options struct {
	Traces      []string
	MetricsFile string // a recording, replayed for the GPU workloads of Repo
	Repo        string
	Policies    []string // NAME=PATH or PATH, each a strategy
	Start       float64  // as ParseStart reads it
	Cadence     time.Duration
	MergeDelay  time.Duration
	OOMKill     bool          // a memory breach kills the container (HAMi-core)
	Restart     time.Duration // how long a killed container takes to restart
	// LiveMaxChanges caps the live fast path's changes per run, as run's
	// --live-max-changes does; 0 leaves it uncapped.
	LiveMaxChanges int
	OutDir         string
	Plot           []string // workloads to plot; empty: a few chosen
	MaxPeak        float64  // drop traces whose peak exceeds this percent of a GPU; 0 keeps all
	// Against names one of Policies: when set, only the policies are
	// replayed, and each other one is paired with it per workload on each
	// half of the split (Candidates), in place of the baselines.
	Against string
	// Frontier names the policies that are one knob's settings, from the
	// most cautious to the boldest: against each baseline, one is chosen
	// on the tune half and judged on the held half (frontier.md). The
	// other policies are the shipped ones.
	Frontier []string
	// FrontierFrom is the frontier.json of the run whose tune half chose
	// the settings, for fresh data, which has none.
	FrontierFrom string
	// Fresh marks data no setting was tuned on: every workload is held,
	// whole (docs/backtest/protocol.md).
	Fresh bool
	// Protocol is the file that freezes the policy files a run may score
	// (docs/backtest/protocol.md): when set, a policy file it does not
	// freeze in the history of HEAD is refused before anything is
	// replayed, and results.json records the commit that froze each.
	Protocol string
	// History answers the protocol's questions; nil asks git in the
	// protocol's directory.
	History History

	// Out gets the tables; Logger says what the backtest is at.
	Out    io.Writer
	Logger *slog.Logger

	// protocol is what the check of Protocol found.
	protocol *ProtocolRecord
}

// ParseStart reads the allocation every strategy starts from: a KAI
// fraction (0.01 to 0.99, on its two-decimal grid) or whole GPUs (1 to
// 64).
func ParseStart(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0.01 || v > 64 || !kai.OnGrid(v) {
		return 0, fmt.Errorf("%q: a KAI fraction (0.01 to 0.99, two decimals) or whole GPUs (1 to 64)", s)
	}
	return v, nil
}

// inputs names where the traces came from.
func (o *Options) inputs() []string {
	in := slices.Clone(o.Traces)
	if o.MetricsFile != "" {
		in = append(in, o.MetricsFile+" (for "+o.Repo+")")
	}
	return in
}

// Replay loads the traces and policies the options name, replays them
// through the policies and the baselines, each delivered as pull requests
// and with the live fast path, prints the tables, and writes the result
// files when OutDir is set.
func Replay(ctx context.Context, opts Options) error {
	if opts.Protocol != "" {
		rec, err := checkProtocol(ctx, &opts)
		if err != nil {
			return err
		}
		opts.protocol = rec
	}
	engines, err := loadEngines(ctx, opts.Policies)
	if err != nil {
		return err
	}
	if opts.Against != "" && !slices.ContainsFunc(engines, func(e *Engine) bool { return e.Label == opts.Against }) {
		return fmt.Errorf("against %q: no such policies among --policies", opts.Against)
	}
	for _, f := range opts.Frontier {
		if !slices.ContainsFunc(engines, func(e *Engine) bool { return e.Label == f }) {
			return fmt.Errorf("frontier %q: no such policies among --policies", f)
		}
	}
	if opts.Fresh && len(opts.Frontier) > 0 && opts.FrontierFrom == "" {
		return fmt.Errorf("fresh data has no tune half: the frontier's choices must come from another run's frontier.json (`--frontier-from`)")
	}
	traces, err := loadTraces(ctx, &opts, engines)
	if err != nil {
		return err
	}
	opts.Logger.Info("traces loaded", "workloads", len(traces))

	startAlloc := engine.Allocation{Form: engine.Fraction, GPUs: opts.Start}
	if opts.Start >= 1 {
		startAlloc = engine.Allocation{Form: engine.WholeGPUs, GPUs: float64(int(opts.Start))}
	}
	strategies := strategiesOf(engines, opts.Cadence)
	if opts.Against != "" {
		strategies = strategies[:0]
		for _, e := range engines {
			strategies = append(strategies, e)
		}
	}
	cfg := Config{Start: startAlloc, Cadence: opts.Cadence, MergeDelay: opts.MergeDelay, OOMKill: opts.OOMKill, Restart: opts.Restart,
		LiveMaxChanges: opts.LiveMaxChanges}
	began := time.Now()
	deliveries, err := deliver(ctx, traces, strategies, cfg)
	if err != nil {
		return err
	}
	opts.Logger.Info("backtest done", "strategies", len(strategies), "workloads", len(traces), "elapsed", time.Since(began).Round(time.Millisecond))

	kills := "memory breaches kill the container, restarting in " + opts.Restart.String()
	if !opts.OOMKill {
		kills = "memory breaches have no consequence"
	}
	fmt.Fprintf(opts.Out, "%d workloads from %s%s; start %s, a run every %s, merged after %s, %s; %s\n",
		len(traces), strings.Join(opts.inputs(), ", "), peakNote(opts.MaxPeak), startAlloc, opts.Cadence, opts.MergeDelay, liveNote(opts.LiveMaxChanges), kills)
	if err := WriteTables(opts.Out, deliveries); err != nil {
		return err
	}
	if opts.Against != "" {
		return writeCandidates(&opts, traces, deliveries)
	}
	if opts.OutDir == "" {
		return nil
	}
	var policies []string
	for _, e := range engines {
		policies = append(policies, e.Label)
	}
	return writeFiles(&opts, traces, cfg, deliveries, policies)
}

// checkProtocol refuses a run that would score a policy file the
// protocol does not freeze (CheckFrozen).
func checkProtocol(ctx context.Context, opts *Options) (*ProtocolRecord, error) {
	files, err := sortedFiles(opts.Policies)
	if err != nil {
		return nil, err
	}
	h := opts.History
	if h == nil {
		h = Git{Dir: filepath.Dir(opts.Protocol)}
	}
	return CheckFrozen(ctx, h, opts.Protocol, files)
}

func loadEngines(ctx context.Context, specs []string) ([]*Engine, error) {
	var engines []*Engine
	for _, spec := range specs {
		e, err := loadEngine(ctx, spec)
		if err != nil {
			return nil, err
		}
		engines = append(engines, e)
	}
	return engines, nil
}

// loadTraces reads the trace files and the recording, keeping those
// within MaxPeak. A recording is read through the first policy's metric
// mapping.
func loadTraces(ctx context.Context, opts *Options, engines []*Engine) ([]*Trace, error) {
	var traces []*Trace
	for _, f := range opts.Traces {
		ts, err := ReadCSVFile(f)
		if err != nil {
			return nil, err
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
			return nil, err
		}
		traces = append(traces, ts...)
	}
	if opts.MaxPeak > 0 {
		traces = slices.DeleteFunc(traces, func(t *Trace) bool { return t.Peak() > opts.MaxPeak })
	}
	if len(traces) == 0 {
		return nil, fmt.Errorf("no workload left to replay")
	}
	return traces, nil
}

// strategiesOf are the strategies replayed: static first, then each
// policy, then the baselines.
func strategiesOf(engines []*Engine, cadence time.Duration) []Strategy {
	strategies := []Strategy{Static{}}
	// The baselines are held to the first policy's bounds (or the
	// defaults), so that they differ from it in how they pick a number.
	bounds := Bounds{Ceiling: policy.DefaultCeiling, Floor: policy.DefaultFloor, MinChangePercent: policy.DefaultMinChangePercent}
	for i, e := range engines {
		strategies = append(strategies, e)
		if st := e.Governance.Strategy; i == 0 {
			bounds = Bounds{Ceiling: st.Ceiling, Floor: st.Floor, MinChangePercent: st.MinChangePercent}
		}
	}
	// Each baseline as its source reads for a share, then labelled
	// sensitivity rows: VPA testing the share against each resource's
	// range (harsher on it), round two's readings (kinder).
	perResource := VPAReading{PerResource: true, Label: "each resource's bounds"}
	roundTwo := VPAReading{Kind: true, Label: "round-two reading"}
	return append(strategies, VPA{Bounds: bounds}, VPA{Bounds: bounds, Reading: perResource},
		VPA{Bounds: bounds, Auto: true}, VPA{Bounds: bounds, Auto: true, Reading: perResource}, VPA{Bounds: bounds, Auto: true, Reading: roundTwo},
		KRRSimple{Bounds: bounds}, KRRSimple{Bounds: bounds, Pooled: true}, PeakPlus15{Bounds: bounds},
		CadenceOracle{Bounds: bounds, Period: 7 * 24 * time.Hour}, CadenceOracle{Bounds: bounds, Period: 24 * time.Hour},
		Oracle{Bounds: bounds, Cadence: cadence})
}

// deliver runs every strategy both as pull requests and with the live
// fast path, so that none wins by its delivery alone.
func deliver(ctx context.Context, traces []*Trace, strategies []Strategy, cfg Config) ([]Delivery, error) {
	deliveries := []Delivery{{Name: PullRequests}, {Name: PullRequestsLive, Live: true}}
	for i := range deliveries {
		c := cfg
		c.Live = deliveries[i].Live
		results, err := Run(ctx, traces, strategies, c)
		if err != nil {
			return nil, err
		}
		deliveries[i].Results = results
	}
	return deliveries, nil
}

// recordedTraces replays a recording for the GPU Deployments of a
// repository: each becomes a trace of its hottest pod, read through the
// metric mapping of the governance given (the first policy's, or Kubex's
// exporter by default).
func recordedTraces(ctx context.Context, repo, file string, g policy.Governance) ([]*Trace, error) {
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
	clusters, err := clusterMap(ctx, repo)
	if err != nil {
		return nil, err
	}
	if clusters != nil {
		q.ClusterLabel, q.ClusterValues = clusters.Spec.Label, clusters.Values()
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
		if a <= 0 {
			continue
		}
		refs := []usage.Ref{w.Ref}
		if clusters != nil {
			// One trace per (cluster, workload): a definition several
			// clusters deploy runs apart in each; one under no
			// cluster's paths is not replayed, as the plan leaves it.
			refs = nil
			for _, c := range clusters.Clusters(w.File) {
				r := w.Ref
				r.Cluster = c
				refs = append(refs, r)
			}
		}
		for _, r := range refs {
			alloc[r] = a
			q.Workloads = append(q.Workloads, r)
		}
	}
	res, err := src.Usage(ctx, q)
	if err != nil {
		return nil, err
	}
	var traces []*Trace
	for _, r := range q.Workloads {
		if w, ok := res.Workloads[r]; ok {
			if tr := FromUsage(traceName(r.Cluster, r.Namespace+"-"+r.Name), w, relative, alloc[r]); len(tr.Compute) > 0 {
				tr.Cluster = r.Cluster
				traces = append(traces, tr)
			}
		}
	}
	return traces, nil
}

// clusterMap is the repository's ClusterMap when it names clusters: a
// recording of several clusters is then replayed per (cluster,
// workload). A broken map or two are an error, as the plan refuses them.
func clusterMap(ctx context.Context, repo string) (*policy.ClusterMap, error) {
	set, err := policy.Load(ctx, repo)
	if err != nil {
		return nil, err
	}
	for _, b := range set.Broken {
		if b.Kind == policy.KindClusterMap {
			return nil, fmt.Errorf("%s:%d: ClusterMap %s is not used, so which cluster a series is of is not known: %w", b.File, b.Line, b.Name, b.Err)
		}
	}
	if m := set.ClusterMap; m != nil && len(m.Named(nil)) > 0 {
		return m, nil
	}
	return nil, nil
}

func liveNote(n int) string {
	if n == 0 {
		return "live changes uncapped"
	}
	return fmt.Sprintf("at most %d live changes per run", n)
}

func peakNote(p float64) string {
	if p <= 0 {
		return ""
	}
	return fmt.Sprintf(" peaking at most at %g%% of a GPU", p)
}

// target is the Deployment every trace stands for when policies are asked
// who governs it, in namespace ns: the label is the one the Kubex starter
// policies select on.
func target(ns, name string) policy.Target {
	return policy.Target{
		Ref:    usage.Ref{Namespace: ns, Kind: "Deployment", Name: name},
		Labels: map[string]string{"nvidia.com/gpu.present": "true"},
	}
}

// replayNamespaces are the namespaces a trace is replayed in, tried in
// order: those of the set's namespaced policies, which govern only their
// own namespace, sorted; then one no policy names, for cluster policies.
func replayNamespaces(set *policy.Set) []string {
	var out []string
	add := func(m policy.Meta) {
		if !m.Clustered() && !slices.Contains(out, m.Namespace) {
			out = append(out, m.Namespace)
		}
	}
	for _, p := range set.Proactive {
		add(p.Meta)
	}
	for _, p := range set.Reactive {
		add(p.Meta)
	}
	slices.Sort(out)
	return append(out, "backtest")
}

// loadEngine reads the policies spec names (NAME=PATH, or PATH named by
// its base name) as the engine's strategy.
func loadEngine(ctx context.Context, spec string) (*Engine, error) {
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
	// A namespaced policy governs only its own namespace: the trace is
	// replayed there, not in a namespace it can never match.
	namespaces := replayNamespaces(set)
	var g policy.Governance
	for _, ns := range namespaces {
		if g = set.Govern(target(ns, "trace")); g.Skip == "" {
			break
		}
	}
	if g.Skip != "" {
		return nil, fmt.Errorf("policies %s do not govern a Deployment labelled nvidia.com/gpu.present=true in namespace %s: %s (%s)",
			spec, strings.Join(namespaces, ", "), g.Skip, g.Why)
	}
	return &Engine{Label: name, Governance: g}, nil
}
