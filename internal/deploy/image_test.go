package deploy_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/engine"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

const root = "../.."

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Cmd  string // upper case
	Args string
	Line int
}

func readDockerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{Cmd: strings.ToUpper(cmd), Args: strings.Join(strings.Fields(args), " "), Line: start})
		cur.Reset()
	}
	require.NoError(t, sc.Err())
	return out
}

// dockerIgnored reports whether .dockerignore keeps path out of the build
// context. Its patterns here are simple: "*", "!dir/" and globs.
func dockerIgnored(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	require.NoError(t, err)
	ignored := false
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "**") {
			continue
		}
		neg := strings.HasPrefix(line, "!")
		pat := strings.TrimSuffix(strings.TrimPrefix(line, "!"), "/")
		if ok, _ := filepath.Match(pat, path); ok || strings.HasPrefix(path, pat+"/") {
			ignored = !neg
		}
	}
	return ignored
}

var buildFlagsRE = regexp.MustCompile(`(?m)^GO_BUILD_FLAGS := (.*)$`)

// TestDockerfile checks what a Docker engine would find out: every stage
// a COPY names exists, every file copied from the context exists and is
// in the context, the binary the final stage runs is the one the build
// stage builds, and the image runs as the chart's non-root user. The
// build's flags are the Makefile's, so that `make build` is the image's
// binary.
func TestDockerfile(t *testing.T) {
	ins := readDockerfile(t)
	stages := map[string]bool{}
	var last string // the final stage's base image
	var built, copied, entry, user, goImage string
	var goBuild instruction
	for _, in := range ins {
		f := strings.Fields(in.Args)
		switch in.Cmd {
		case "FROM":
			if i := slices.Index(f, "AS"); i >= 0 {
				stages[f[i+1]] = true
				last = f[i-1]
			} else {
				last = f[len(f)-1]
			}
			require.Regexp(t, `@sha256:[0-9a-f]{64}$`, last, "Dockerfile:%d: the base image is pinned by digest", in.Line)
			if strings.HasPrefix(last, "golang:") {
				goImage = last
			}
		case "COPY":
			if from, ok := strings.CutPrefix(f[0], "--from="); ok {
				require.True(t, stages[from], "Dockerfile:%d: COPY --from=%s names no earlier stage", in.Line, from)
				copied, entry = f[1], f[2]
				continue
			}
			for _, src := range f[:len(f)-1] {
				_, err := os.Stat(filepath.Join(root, src))
				require.NoError(t, err, "Dockerfile:%d: COPY %s", in.Line, src)
				require.False(t, dockerIgnored(t, strings.TrimSuffix(src, "/")), "Dockerfile:%d: %s is left out by .dockerignore", in.Line, src)
			}
		case "RUN":
			if strings.Contains(in.Args, "go build") {
				goBuild = in
				m := regexp.MustCompile(`-o (\S+) (\S+)`).FindStringSubmatch(in.Args)
				require.NotNil(t, m)
				built = m[1]
				_, err := os.Stat(filepath.Join(root, m[2]))
				require.NoError(t, err, "Dockerfile:%d: the package it builds", in.Line)
			}
		case "USER":
			user = in.Args
		case "ENTRYPOINT":
			require.Contains(t, in.Args, `"`+entry+`"`, "Dockerfile:%d: the entry point is the binary copied in", in.Line)
		}
	}
	require.Equal(t, built, copied, "the final stage copies the binary the build stage builds")
	require.True(t, strings.HasPrefix(last, "gcr.io/distroless/static"), "the final stage is distroless static, not %s", last)
	require.True(t, strings.HasSuffix(strings.Split(last, "@")[0], ":nonroot"), last)
	// The Go of the build stage is the one go.mod names, at least: the
	// official image builds with its own (GOTOOLCHAIN=local).
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	want := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	require.NotNil(t, want)
	require.True(t, strings.HasPrefix(goImage, "golang:"+string(want[1])+"."), "the build stage's Go, %s, is go.mod's go %s", goImage, want[1])
	require.Equal(t, "65532:65532", user, "the chart's runAsUser")
	require.Contains(t, goBuild.Args, "CGO_ENABLED=0")

	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	m := buildFlagsRE.FindSubmatch(mk)
	require.NotNil(t, m, "Makefile: GO_BUILD_FLAGS")
	require.Contains(t, goBuild.Args, "go build "+string(m[1])+" -o ", "the Dockerfile builds with the Makefile's GO_BUILD_FLAGS")
	script, err := os.ReadFile(filepath.Join(root, "scripts", "release.sh"))
	require.NoError(t, err)
	require.Contains(t, strings.Join(strings.Fields(string(script)), " "), "build "+string(m[1])+" \\ -o ",
		"make release builds with the Makefile's GO_BUILD_FLAGS")
}

// TestDockerfileLabels: the image carries the OCI annotations of its
// release — version, source and revision — from build arguments declared
// in the final stage (an ARG is seen only in the stage that declares it),
// and make image and make release pass them.
func TestDockerfileLabels(t *testing.T) {
	ins := readDockerfile(t)
	last := 0
	for i, in := range ins {
		if in.Cmd == "FROM" {
			last = i
		}
	}
	args := map[string]bool{}
	labels := map[string]string{}
	labelRE := regexp.MustCompile(`([a-z.]+)="([^"]*)"`)
	for _, in := range ins[last:] {
		switch in.Cmd {
		case "ARG":
			name, _, _ := strings.Cut(in.Args, "=")
			args[name] = true
		case "LABEL":
			for _, m := range labelRE.FindAllStringSubmatch(in.Args, -1) {
				labels[m[1]] = m[2]
			}
		}
	}
	for label, arg := range map[string]string{
		"org.opencontainers.image.version":  "VERSION",
		"org.opencontainers.image.revision": "REVISION",
		"org.opencontainers.image.source":   "SOURCE",
	} {
		require.Equal(t, "${"+arg+"}", labels[label], label)
		require.True(t, args[arg], "ARG %s is declared in the final stage", arg)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "release.sh"))
	require.NoError(t, err)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	for _, arg := range []string{"VERSION", "REVISION", "SOURCE"} {
		require.Contains(t, string(script), "--build-arg "+arg+"=", "make release passes %s", arg)
	}
	for _, arg := range []string{"VERSION", "REVISION"} {
		require.Contains(t, string(mk), "--build-arg "+arg+"=", "make image passes %s", arg)
	}
}

// TestMakeBuild builds the binary as the image does (`make build`), checks
// that it is static, and has it validate the config each of the chart's
// option sets renders, with the environment the CronJob gives it.
func TestMakeBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	makeBin := testenv.LookPath(t, "make")
	bin := filepath.Join(t.TempDir(), "recommender")
	cmd := exec.Command(makeBin, "build", "BIN="+bin, "VERSION=v0.0.0-test")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "version").Output()
	require.NoError(t, err)
	require.Regexp(t, `^recommender v0\.0\.0-test \(go1\.\d+`, string(out), "the version make stamps")
	out, err = exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Regexp(t, `^recommender v0\.0\.0-test `, string(out))

	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		require.NoError(t, err)
		defer f.Close()
		for _, p := range f.Progs {
			require.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no interpreter")
		}
		libs, err := f.ImportedLibraries()
		require.NoError(t, err)
		require.Empty(t, libs)
	}

	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	for _, set := range optionSets(t) {
		t.Run("values "+set, func(t *testing.T) {
			top, err := util.ToRenderValues(ch, readValues(t, set), common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, nil)
			require.NoError(t, err)
			rendered, err := engine.Render(ch, top)
			require.NoError(t, err)
			var cm corev1.ConfigMap
			require.NoError(t, decodeStrict(t, []byte(rendered["recommender/templates/configmap.yaml"]), &cm))
			var cj batchv1.CronJob
			require.NoError(t, decodeStrict(t, []byte(rendered["recommender/templates/cronjob.yaml"]), &cj))
			config := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(config, []byte(cm.Data["config.yaml"]), 0o600))

			c := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
			cmd := exec.Command(bin, "config", "validate", "--config", config)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			for _, e := range c.Env {
				cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			require.NoError(t, err, "%s", stderr.String())
			require.Equal(t, config+": valid\n", stdout.String())
		})
	}
}
