// Command recommender proposes GPU fractions for inference services that
// share GPUs through the KAI scheduler, as edits to the manifests in a
// GitOps repository.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// exitCode is what the process returns; its values are documented in the
// README and stable.
type exitCode int

const (
	exitOK exitCode = 0
	// exitError: the run failed; nothing was proposed.
	exitError exitCode = 1
	// exitUsage: the command line is wrong.
	exitUsage exitCode = 2
	// exitProblems: the run finished but refused some of its input (a bad
	// policy, an unreadable manifest, a refused edit, a failed usage
	// query); the output says what, and what it touches is left alone.
	exitProblems exitCode = 3
	// exitChanges: the run went well and proposed changes (plan: a file
	// would be edited; run: a pull request was opened or updated). Only
	// with --detailed-exit-code: a Kubernetes Job takes any code but 0 for
	// a failure, to retry and alert on.
	exitChanges exitCode = 4
)

func main() {
	os.Exit(int(Main(os.Args[1:], os.Stdout, os.Stderr)))
}

// Main runs the command line and maps its outcome to an exit code, in one
// place.
func Main(args []string, stdout, stderr io.Writer) exitCode {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newCmdRoot(streams{Out: stdout, Err: stderr}, nil)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var flagErr *config.FlagError
	var cfgErr *config.Error
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errChanges):
		return exitChanges
	case errors.Is(err, errProblems):
		// The output already said what the problems are.
		return exitProblems
	case errors.As(err, &cfgErr):
		// A config's errors name their key and line; run's usage would
		// bury them.
		fmt.Fprintf(stderr, "error: %s\n", plan.PrintableLines(err.Error()))
		return exitUsage
	case errors.As(err, &flagErr):
		// The mistake, and where to read more: forty lines of usage would
		// bury it.
		fmt.Fprintf(stderr, "%s\n\nRun `%s --help` for usage.\n", plan.PrintableLines(err.Error()), cmd.CommandPath())
		return exitUsage
	default:
		// An error may quote what a server or a file said: nothing from
		// outside reaches the terminal unescaped.
		fmt.Fprintf(stderr, "error: %s\n", plan.PrintableLines(err.Error()))
		return exitError
	}
}

// streams are where a command writes.
type streams struct {
	Out, Err io.Writer
}

// errChanges says the run went well and proposed changes, for
// --detailed-exit-code.
var errChanges = errors.New("changes proposed")

// errProblems says the run finished but refused some of its input.
var errProblems = errors.New("problems found in the input")
