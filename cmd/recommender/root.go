package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpu-rightsizing/recommender/internal/config"
)

// newCmdRoot builds the command tree. planRunF, when not nil, replaces what
// plan runs once its flags are parsed: the seam for command-line tests.
func newCmdRoot(io streams, planRunF func(context.Context, *planOptions) error) *cobra.Command {
	var logLevel, logFormat string
	cmd := &cobra.Command{
		Use:   "recommender <command>",
		Short: "Right-size shared GPUs through pull requests",
		Long: "recommender reads GPU usage, evaluates it against the rightsizing policies kept in a GitOps\n" +
			"repository, and proposes new KAI gpu-fraction values as minimal edits to the manifests.",
		SilenceErrors: true,
		SilenceUsage:  true,
		// cobra's own default, which SuggestionsFor does not apply.
		SuggestionsMinimumDistance: 2,
		// With Args set, cobra hands an unknown command to the root
		// instead of failing with a plain error that Main could not tell
		// from a failed run: it is a usage mistake (exit 2).
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
			}
			return &config.FlagError{Err: errors.New(msg)}
		},
		// A runnable root, so that the Args above are checked; with no
		// command it prints its help, as before.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.SetOut(io.Out)
	cmd.SetErr(io.Err)
	cmd.PersistentFlags().StringVar(&logLevel, "log-level", "warn", "log `level` on stderr: debug, info, warn or error; run's default is info")
	cmd.PersistentFlags().StringVar(&logFormat, "log-format", "auto", "log `format` on stderr: text, json, or auto (json unless stderr is a terminal)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &config.FlagError{Err: err} })
	logger := func() (*slog.Logger, error) { return newFormatLogger(io, logLevel, logFormat) }
	cmd.AddCommand(newCmdPlan(io, logger, planRunF), newCmdRun(io, logger, nil), newCmdBacktest(io, logger, nil), newCmdConfig(io, logger),
		newCmdPolicy(io, logger, nil), newCmdReport(io, logger), newCmdClusters(io),
		newCmdVersion(io))
	cmd.Version = versionLine()
	cmd.SetVersionTemplate("{{.Version}}\n")
	return cmd
}

// noArgs is cobra.NoArgs as a usage mistake (exit 2): a command that
// takes no arguments was given one.
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return &config.FlagError{Err: err}
	}
	return nil
}

// newLogger builds the stderr logger at a level, in the format chosen by
// where stderr goes.
func newLogger(io streams, level string) (*slog.Logger, error) {
	return newFormatLogger(io, level, "auto")
}

// newFormatLogger builds the stderr logger at a level and in a format named
// on the command line. Logs are JSON where no person reads them as they
// come (a pod's stderr, a CI log), for a log pipeline to parse.
func newFormatLogger(io streams, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if !slices.Contains(logLevels(), strings.ToLower(level)) || l.UnmarshalText([]byte(strings.ToUpper(level))) != nil {
		return nil, config.FlagErrorf("invalid `--log-level` %q: use %s", level, config.OneOf(logLevels()))
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
	case "json":
		return slog.New(slog.NewJSONHandler(io.Err, opts)), nil
	case "auto":
		if !isTerminal(io.Err) {
			return slog.New(slog.NewJSONHandler(io.Err, opts)), nil
		}
	default:
		return nil, config.FlagErrorf("invalid `--log-format` %q: use %s", format, config.OneOf(logFormats()))
	}
	return slog.New(slog.NewTextHandler(io.Err, opts)), nil
}

// isTerminal reports whether w is a terminal. A character device is not
// enough: /dev/null is one, and a job's stderr sent there is no terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// columns is the width of the terminal w is, or 0 when it is none (a
// pipe, a file, a pod's log): tables wrap only for people at a terminal.
func columns(w io.Writer) int {
	if !isTerminal(w) {
		return 0
	}
	cols, _, err := term.GetSize(int(w.(*os.File).Fd()))
	if err != nil {
		return 0
	}
	return cols
}
