// Command release makes a release's artifacts beside the binaries that
// scripts/release.sh built into a directory (release -version V -dir D
// binary...): an SPDX SBOM per binary, the
// chart packaged with the release's version, and checksums.txt over them
// all. `make release` runs it; it is no part of the recommender.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/release"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	version := fs.String("version", "", "the release's version, as stamped into the binaries")
	dir := fs.String("dir", "dist", "the directory holding the binaries, where the artifacts go")
	chart := fs.String("chart", "charts/recommender", "the chart to package")
	created := fs.String("created", "", "the artifacts' date, Unix seconds (default: $SOURCE_DATE_EPOCH, else now)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" {
		return errors.New("-version is required")
	}
	at, err := date(*created)
	if err != nil {
		return err
	}
	var names []string
	for _, name := range fs.Args() {
		bin := filepath.Join(*dir, name)
		sbom, err := release.SBOM(release.Binary{Path: bin, Version: *version}, at)
		if err != nil {
			return err
		}
		if err := os.WriteFile(bin+".spdx.json", sbom, 0o644); err != nil {
			return err
		}
		names = append(names, filepath.Base(bin), filepath.Base(bin)+".spdx.json")
	}
	if len(names) == 0 {
		return errors.New("name the binaries in -dir, as arguments")
	}
	pkg, err := release.PackageChart(*chart, *dir, *version, at)
	if err != nil {
		return err
	}
	names = append(names, filepath.Base(pkg))
	var sums bytes.Buffer
	if err := release.Checksums(&sums, *dir, names); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "checksums.txt"), sums.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Print(sums.String())
	return nil
}

// date reads Unix seconds; empty: $SOURCE_DATE_EPOCH, the convention of
// reproducible builds, else now.
func date(s string) (time.Time, error) {
	if s == "" {
		s = os.Getenv("SOURCE_DATE_EPOCH")
	}
	if s == "" {
		return time.Now().UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("-created %q: want Unix seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}
