package deploy_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/patcher/helm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// headroom is what the chart leaves of the memory limit for what Go does
// not count: the program's code, the page cache of the clone.
const headroom = 64 << 20

// jobMemory is the memory limit and GOMEMLIMIT the chart gives the job
// with vals.
func jobMemory(t *testing.T, vals map[string]any) (limit int64, gomemlimit string) {
	t.Helper()
	c := render(t, vals).CronJob.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			require.Empty(t, gomemlimit, "one GOMEMLIMIT")
			gomemlimit = e.Value
		}
	}
	return c.Resources.Limits.Memory().Value(), gomemlimit
}

// TestChartGOMEMLIMIT: the chart sets GOMEMLIMIT from the container's
// memory limit, leaving the Helm render child its RenderMemory and the
// headroom; a limit too small for that, or written so that the chart
// cannot read it, is refused before anything renders. The defaults give
// 320 MiB, and so 8 MiB of YAML a run may read (checkout.TotalBound).
func TestChartGOMEMLIMIT(t *testing.T) {
	limit, got := jobMemory(t, readValues(t, minimalSet))
	require.Equal(t, int64(512<<20), limit, "the chart's default memory limit")
	require.Equal(t, "320MiB", got)
	require.Equal(t, limit, int64(320<<20+helm.RenderMemory+headroom), "GOMEMLIMIT, the render child and the headroom fill the limit")
	old := debug.SetMemoryLimit(320 << 20)
	require.Equal(t, int64(8<<20), checkout.TotalBound(), "what the values' comment says")
	debug.SetMemoryLimit(old)

	tests := []struct {
		name      string
		resources map[string]any
		want, err string
	}{
		{name: "binary units", resources: map[string]any{"limits": map[string]any{"memory": "1Gi"}}, want: "832MiB"},
		{name: "a fraction", resources: map[string]any{"limits": map[string]any{"memory": "0.5Gi"}}, want: "320MiB"},
		{name: "decimal units", resources: map[string]any{"limits": map[string]any{"memory": "2G"}}, want: "1715MiB"},
		{name: "bytes", resources: map[string]any{"limits": map[string]any{"memory": 536870912}}, want: "320MiB"},
		{name: "no limit", resources: map[string]any{"limits": nil, "requests": map[string]any{"memory": "128Mi"}}},
		{name: "too small", resources: map[string]any{"limits": map[string]any{"memory": "256Mi"}}, err: "resources.limits.memory 256Mi is too small: a run needs 320Mi at least"},
		{name: "an exponent", resources: map[string]any{"limits": map[string]any{"memory": "1e9"}}, err: `resources.limits.memory "1e9": write it as bytes, or with Ki, Mi, Gi, Ti, k, M, G or T`},
	}
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := readValues(t, minimalSet)
			vals["resources"] = tt.resources
			if tt.err != "" {
				top, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, nil)
				require.NoError(t, err)
				_, err = engine.Render(ch, top)
				require.ErrorContains(t, err, tt.err)
				return
			}
			_, got := jobMemory(t, vals)
			require.Equal(t, tt.want, got)
		})
	}
	t.Run("the user's own", func(t *testing.T) {
		vals := readValues(t, minimalSet)
		vals["extraEnv"] = []any{map[string]any{"name": "GOMEMLIMIT", "value": "300MiB"}}
		_, got := jobMemory(t, vals)
		require.Equal(t, "300MiB", got)
	})
}

// TestJobSurvivesHostileInput runs the tool's binary, as the chart runs
// it, inside a memory cgroup of the chart's default limit and with its
// GOMEMLIMIT, on a repository and a Prometheus server that each try to
// exhaust its memory: charts whose templates allocate gigabytes, a
// kustomization whose build takes minutes, YAML just under the run's
// bound, and an answer that is a gzip bomb of one label value. Each is a
// problem naming it, the run ends by itself, and the kernel killed
// nothing. A repository past the bound is refused whole, naming the file.
func TestJobSurvivesHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it for a minute")
	}
	if runtime.GOOS != "linux" {
		t.Skip("memory cgroups are Linux's")
	}
	git := testenv.LookPath(t, "git")
	vals := readValues(t, minimalSet)
	limit, gomemlimit := jobMemory(t, vals)
	testenv.NewMemoryCgroup(t, limit) // skips here, before the build, where there is none

	bin := filepath.Join(t.TempDir(), "recommender")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/recommender")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	bomb := gzipBomb(t)
	base := quickstart(t)
	hostile := maps.Clone(base)
	for name, tpl := range map[string]string{
		"repeat-600m":   `x: {{ repeat 600000000 "x" }}`,
		"repeat-2g":     `x: {{ repeat 2000000000 "x" }}`,
		"a-long-list":   `{{ $s := list }}{{ range until 10000000 }}{{ $s = append $s "xxxxxxxx" }}{{ end }}`,
		"chart-renders": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n",
	} {
		hostile["charts/"+name+"/Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"
		hostile["charts/"+name+"/templates/t.yaml"] = tpl
		hostile["argocd/"+name+".yaml"] = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + "}\n" +
			"spec:\n  destination: {namespace: inference}\n  source: {path: charts/" + name + "}\n"
	}
	hostile["slow/kustomization.yaml"] = "resources: [cms.yaml]\n"
	hostile["slow/cms.yaml"] = configMaps("slow", 12000, 0) // minutes to build, on any machine
	used := 0
	for _, b := range hostile {
		used += len(b)
	}
	hostile["big/configmaps.yaml"] = configMaps("big", 1<<30, 8<<20-used-64<<10)

	run := func(t *testing.T, files map[string]string) (int, string) {
		repo := gitRepo(t, git, files)
		cg := testenv.NewMemoryCgroup(t, limit)
		cmd := cg.Command(bin, "run", "--scm", "local", "--repo", repo, "--base", "main", "--prometheus-url", bomb, "--prometheus-timeout", "30s")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(), "GOMEMLIMIT=" + gomemlimit}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("ran in %v, the group's peak %d MiB, exit %v", time.Since(start).Round(time.Second), cg.Peak()>>20, err)
		require.Zero(t, cg.OOMKills(), "the kernel killed nothing in the job's memory:\n%s", stderr.String())
		require.True(t, cmd.ProcessState.Exited(), "the run ended by itself: %v", err)
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	t.Run("hostile input within the bounds", func(t *testing.T) {
		code, stderr := run(t, hostile)
		require.Equal(t, 3, code, "problems, and the run went on:\n%s", stderr)
		for _, want := range []string{
			"argocd/repeat-600m.yaml:1: helm: Application repeat-600m: chart charts/repeat-600m: rendering stopped: more than",
			"argocd/repeat-2g.yaml:1: helm: Application repeat-2g: chart charts/repeat-2g: rendering stopped: more than",
			"argocd/a-long-list.yaml:1: helm: Application a-long-list: chart charts/a-long-list: rendering stopped: more than",
			"slow/kustomization.yaml: kustomize: build slow: build stopped: not done within 30s",
			"a string or number longer than 4 MiB",
		} {
			require.Contains(t, stderr, want)
		}
		require.NotContains(t, stderr, "argocd/chart-renders.yaml", "the chart beside them renders")
	})
	t.Run("a repository past the bound", func(t *testing.T) {
		files := maps.Clone(base)
		files["big/a.yaml"] = configMaps("a", 1<<30, 5<<20)
		files["big/b.yaml"] = configMaps("b", 1<<30, 5<<20)
		code, stderr := run(t, files)
		require.Equal(t, 1, code, stderr)
		require.Contains(t, stderr, "big/b.yaml: file too large: the checkout's YAML files pass 8 MiB together here")
	})
}

// quickstart is the files of the quickstart's repository.
func quickstart(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	dir := filepath.Join(root, "examples", "quickstart")
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	require.NoError(t, err)
	return files
}

// configMaps is n small ConfigMaps, or as many as fill size bytes.
func configMaps(prefix string, n, size int) string {
	var b strings.Builder
	for i := 0; i < n && (size == 0 || b.Len() < size-100); i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s-%d, namespace: x}\ndata: {k: v}\n", prefix, i)
	}
	return b.String()
}

// gitRepo commits files on branch main of a new repository.
func gitRepo(t *testing.T, git string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "gitops"}} {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	return dir
}

// gzipBomb serves every query a gzip bomb: an answer whose first label
// value is 2 GiB of x, from 8 MiB on the wire.
func gzipBomb(t *testing.T) string {
	t.Helper()
	var member bytes.Buffer
	zw, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(bytes.Repeat([]byte("x"), 16<<20))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	var head bytes.Buffer
	hw := gzip.NewWriter(&head)
	fmt.Fprint(hw, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"`)
	require.NoError(t, hw.Close())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		if _, err := w.Write(head.Bytes()); err != nil {
			return
		}
		for range 128 {
			if _, err := w.Write(member.Bytes()); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
