package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	loaderv2 "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	batchv1 "k8s.io/api/batch/v1"

	rel "github.com/gpu-rightsizing/recommender/internal/release"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

const releaseVersion = "v0.0.0-test"

// TestRelease runs `make release`'s script for this machine's platform
// into a temporary directory, with a `docker` that finds no engine, and
// checks what a user downloads: the binary says the stamped version, the
// checksums hold (by sha256sum itself), each SBOM is SPDX 2.3 naming the
// main module and every module the go command says the binary holds, at
// its version, and the packaged chart lints and renders with appVersion =
// the version, the image tag following it.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	sh := testenv.LookPath(t, "sh")
	sha256sum := testenv.LookPath(t, "sha256sum")
	goBin := testenv.LookPath(t, "go")
	dist := filepath.Join(t.TempDir(), "dist")
	// A docker that answers no engine, as on a machine without one: the
	// release goes on without the image, and says so.
	fakeBin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fakeBin, "docker"), []byte("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n"), 0o755))
	cmd := exec.Command(sh, "scripts/release.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+fakeBin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"VERSION="+releaseVersion, "DIST="+dist, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "SOURCE_DATE_EPOCH=1780000000")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s", stderr.String())
	require.Contains(t, stderr.String(), "no Docker engine answers (docker info): the image is not built")

	bin := "recommender_" + releaseVersion + "_" + runtime.GOOS + "_" + runtime.GOARCH
	out, err := exec.Command(filepath.Join(dist, bin), "version").Output()
	require.NoError(t, err)
	require.Regexp(t, `^recommender `+regexp.QuoteMeta(releaseVersion)+` \(go1\.\d+`, string(out))

	// The checksums, by our reader and by sha256sum's.
	listed, err := rel.VerifyChecksums(filepath.Join(dist, "checksums.txt"), dist)
	require.NoError(t, err)
	entries, err := os.ReadDir(dist)
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		if e.Name() != "checksums.txt" {
			files = append(files, e.Name())
		}
	}
	require.ElementsMatch(t, []string{bin, bin + ".spdx.json", "recommender-0.0.0-test.tgz"}, files)
	require.Equal(t, files, listed)
	check := exec.Command(sha256sum, "--check", "--strict", "checksums.txt")
	check.Dir = dist
	out, err = check.CombinedOutput()
	require.NoError(t, err, "%s", out)

	checkSBOM(t, goBin, filepath.Join(dist, bin), filepath.Join(dist, bin+".spdx.json"))
	checkPackagedChart(t, filepath.Join(dist, "recommender-0.0.0-test.tgz"))
}

// checkSBOM reads an SBOM as an SPDX 2.3 consumer would and holds it to
// `go version -m`, the go command's own reading of the binary.
func checkSBOM(t *testing.T, goBin, bin, sbom string) {
	t.Helper()
	b, err := os.ReadFile(sbom)
	require.NoError(t, err)
	var doc struct {
		SPDXVersion, DataLicense, SPDXID, Name, DocumentNamespace string
		CreationInfo                                              struct {
			Created  string
			Creators []string
		}
		Packages []struct {
			Name, SPDXID, VersionInfo, DownloadLocation string
			ExternalRefs                                []struct{ ReferenceType, ReferenceLocator string }
		}
		Relationships []struct {
			SpdxElementID, RelationshipType, RelatedSpdxElement string
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	require.NoError(t, dec.Decode(&doc))
	require.Equal(t, "SPDX-2.3", doc.SPDXVersion)
	require.Equal(t, "CC0-1.0", doc.DataLicense)
	require.Equal(t, "SPDXRef-DOCUMENT", doc.SPDXID)
	require.Equal(t, "2026-05-28T20:26:40Z", doc.CreationInfo.Created, "dated by SOURCE_DATE_EPOCH")
	versions := map[string]string{}
	ids := map[string]bool{}
	for _, p := range doc.Packages {
		require.False(t, ids[p.SPDXID], "SPDX ids are unique: %s", p.SPDXID)
		ids[p.SPDXID] = true
		versions[p.Name] = p.VersionInfo
		require.NotEmpty(t, p.DownloadLocation, p.Name)
	}
	for _, r := range doc.Relationships {
		require.True(t, ids[r.RelatedSpdxElement] || r.RelatedSpdxElement == "SPDXRef-DOCUMENT", "%s names a package", r.RelatedSpdxElement)
	}
	require.Equal(t, releaseVersion, versions["github.com/gpu-rightsizing/recommender"])
	require.Equal(t, runtime.Version(), versions["stdlib"])

	// Every module the go command finds in the binary, at its version
	// (a replacement's, where one is).
	out, err := exec.Command(goBin, "version", "-m", bin).Output()
	require.NoError(t, err)
	want := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[0] == "dep":
			want[f[1]] = f[2]
		case len(f) >= 3 && f[0] == "=>":
			want[f[1]] = f[2]
		}
	}
	require.Greater(t, len(want), 50, "go version -m lists the modules")
	for _, path := range slices.Sorted(maps.Keys(want)) {
		if _, replaced := versions[path]; !replaced && strings.Contains(string(out), "=> "+path) {
			continue
		}
		require.Equal(t, want[path], versions[path], "%s in the SBOM", path)
	}
	// And at the versions go.mod requires, for a few the reader knows.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	for _, path := range []string{"helm.sh/helm/v4", "github.com/spf13/cobra", "sigs.k8s.io/kustomize/kyaml"} {
		m := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(path) + ` (v\S+)`).FindSubmatch(gomod)
		require.NotNil(t, m, path)
		require.Equal(t, string(m[1]), versions[path], path)
	}
}

// checkPackagedChart lints the packaged chart as `helm lint` lints an
// archive (expanded first) and renders it as `helm install` would.
func checkPackagedChart(t *testing.T, tgz string) {
	t.Helper()
	ch, err := loaderv2.LoadFile(tgz)
	require.NoError(t, err)
	require.Equal(t, releaseVersion, ch.Metadata.AppVersion)
	require.Equal(t, "0.0.0-test", ch.Metadata.Version)
	require.NotNil(t, ch.Schema, "the schema is packaged")
	for _, f := range ch.Files {
		require.False(t, strings.HasPrefix(f.Name, "ci/"), "%s: the chart's test values stay out of the package", f.Name)
	}

	dir := t.TempDir()
	require.NoError(t, chartutil.ExpandFile(dir, tgz))
	l := lint.RunAll(filepath.Join(dir, "recommender"), readValues(t, minimalSet), namespace)
	for _, m := range l.Messages {
		require.Less(t, m.Severity, support.WarningSev, "%s", m)
	}

	top, err := util.ToRenderValues(ch, readValues(t, minimalSet), common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, nil)
	require.NoError(t, err)
	out, err := engine.Render(ch, top)
	require.NoError(t, err)
	var cj batchv1.CronJob
	require.NoError(t, decodeStrict(t, []byte(out["recommender/templates/cronjob.yaml"]), &cj))
	require.Equal(t, "ghcr.io/gpu-rightsizing/recommender:"+releaseVersion, cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image)
	require.Equal(t, releaseVersion, cj.Labels["app.kubernetes.io/version"])
}

// TestReleaseWorkflow: the GitHub Actions release runs on version tags,
// makes the artifacts with `make release` (what TestRelease tries), and
// builds the image with the build arguments its OCI labels read.
func TestReleaseWorkflow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yml"))
	require.NoError(t, err)
	var wf struct {
		Name string `yaml:"name"`
		On   struct {
			Push struct {
				Tags []string `yaml:"tags"`
			} `yaml:"push"`
		} `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
		Jobs        map[string]struct {
			RunsOn string `yaml:"runs-on"`
			Steps  []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				With map[string]any    `yaml:"with"`
				Env  map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	// As GitHub reads it: YAML 1.2, where on is a string, not true.
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&wf))
	require.Equal(t, []string{"v*"}, wf.On.Push.Tags)
	require.Equal(t, "write", wf.Permissions["contents"])
	var runs, buildArgs string
	for _, s := range wf.Jobs["release"].Steps {
		runs += s.Run + "\n"
		if s.Uses != "" {
			require.Regexp(t, `^[\w-]+/[\w-]+@v\d+$`, s.Uses, "actions are pinned to a major version")
		}
		if strings.HasPrefix(s.Uses, "docker/build-push-action@") {
			buildArgs, _ = s.With["build-args"].(string)
		}
	}
	require.Contains(t, runs, "make release VERSION=")
	require.Contains(t, runs, "gh release create")
	for _, arg := range []string{"VERSION=", "REVISION=", "SOURCE="} {
		require.Contains(t, buildArgs, arg)
	}
}
