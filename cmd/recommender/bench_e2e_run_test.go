package main

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// The children of BenchmarkE2ERunLocal run `recommender run` with the
// arguments this holds, separated by newlines.
const e2eArgsEnv = "RECOMMENDER_BENCH_E2E_ARGS"

// e2eAt is when the generated recording is evaluated: the quickstart's.
const e2eAt = "2026-11-30T12:00:00Z"

// TestE2EChild is a child process of BenchmarkE2ERunLocal, and nothing in
// a test run: it runs the CLI's Main with the arguments it is given, as
// the recommender binary would.
func TestE2EChild(t *testing.T) {
	if testenv.E2EChild() == "" {
		t.Skip("a child of BenchmarkE2ERunLocal")
	}
	var errOut bytes.Buffer
	if code := Main(strings.Split(os.Getenv(e2eArgsEnv), "\n"), io.Discard, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}

// e2eRepo is a generated GitOps repository of n GPU Deployments, each the
// quickstart's chat under its own name in a file of its own, with the
// quickstart's policies, and a recording of one pod of each at chat's
// usage, so that every Deployment gets a change and a pull request.
type e2eRepo struct {
	// template is the repository, committed on main; each round copies it.
	template string
	metrics  string
	n        int
}

func e2eName(i int) string { return fmt.Sprintf("w%04d", i) }

func newE2ERepo(b testing.TB, n int) *e2eRepo {
	b.Helper()
	const qs = "../../examples/quickstart"
	dir := b.TempDir()
	r := &e2eRepo{template: filepath.Join(dir, "repo"), metrics: filepath.Join(dir, "metrics.om"), n: n}
	chat, err := os.ReadFile(filepath.Join(qs, "apps", "chat", "deployment.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	policies, err := os.ReadFile(filepath.Join(qs, "policies", "kai-gpu-sharing.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	write := func(path string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(filepath.Join(r.template, "policies", "kai-gpu-sharing.yaml"), policies)
	for i := range n {
		write(filepath.Join(r.template, "apps", e2eName(i), "deployment.yaml"), bytes.ReplaceAll(chat, []byte("chat"), []byte(e2eName(i))))
	}
	git := gitIn(b, r.template)
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "initial")
	write(r.metrics, e2eRecording(b, filepath.Join(qs, "metrics.om"), n))
	return r
}

// e2eRecording is the quickstart's recording with chat's first pod's
// series (and its ReplicaSet's) once for each of n Deployments, family
// by family as OpenMetrics wants.
func e2eRecording(b testing.TB, path string, n int) []byte {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	var family []string
	flush := func() {
		for i := range n {
			for _, line := range family {
				line = strings.ReplaceAll(line, "chat-7c9d8b5f6d", e2eName(i)+"-7c9d8b5f6d")
				out.WriteString(strings.ReplaceAll(line, `owner_name="chat"`, `owner_name="`+e2eName(i)+`"`) + "\n")
			}
		}
		family = family[:0]
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# TYPE"):
			flush()
			out.WriteString(line + "\n")
		case strings.HasPrefix(line, "#"):
			if line != "# EOF" {
				out.WriteString(line + "\n")
			}
		case strings.Contains(line, "chat-7c9d8b5f6d-x2k4q") || strings.Contains(line, `replicaset="chat-7c9d8b5f6d"`):
			family = append(family, line)
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	flush()
	out.WriteString("# EOF\n")
	return out.Bytes()
}

// gitIn runs git in dir, as a person with no configuration of their own.
func gitIn(b testing.TB, dir string) func(args ...string) string {
	gitBin := testenv.LookPath(b, "git")
	return func(args ...string) string {
		b.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = dir
		cmd.Env = e2eGitEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

func e2eGitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com")
}

// copy is a fresh copy of the repository, for one round.
func (r *e2eRepo) copy(b *testing.B) string {
	b.Helper()
	dst := filepath.Join(b.TempDir(), "repo")
	if out, err := exec.Command("cp", "-a", r.template, dst).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v: %s", err, out)
	}
	return dst
}

// run is the tool's child: `recommender run --scm local` on repo, with
// extra arguments.
func (r *e2eRepo) run(repo string, extra ...string) *exec.Cmd {
	args := append([]string{"run", "--scm", "local", "--repo", repo, "--metrics-file", r.metrics, "--at", e2eAt,
		"--output", "json", "--log-level", "error"}, extra...)
	return testenv.Child("run", "TestE2EChild", e2eArgsEnv+"="+strings.Join(args, "\n"))
}

// plan is `recommender plan` of repo, in a child.
func (r *e2eRepo) plan(repo string) *exec.Cmd {
	args := []string{"plan", "--repo", repo, "--metrics-file", r.metrics, "--at", e2eAt, "-o", "json", "--log-level", "error"}
	return testenv.Child("plan", "TestE2EChild", e2eArgsEnv+"="+strings.Join(args, "\n"))
}

// e2eLoop is the limit: git's plumbing writing the same commits and
// branches, one a branch, each file as the tool edited it: the new blob,
// a temporary index of the base with the one path replaced (and the
// previous branch's path put back), its tree, a commit on the base, the
// branch created only if it does not exist. Each step is a git process,
// as a script would run them.
const e2eLoop = `set -eu
cd "$1"
export GIT_INDEX_FILE="$2/index"
base=$(git rev-parse refs/heads/main)
git read-tree "$base"
prev=""
while read -r name old file; do
	blob=$(git hash-object -w "$file")
	{ if [ -n "$prev" ]; then printf '%s\n' "$prev"; fi; printf '100644 %s\tapps/%s/deployment.yaml\n' "$blob" "$name"; } | git update-index --index-info
	tree=$(git write-tree)
	commit=$(git commit-tree "$tree" -p "$base" -m "rightsize $name")
	git update-ref "refs/heads/gpu-rightsizing/inference/$name" "$commit" ""
	prev=$(printf '100644 %s\tapps/%s/deployment.yaml' "$old" "$name")
done < "$2/list"
`

// loopInputs writes, from a repository the tool ran on, the files the
// loop commits: each branch's edited file and the list of them, with each
// path's blob in the base.
func (r *e2eRepo) loopInputs(b *testing.B, ran string) string {
	b.Helper()
	dir := b.TempDir()
	git := gitIn(b, ran)
	var list strings.Builder
	for i := range r.n {
		name := e2eName(i)
		path := "apps/" + name + "/deployment.yaml"
		edited := git("show", "refs/heads/gpu-rightsizing/inference/"+name+":"+path)
		base, err := os.ReadFile(filepath.Join(r.template, filepath.FromSlash(path)))
		if err != nil {
			b.Fatal(err)
		}
		if edited+"\n" == string(base) {
			b.Fatalf("%s: the tool did not change it", name)
		}
		file := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(file, []byte(edited+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&list, "%s %x %s\n", name, sha1.Sum(fmt.Appendf(nil, "blob %d\x00%s", len(base), base)), file)
	}
	if err := os.WriteFile(filepath.Join(dir, "list"), []byte(list.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

func (r *e2eRepo) loop(repo, inputs string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", e2eLoop, "loop", repo, inputs)
	cmd.Env = e2eGitEnv()
	return cmd
}

// branches counts the tool's branches of repo, to check that a run made
// every one.
func branches(b *testing.B, repo string) int {
	b.Helper()
	out := gitIn(b, repo)("for-each-ref", "--format=%(refname)", "refs/heads/gpu-rightsizing/")
	return len(strings.Fields(out))
}

// e2eSize is one size the benchmark runs, and what it measured of it.
type e2eSize struct {
	repo                     *e2eRepo
	inputs                   string
	run, loop, dry, planOnly []time.Duration
	rss                      []int64
	ratios                   []float64
}

// BenchmarkE2ERunLocal is the publishing row of the end-to-end table:
// `recommender run --scm local` on a generated repository whose 50 and
// 500 Deployments all change (RECOMMENDER_BENCH_E2E_WORKLOADS sets the
// larger size), one pull request each, against the limit of git's
// plumbing writing the same branches (e2eLoop), each in a process of its
// own, one round an iteration (-benchtime 3x: three). It reports the
// median CPU ratio at the larger size, the CPU exponent between the sizes
// (log of the CPU ratio of the sizes over the log of their ratio), and,
// at the larger size, the dry run's and the plan's CPU, which say how much
// of the run is planning rather than publishing; it fails when the ratio
// or the exponent is more than a third above testdata/bench-e2e.json.
// `make bench-e2e` runs it.
func BenchmarkE2ERunLocal(b *testing.B) {
	testenv.SkipUnlessE2E(b)
	large := 500
	if v := os.Getenv("RECOMMENDER_BENCH_E2E_WORKLOADS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 20 {
			b.Fatalf("RECOMMENDER_BENCH_E2E_WORKLOADS=%q: want a number of workloads, 20 or more", v)
		}
		large = n
	}
	sizes := []*e2eSize{{repo: newE2ERepo(b, large/10)}, {repo: newE2ERepo(b, large)}}
	for _, s := range sizes {
		ran := s.repo.copy(b)
		testenv.Measure(b, s.repo.run(ran))
		if got := branches(b, ran); got != s.repo.n {
			b.Fatalf("%d workloads: the run made %d branches", s.repo.n, got)
		}
		s.inputs = s.repo.loopInputs(b, ran)
	}
	for b.Loop() {
		for _, s := range sizes {
			repo := s.repo.copy(b)
			t := testenv.Measure(b, s.repo.run(repo))
			lp := s.repo.copy(b)
			l := testenv.Measure(b, s.repo.loop(lp, s.inputs))
			if got := branches(b, lp); got != s.repo.n {
				b.Fatalf("%d workloads: the loop made %d branches", s.repo.n, got)
			}
			s.run, s.loop, s.rss = append(s.run, t.CPU), append(s.loop, l.CPU), append(s.rss, t.MaxRSS)
			s.ratios = append(s.ratios, float64(t.CPU)/float64(l.CPU))
		}
		big := sizes[1]
		dry := testenv.Measure(b, big.repo.run(big.repo.copy(b), "--dry-run"))
		pl := testenv.Measure(b, big.repo.plan(big.repo.copy(b)))
		big.dry, big.planOnly = append(big.dry, dry.CPU), append(big.planOnly, pl.CPU)
	}
	small, big := sizes[0], sizes[1]
	ratio := testenv.Median(big.ratios)
	exponent := math.Log(float64(testenv.Median(big.run))/float64(testenv.Median(small.run))) / math.Log(float64(big.repo.n)/float64(small.repo.n))
	loopExponent := math.Log(float64(testenv.Median(big.loop))/float64(testenv.Median(small.loop))) / math.Log(float64(big.repo.n)/float64(small.repo.n))
	perBranch := (testenv.Median(big.run) - testenv.Median(big.dry)) / time.Duration(big.repo.n)
	b.ReportMetric(ratio, "cpu-ratio")
	b.ReportMetric(exponent, "cpu-exponent")
	b.ReportMetric(loopExponent, "loop-exponent")
	b.ReportMetric(float64(testenv.Median(big.rss))/(1<<20), "rss-MiB")
	b.ReportMetric(float64(perBranch)/1e6, "publish-ms/branch")
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), map[string]float64{
		"run-local-cpu-ratio": ratio, "run-local-cpu-exponent": exponent})
	var rows strings.Builder
	for _, s := range sizes {
		fmt.Fprintf(&rows, "| %d | %.2f s | %.2f s | **%.2f×** | %.0f ms | %.1f ms | %.0f MiB |\n", s.repo.n,
			testenv.Median(s.run).Seconds(), testenv.Median(s.loop).Seconds(), testenv.Median(s.ratios),
			float64(testenv.Median(s.run).Milliseconds())/float64(s.repo.n), float64(testenv.Median(s.loop).Microseconds())/1e3/float64(s.repo.n),
			float64(testenv.Median(s.rss))/(1<<20))
	}
	testenv.WriteSection(b, filepath.Join("..", "..", "docs", "benchmarks", "speed.md"), "run-local", fmt.Sprintf(
		"| changed workloads | `run --scm local` CPU | plumbing loop CPU | **CPU ratio** | run per branch | loop per branch | peak RSS |\n"+
			"|---:|---:|---:|---:|---:|---:|---:|\n%s\n"+
			"CPU exponent from %d to %d workloads: **%.2f** (the loop's: %.2f). At %d: `run --dry-run` %.2f s, `plan` %.2f s of CPU; "+
			"the commits, the one push and the pull requests' files, the run less its dry run: %.2f s, %.1f ms a branch.\n",
		rows.String(), small.repo.n, big.repo.n, exponent, loopExponent, big.repo.n,
		testenv.Median(big.dry).Seconds(), testenv.Median(big.planOnly).Seconds(),
		(testenv.Median(big.run)-testenv.Median(big.dry)).Seconds(), float64(perBranch)/1e6))
}
