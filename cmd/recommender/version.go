package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release this binary was built as. The linker stamps it
// (make build and the image: -ldflags "-X main.version=…"), since a
// reproducible build carries no VCS information; it is never written at
// run time.
var version string

// buildVersion says what this binary is: the stamped version, else what
// the go command recorded (the module version of a `go install
// …@vX.Y.Z`, the commit of a build in a checkout), else "dev".
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if version != "" {
		return version
	}
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "dev-" + rev
}

// toolVersion is this binary's version, as pull request bodies name it.
func toolVersion() string { return buildVersion(debug.ReadBuildInfo()) }

// versionLine is what `recommender version` and `--version` print.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	return fmt.Sprintf("recommender %s (%s, %s/%s)", buildVersion(info, ok), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newCmdVersion(io streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(io.Out, versionLine())
			return err
		},
	}
}
