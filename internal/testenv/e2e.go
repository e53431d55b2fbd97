package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The end-to-end benchmarks (`make bench-e2e`) measure a stage of the tool
// and the physical limit for the same work, each in a process of its own,
// in the same run: they are too long for `make bench`.
const (
	// E2EEnv turns them on.
	E2EEnv = "RECOMMENDER_BENCH_E2E"
	// E2EWriteEnv makes them write what they measured: the committed
	// figures and docs/benchmarks/speed.md's section of each.
	E2EWriteEnv = "RECOMMENDER_BENCH_E2E_WRITE"
	// e2eChildEnv names the child a test binary runs as.
	e2eChildEnv = "RECOMMENDER_BENCH_E2E_CHILD"
)

// SkipUnlessE2E skips an end-to-end benchmark unless E2EEnv is set.
func SkipUnlessE2E(tb testing.TB) {
	tb.Helper()
	if os.Getenv(E2EEnv) == "" {
		tb.Skipf("set %s=1 (make bench-e2e): it writes gigabytes and runs for minutes", E2EEnv)
	}
}

// Cost is what one process took: CPU time, user and system, of every
// thread, and its peak resident memory.
type Cost struct {
	CPU    time.Duration
	MaxRSS int64 // bytes
	// Out is what it wrote on stdout.
	Out string
}

// Measure runs cmd to its end and returns its cost; a failure fails tb.
// It starts cmd through the rusage command, built once per benchmark, so
// that the peak RSS is cmd's own and not this test process's (see
// internal/testenv/rusage).
func Measure(tb testing.TB, cmd *exec.Cmd) Cost {
	tb.Helper()
	if cmd.Err != nil {
		tb.Fatalf("%s: %v", strings.Join(cmd.Args, " "), cmd.Err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	meter := exec.Command(rusage(tb), append([]string{cmd.Path}, cmd.Args[1:]...)...)
	meter.Env, meter.Dir, meter.Stdin = cmd.Env, cmd.Dir, cmd.Stdin
	meter.ExtraFiles = []*os.File{w}
	var out, errOut bytes.Buffer
	meter.Stdout, meter.Stderr = &out, &errOut
	err = meter.Run()
	w.Close()
	if err != nil {
		tb.Fatalf("%s: %v\n%s%s", strings.Join(cmd.Args, " "), err, out.String(), errOut.String())
	}
	report, err := io.ReadAll(r)
	if err != nil {
		tb.Fatal(err)
	}
	var cpu, maxRSS int64
	if _, err := fmt.Sscanf(string(report), "%d %d", &cpu, &maxRSS); err != nil {
		tb.Fatalf("%s: the rusage report %q: %v", cmd.Args[0], report, err)
	}
	return Cost{
		CPU:    time.Duration(cpu),
		MaxRSS: maxRSS << 10, // Linux reports KiB
		Out:    out.String(),
	}
}

// rusage returns the path of the rusage command, building it the first
// time a benchmark asks; the file goes with that benchmark's temporary
// files, and a later benchmark of the same process builds it again.
func rusage(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(os.TempDir(), fmt.Sprintf("recommender-rusage-%d", os.Getpid()))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		tb.Fatalf("the go command builds the rusage command: %v", err)
	}
	cmd := exec.Command(gobin, "build", "-o", bin, "github.com/gpu-rightsizing/recommender/internal/testenv/rusage")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build rusage: %v\n%s", err, out)
	}
	tb.Cleanup(func() { os.Remove(bin) })
	return bin
}

// Child returns a command that runs the test binary again, as the child
// named name: only the test function test runs, and E2EChild returns name
// in it.
func Child(name, test string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v=false")
	cmd.Env = append(append(os.Environ(), e2eChildEnv+"="+name), env...)
	return cmd
}

// E2EChild returns the name of the child this test binary runs as, ""
// when it is no child.
func E2EChild() string { return os.Getenv(e2eChildEnv) }

// Median returns the middle of xs (the lower one of an even count).
func Median[T int64 | time.Duration | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// Tolerance is how far a figure may land from the committed one before
// the check fails: a quarter of a ratio, either way, and 0.15 of an
// exponent (keys ending in "-exponent"). The issue that set it asked that
// another 2-core machine land within a quarter. A figure far better than
// the committed one fails too: it would not hold elsewhere either, and
// BENCH_E2E_WRITE=1 commits it.
const (
	ratioTolerance    = 0.25
	exponentTolerance = 0.15
)

// Departure says how got departs from the committed figure was under
// name's tolerance, or "" when it lies within it.
func Departure(name string, got, was float64) string {
	lo, hi := was*(1-ratioTolerance), was*(1+ratioTolerance)
	if strings.HasSuffix(name, "-exponent") {
		lo, hi = was-exponentTolerance, was+exponentTolerance
	}
	switch {
	case got > hi:
		return fmt.Sprintf("%s: %.2f, above the committed %.2f by more than its tolerance (at most %.2f)", name, got, was, hi)
	case got < lo:
		return fmt.Sprintf("%s: %.2f, below the committed %.2f by more than its tolerance (at least %.2f); commit the new figure", name, got, was, lo)
	}
	return ""
}

// CheckFigures fails tb when a figure of got lands outside its tolerance
// of the committed one of the same name in the JSON file at path (see
// Departure). With E2EWriteEnv set it logs the departures instead and
// writes got there. Figures are rounded to hundredths, as they are
// committed. Only ratios and exponents are committed, never seconds.
func CheckFigures(tb testing.TB, path string, got map[string]float64) {
	tb.Helper()
	got = maps.Clone(got)
	for name, v := range got {
		got[name] = math.Round(v*100) / 100
	}
	committed := map[string]float64{}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &committed); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
	case !os.IsNotExist(err):
		tb.Fatal(err)
	}
	write := os.Getenv(E2EWriteEnv) != ""
	for _, name := range slices.Sorted(maps.Keys(got)) {
		was, ok := committed[name]
		if !ok {
			continue
		}
		if d := Departure(name, got[name], was); d != "" {
			if write {
				tb.Logf("%s (%s)", d, path)
			} else {
				tb.Errorf("%s (%s)", d, path)
			}
		}
	}
	if !write {
		return
	}
	// Several benchmarks of a package share its file: each replaces only
	// its own figures.
	maps.Copy(committed, got)
	out, err := json.MarshalIndent(committed, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// WriteSection replaces, with E2EWriteEnv set, the text between the lines
// "<!-- bench-e2e:name -->" and "<!-- /bench-e2e:name -->" of the
// Markdown file at path.
func WriteSection(tb testing.TB, path, name, text string) {
	tb.Helper()
	if os.Getenv(E2EWriteEnv) == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	open, closing := "<!-- bench-e2e:"+name+" -->\n", "<!-- /bench-e2e:"+name+" -->"
	i, j := bytes.Index(b, []byte(open)), bytes.Index(b, []byte(closing))
	if i < 0 || j < i {
		tb.Fatalf("%s has no %q … %q section", path, strings.TrimSpace(open), closing)
	}
	out := fmt.Appendf(nil, "%s%s\n%s", b[:i+len(open)], strings.TrimSuffix(text, "\n"), b[j:])
	if err := os.WriteFile(path, out, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// BuildRecommender builds the command, as `make build` does, into a
// temporary directory of tb and returns its path: the end-to-end rows
// through the CLI run the binary users run.
func BuildRecommender(tb testing.TB) string {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		tb.Fatalf("the go command builds the recommender for this benchmark: %v", err)
	}
	bin := filepath.Join(tb.TempDir(), "recommender")
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", bin, "github.com/gpu-rightsizing/recommender/cmd/recommender")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	// The linker's writes leave the binary in the page cache in large
	// folios, and a run maps whole folios of its own text: `version` peaked
	// at 77-82 MiB so, and at 47 MiB read from disk, and `plan` of 10,000
	// files 27-44 MiB higher. A job's memory limit counts at most the
	// second: pages an image pull wrote are charged to the runtime's
	// cgroup, not the job's. So the binary is read in as a job reads it.
	if err := evict(bin); err != nil {
		tb.Fatalf("drop %s from the page cache: %v", bin, err)
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil {
		tb.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	return bin
}
