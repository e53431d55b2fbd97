package main

import (
	"bufio"
	"bytes"
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

// fastImportStream writes, from a repository the tool ran on, the limit's
// input: a git fast-import stream of the same commits, each branch's
// edited file as a blob and a commit on the base that changes that one
// path, its branch created. Reading the branches back is not timed; only
// the fast-import process is.
func (r *e2eRepo) fastImportStream(b *testing.B, ran string) string {
	b.Helper()
	git := gitIn(b, ran)
	base := git("rev-parse", "refs/heads/main")
	// The edited files, read by one git process.
	var spec strings.Builder
	for i := range r.n {
		name := e2eName(i)
		fmt.Fprintf(&spec, "refs/heads/gpu-rightsizing/inference/%s:apps/%s/deployment.yaml\n", name, name)
	}
	cat := exec.Command(testenv.LookPath(b, "git"), "cat-file", "--batch")
	cat.Dir, cat.Env, cat.Stdin = ran, e2eGitEnv(), strings.NewReader(spec.String())
	blobs, err := cat.Output()
	if err != nil {
		b.Fatalf("git cat-file: %v", err)
	}
	var out bytes.Buffer
	for i := range r.n {
		name := e2eName(i)
		path := "apps/" + name + "/deployment.yaml"
		var hash, kind string
		var size int
		nl := bytes.IndexByte(blobs, '\n')
		if _, err := fmt.Sscan(string(blobs[:max(nl, 0)]), &hash, &kind, &size); err != nil || kind != "blob" {
			b.Fatalf("%s: git cat-file said %q", name, blobs[:max(nl, 0)])
		}
		edited := blobs[nl+1 : nl+1+size]
		blobs = blobs[nl+1+size+1:]
		was, err := os.ReadFile(filepath.Join(r.template, filepath.FromSlash(path)))
		if err != nil {
			b.Fatal(err)
		}
		if bytes.Equal(edited, was) {
			b.Fatalf("%s: the tool did not change it", name)
		}
		msg := "rightsize " + name + "\n"
		fmt.Fprintf(&out, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(edited), edited)
		fmt.Fprintf(&out, "commit refs/heads/gpu-rightsizing/inference/%s\ncommitter p <p@example.com> 1800000000 +0000\ndata %d\n%s", name, len(msg), msg)
		fmt.Fprintf(&out, "from %s\nM 100644 :%d %s\n\n", base, i+1, path)
	}
	file := filepath.Join(b.TempDir(), "stream")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return file
}

// fastImport is the limit: `git fast-import` of the stream into repo.
func fastImport(b *testing.B, repo, stream string) *exec.Cmd {
	f, err := os.Open(stream)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	cmd := exec.Command(testenv.LookPath(b, "git"), "fast-import", "--quiet")
	cmd.Dir, cmd.Env, cmd.Stdin = repo, e2eGitEnv(), f
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
	repo              *e2eRepo
	stream            string
	run, limit, dry   []time.Duration
	rss, limitRSS     []int64
	ratios, pubRatios []float64
}

// BenchmarkE2ERunLocal is the publishing row of the end-to-end table:
// `recommender run --scm local` on a generated repository whose 500,
// 2,000 and 10,000 Deployments all change (RECOMMENDER_BENCH_E2E_WORKLOADS
// sets the largest size), one pull request each, against the limit of
// `git fast-import` writing the same commits and branches, each in a
// process of its own. An iteration is a round of the two smaller sizes
// (-benchtime 3x: three); the largest runs in the first round only, as
// one round of it costs minutes. Each round also runs `run --dry-run`,
// so that publishing alone (the run less its dry run) is set against the
// limit too. It reports the median CPU ratios at the largest size and the
// CPU exponent from the smallest to the largest; it fails when one is
// outside its tolerance of testdata/bench-e2e.json (testenv.Departure).
// `make bench-e2e` runs it.
func BenchmarkE2ERunLocal(b *testing.B) {
	testenv.SkipUnlessE2E(b)
	largest := 10000
	if v := os.Getenv("RECOMMENDER_BENCH_E2E_WORKLOADS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 2000 {
			b.Fatalf("RECOMMENDER_BENCH_E2E_WORKLOADS=%q: want a number of workloads above 2,000", v)
		}
		largest = n
	}
	var sizes []*e2eSize
	for _, n := range []int{500, 2000, largest} {
		sizes = append(sizes, &e2eSize{repo: newE2ERepo(b, n)})
	}
	round := 0
	for b.Loop() {
		for _, s := range sizes {
			if s.repo.n == largest && round > 0 {
				continue
			}
			repo := s.repo.copy(b)
			t := testenv.Measure(b, s.repo.run(repo))
			if got := branches(b, repo); got != s.repo.n {
				b.Fatalf("%d workloads: the run made %d branches", s.repo.n, got)
			}
			if s.stream == "" {
				// The limit writes what the tool wrote in its first round.
				s.stream = s.repo.fastImportStream(b, repo)
			}
			lp := s.repo.copy(b)
			l := testenv.Measure(b, fastImport(b, lp, s.stream))
			if got := branches(b, lp); got != s.repo.n {
				b.Fatalf("%d workloads: fast-import made %d branches", s.repo.n, got)
			}
			dry := testenv.Measure(b, s.repo.run(s.repo.copy(b), "--dry-run"))
			for _, dir := range []string{repo, lp} {
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
			}
			s.run, s.limit, s.dry = append(s.run, t.CPU), append(s.limit, l.CPU), append(s.dry, dry.CPU)
			s.rss, s.limitRSS = append(s.rss, t.MaxRSS), append(s.limitRSS, l.MaxRSS)
			s.ratios = append(s.ratios, float64(t.CPU)/float64(l.CPU))
			s.pubRatios = append(s.pubRatios, float64(t.CPU-dry.CPU)/float64(l.CPU))
		}
		round++
	}
	small, big := sizes[0], sizes[len(sizes)-1]
	exp := func(of func(*e2eSize) time.Duration) float64 {
		return math.Log(float64(of(big))/float64(of(small))) / math.Log(float64(big.repo.n)/float64(small.repo.n))
	}
	runCPU := func(s *e2eSize) time.Duration { return testenv.Median(s.run) }
	limitCPU := func(s *e2eSize) time.Duration { return testenv.Median(s.limit) }
	pubCPU := func(s *e2eSize) time.Duration { return testenv.Median(s.run) - testenv.Median(s.dry) }
	exponent, limitExponent, pubExponent := exp(runCPU), exp(limitCPU), exp(pubCPU)
	ratio, pubRatio := testenv.Median(big.ratios), testenv.Median(big.pubRatios)
	b.ReportMetric(ratio, "cpu-ratio")
	b.ReportMetric(pubRatio, "publish-ratio")
	b.ReportMetric(exponent, "cpu-exponent")
	b.ReportMetric(limitExponent, "fast-import-exponent")
	b.ReportMetric(float64(testenv.Median(big.rss))/(1<<20), "rss-MiB")
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), map[string]float64{
		"run-local-fast-import-ratio": ratio, "run-local-publish-ratio": pubRatio, "run-local-exponent": exponent})
	var rows strings.Builder
	for _, s := range sizes {
		n := float64(s.repo.n)
		fmt.Fprintf(&rows, "| %d | %d | %.2f s | %.2f s | **%.2f×** | %.2f s | **%.2f×** | %.2f ms | %.2f ms | %.0f MiB | %.0f MiB |\n",
			s.repo.n, len(s.run), runCPU(s).Seconds(), limitCPU(s).Seconds(), testenv.Median(s.ratios),
			pubCPU(s).Seconds(), testenv.Median(s.pubRatios),
			float64(runCPU(s).Microseconds())/1e3/n, float64(limitCPU(s).Microseconds())/1e3/n,
			float64(testenv.Median(s.rss))/(1<<20), float64(testenv.Median(s.limitRSS))/(1<<20))
	}
	testenv.WriteSection(b, filepath.Join("..", "..", "docs", "benchmarks", "speed.md"), "run-local", fmt.Sprintf(
		"| changed workloads | rounds | `run --scm local` CPU | `git fast-import` CPU | **CPU ratio** | run less its dry run | **its ratio** | run per branch | fast-import per branch | peak RSS | fast-import RSS |\n"+
			"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n%s\n"+
			"CPU exponent from %d to %d workloads: **%.2f** for the run, %.2f for publishing alone (the run less its dry run), "+
			"%.2f for `git fast-import`. The dry run reads, plans and decides; the rest is the commits, the branches and the pull requests' files.\n",
		rows.String(), small.repo.n, big.repo.n, exponent, pubExponent, limitExponent))
}
