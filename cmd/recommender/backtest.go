package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/config"
)

// newCmdBacktest builds backtest: its flags, checked, become the
// options of backtest.Replay. runF, when not nil, replaces the replay: the
// seam for tests.
func newCmdBacktest(io streams, logger func() (*slog.Logger, error), runF func(context.Context, *backtest.Options) error) *cobra.Command {
	opts := &backtest.Options{Out: io.Out}
	var start string
	cmd := &cobra.Command{
		Use:   "backtest --traces FILE --policies PATH",
		Short: "Replay usage traces through the policies and the usual baselines, and score them",
		Long: "backtest replays recorded usage through the decision engine under each --policies, at the job's\n" +
			"cadence with changes landing after a merge delay, and through the baselines people use (static,\n" +
			"VPA as pull requests and in Auto mode, KRR's simple strategy, peak + 15 %, and an oracle that knows\n" +
			"the future). It scores each on relative slack,\n" +
			"breach-minutes and churn.",
		Example: "  recommender backtest --traces traces/usage.csv --policies kubex-guide=examples/quickstart/policies --out backtest",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(opts.Traces) == 0 && opts.MetricsFile == "" {
				return config.FlagErrorf("`--traces` or `--metrics-file` is required")
			}
			if (opts.MetricsFile == "") != (opts.Repo == "") {
				return config.FlagErrorf("`--metrics-file` and `--repo` go together: the repository names the workloads of the recording")
			}
			v, err := backtest.ParseStart(start)
			if err != nil {
				return config.FlagErrorf("invalid `--start` %s", err.Error())
			}
			opts.Start = v
			if opts.Cadence < time.Minute {
				return config.FlagErrorf("`--cadence` must be at least 1m")
			}
			if opts.Restart < 0 {
				return config.FlagErrorf("`--restart-time` must not be negative")
			}
			if opts.LiveMaxChanges < 0 {
				return config.FlagErrorf("`--live-max-changes` must be 0 or more, got %d", opts.LiveMaxChanges)
			}
			if opts.MergeDelay < 0 {
				return config.FlagErrorf("`--merge-delay` must not be negative")
			}
			log, err := logger()
			if err != nil {
				return err
			}
			opts.Logger = log
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return backtest.Replay(cmd.Context(), *opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.Traces, "traces", nil, "usage traces, CSV `file` (workload,timestamp_s,sm_util_pct_of_gpu,mem_used_pct_of_gpu; .gz too) (repeatable)")
	f.StringVar(&opts.MetricsFile, "metrics-file", "", "a recording `file` (OpenMetrics with timestamps) to replay for the GPU Deployments of --repo")
	f.StringVar(&opts.Repo, "repo", "", "repository whose GPU Deployments the recording is replayed for")
	f.StringArrayVar(&opts.Policies, "policies", nil, "policy file or directory to backtest, as `name=path` or path (repeatable)")
	f.StringVar(&start, "start", "1", "every workload's starting allocation, in GPUs (1 or more: whole GPUs)")
	f.DurationVar(&opts.Cadence, "cadence", time.Hour, "interval between runs of the job")
	f.DurationVar(&opts.MergeDelay, "merge-delay", 2*time.Hour, "time from a pull request to its merge")
	f.IntVar(&opts.LiveMaxChanges, "live-max-changes", 3, "make at most this many live changes per run, over all workloads, as run's flag does (0: uncapped)")
	f.BoolVar(&opts.OOMKill, "oom-kill", true, "a memory breach kills the container, as under HAMi-core: usage beyond the share is never seen")
	f.DurationVar(&opts.Restart, "restart-time", 2*time.Minute, "how long a container killed for memory takes to restart, its usage held to its share")
	f.StringVar(&opts.OutDir, "out", "", "write results.txt, results.json and SVG plots to this `directory`")
	f.Float64Var(&opts.MaxPeak, "max-peak", 0, "keep only workloads whose peak usage is at most this `percent` of one GPU (0: all)")
	f.StringArrayVar(&opts.Frontier, "frontier", nil, "a `name` of --policies that is one setting of a risk knob, in the knob's order, most cautious first (repeatable): against each baseline one is chosen on the tune half and judged on the held half (frontier.md)")
	f.StringVar(&opts.FrontierFrom, "frontier-from", "", "the frontier.json `file` of the run whose tune half chose the settings, for --fresh data")
	f.BoolVar(&opts.Fresh, "fresh", false, "the traces are data no setting was tuned on: every workload is held, whole, with no tune half (docs/backtest/protocol.md)")
	f.StringVar(&opts.Protocol, "protocol", "", "refuse to score a policy file this protocol `file` does not freeze, by sha256, in a commit of HEAD's history; results.json records that commit (docs/backtest/protocol.md)")
	f.StringVar(&opts.Against, "against", "", "replay only the policies, and pair each with the policies of this `name`, per workload, on each half of the split (candidates.md)")
	f.StringArrayVar(&opts.Plot, "plot", nil, "workload to plot over time, besides those chosen from the results (repeatable)")
	return cmd
}
