package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/config"
)

// explain adds to an error about flags where each flag it names got its
// value, with the config key that sets it. A mistake in the file or the
// environment is told without run's usage, which is about flags.
func explain(eff *config.Effective, err error) error {
	var fe *config.FlagError
	if eff == nil || !errors.As(err, &fe) {
		return err
	}
	notes, fromConfig := eff.Notes(err.Error())
	if len(notes) == 0 {
		return err
	}
	err = fmt.Errorf("%w\n  (%s)", fe.Err, strings.Join(notes, ";\n   "))
	if fromConfig {
		return config.NewError(err)
	}
	return &config.FlagError{Err: err}
}

// checkPlanKeys checks the keys of a config file that only plan reads
// (output), which run's checks leave alone: validate judges the whole
// file, for both commands.
func checkPlanKeys(io streams, file string) error {
	cfg, err := config.Read(file)
	if err != nil {
		return err
	}
	plan := newCmdPlan(io, nil, nil)
	eff, err := config.Apply(plan.Flags(), cfg, os.LookupEnv)
	if err != nil {
		return err
	}
	return explain(eff, checkOutput(plan.Flags().Lookup("output").Value.String()))
}

// fileFlags are the settings that name a file run reads.
var fileFlags = []string{
	"github-token-file", "github-app-key-file", "gitlab-token-file", "git-ssh-key-file", "git-known-hosts-file", "ca-file",
	"metrics-file", "prometheus-token-file", "prometheus-password-file", "prometheus-ca-file", "prometheus-cert-file",
	"prometheus-key-file", "signing-key-file", "kubeconfig",
}

// checkFileSettings checks what run would find missing only once it ran:
// each file a setting names is a regular file this process can read, and
// a local repository is a directory.
func checkFileSettings(ctx context.Context, o *runOptions) error {
	var errs []error
	for _, name := range fileFlags {
		path := o.effective.Flags.Lookup(name).Value.String()
		if path == "" {
			continue
		}
		if err := readableFile(path); err != nil {
			errs = append(errs, config.FlagErrorf("`--%s` %s: %w", name, path, err))
		}
	}
	if o.SCM == "local" {
		if st, err := os.Stat(o.Repo); err != nil || !st.IsDir() {
			errs = append(errs, config.FlagErrorf("`--repo` %s: not a readable directory", o.Repo))
		}
	}
	errs = append(errs, checkCredentials(o)...)
	errs = append(errs, checkLiveContexts(ctx, o)...)
	if len(errs) == 0 {
		return nil
	}
	// One error naming every flag, so that explain says where each got
	// its value.
	return &config.FlagError{Err: errors.Join(errs...)}
}

// checkCredentials checks that the chosen forge and usage source find
// the credential run would read, where no file names it: the variable is
// set and not blank here. A missing token is the commonest first-run
// error, and run fails on it only once it has started.
func checkCredentials(o *runOptions) []error {
	var errs []error
	env := func(flag, name, what string) {
		if name == "" {
			errs = append(errs, config.FlagErrorf("%s: neither a file nor a variable (`--%s`) names it", what, flag))
			return
		}
		if strings.TrimSpace(os.Getenv(name)) == "" {
			errs = append(errs, config.FlagErrorf("%s: $%s (`--%s`) is empty or unset here, and no file names it", what, name, flag))
		}
	}
	switch gh, gl := o.GitHub, o.GitLab; o.SCM {
	case "github":
		if gh.AppID == 0 && gh.TokenFile == "" {
			env("github-token-env", gh.TokenEnv, "the GitHub token (`--github-token-file`, or a GitHub App)")
		}
	case "gitlab":
		if gl.TokenFile == "" {
			env("gitlab-token-env", gl.TokenEnv, "the GitLab token (`--gitlab-token-file`)")
		}
	}
	if pc := o.Usage.Prometheus; pc.URL != "" && pc.BearerTokenEnv != "" && pc.BearerTokenFile == "" {
		env("prometheus-token-env", pc.BearerTokenEnv, "the Prometheus bearer token")
	}
	return errs
}

func readableFile(path string) error {
	f, err := os.Open(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err // the path is in the message already
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	return nil
}

// newCmdConfig is `config validate` and `config print`: run's own flags
// and checks, with what run does replaced, so that a config is judged
// exactly as run would judge it.
func newCmdConfig(io streams, logger func() (*slog.Logger, error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config <command>",
		Short: "Check a config file for run, or print the configuration run would use",
		Long: "A config file holds run's settings in YAML; every setting is also a flag of run and an\n" +
			"environment variable RECOMMENDER_<FLAG> (e.g. RECOMMENDER_PROMETHEUS_URL; lists comma-separated, \\, for a\n" +
			"comma inside an item; a variable set but empty empties a string or a list). plan reads the same file.\n" +
			"A flag wins over the environment, the environment over the file, the file over the default.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var checkFiles bool
	validate := newCmdRun(io, logger, func(ctx context.Context, o *runOptions) error {
		if o.Config == "" {
			return config.FlagErrorf("`--config` is required")
		}
		if err := checkPlanKeys(io, o.Config); err != nil {
			return err
		}
		if checkFiles {
			if err := checkFileSettings(ctx, o); err != nil {
				return explain(o.effective, err)
			}
		}
		_, err := fmt.Fprintf(io.Out, "%s: valid\n", o.Config)
		return err
	})
	validate.Use = "validate --config FILE [run flags]"
	validate.Short = "Check a config file for run without running"
	validate.Long = "validate reads a config file strictly, with the environment and any flags given, and checks\n" +
		"the result as run does: unknown keys, values of the wrong type and settings that do not go\n" +
		"together are errors naming the key and its line. Nothing is cloned, queried or written."
	validate.Example = "  recommender config validate --config recommender.yaml\n" +
		"  recommender config validate --config /etc/recommender/config.yaml --check-files   # where it runs, secrets mounted"
	validate.Flags().BoolVar(&checkFiles, "check-files", false, "also check that every file a setting names (tokens, keys, CA, the recording, the kubeconfig) is a readable file here, "+
		"--repo a directory, and the forge's token (and Prometheus's, when a variable holds it) there: where the job runs, with its secrets mounted")
	printCmd := newCmdRunOr(io, logger, func(_ context.Context, o *runOptions) error {
		return o.effective.Write(io.Out)
	}, func(o *runOptions, refusal error) error {
		// Shown all the same: without --repo, the defaults are what a
		// newcomer wants to see. What is missing goes to stderr.
		if err := o.effective.Write(io.Out); err != nil {
			return err
		}
		_, err := fmt.Fprintf(io.Err, "note: run would refuse this configuration as it is:\n%v\n", refusal)
		return err
	})
	printCmd.Use = "print [--config FILE] [run flags]"
	printCmd.Short = "Print the configuration run would use, and where each value comes from"
	printCmd.Long = "print shows the effective configuration (flag > environment > file > default) as a config\n" +
		"file, each value commented with its source, which config validate and the chart's schema accept.\n" +
		"Settings run would refuse (no --repo, say) are printed all the same, and the refusal said on stderr.\n" +
		"It holds no secret: tokens are read from files or variables the config names, and a password in\n" +
		"a URL or a credential header is redacted."
	printCmd.Example = "  recommender config print --config recommender.yaml\n" +
		"  RECOMMENDER_DRY_RUN=true recommender config print --config recommender.yaml --max-new 2"
	cmd.AddCommand(validate, printCmd)
	return cmd
}
