package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// newCmdRoot builds the command tree. planRunF, when not nil, replaces what
// plan runs once its flags are parsed: the seam for command-line tests.
func newCmdRoot(io streams, planRunF func(context.Context, *planOptions) error) *cobra.Command {
	var logLevel string
	cmd := &cobra.Command{
		Use:   "recommender <command>",
		Short: "Right-size shared GPUs through pull requests",
		Long: "recommender reads GPU usage, evaluates it against the rightsizing policies kept in a GitOps\n" +
			"repository, and proposes new KAI gpu-fraction values as minimal edits to the manifests.",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmd.SetOut(io.Out)
	cmd.SetErr(io.Err)
	cmd.PersistentFlags().StringVar(&logLevel, "log-level", "warn", "log `level` on stderr: debug, info, warn or error")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	logger := func() (*slog.Logger, error) { return newLogger(io, logLevel) }
	cmd.AddCommand(newCmdPlan(io, logger, planRunF), newCmdBacktest(io, logger, nil))
	return cmd
}

// newLogger builds the stderr logger at a level named on the command line.
func newLogger(io streams, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, flagErrorf("invalid `--log-level` %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(io.Err, &slog.HandlerOptions{Level: l})), nil
}
