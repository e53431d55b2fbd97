package scm_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// gitIn runs git in dir and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(testenv.LookPath(t, "git"), append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// TestCommitWritesObjects: a commit is the base's tree with the changed
// paths replaced — new directories made, an executable kept executable,
// every other entry as it was — a tree git itself accepts; the checkout is
// not touched; a path through a symlink, onto one, or out of the checkout
// is refused.
func TestCommitWritesObjects(t *testing.T) {
	origin := t.TempDir()
	gitIn(t, origin, "init", "-q", "-b", "main")
	for name, body := range map[string]string{"app/a.yaml": "gpu: 0.5\n", "app/b.yaml": "gpu: 0.3\n", "bin/run.sh": "#!/bin/sh\n", "README.md": "hi\n", "app.yaml": "x: 1\n"} {
		require.NoError(t, os.MkdirAll(filepath.Join(origin, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(origin, name), []byte(body), 0o644))
	}
	require.NoError(t, os.Symlink("app", filepath.Join(origin, "link")))
	gitIn(t, origin, "add", "-A")
	gitIn(t, origin, "update-index", "--chmod=+x", "bin/run.sh")
	gitIn(t, origin, "commit", "-q", "-m", "base")
	before := gitIn(t, origin, "ls-tree", "-r", "main")

	ctx := context.Background()
	r, err := scm.Clone(ctx, origin, "main", filepath.Join(t.TempDir(), "clone"), scm.Auth{})
	require.NoError(t, err)
	h, err := r.Commit([]scm.File{
		{Path: "app/a.yaml", Data: []byte("gpu: 0.25\n")},
		{Path: "bin/run.sh", Data: []byte("#!/bin/sh\nexit 0\n")},
		{Path: "new/deep/c.yaml", Data: []byte("gpu: 0.1\n")},
		{Path: "app-z.yaml", Data: []byte("z: 1\n")},
	}, "change", who, time.Unix(1_800_000_000, 0))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(r.Dir(), "app", "a.yaml"))
	require.NoError(t, err)
	require.Equal(t, "gpu: 0.5\n", string(b), "the checkout stays the base's")

	require.NoError(t, r.Push(ctx, "gpu-rightsizing/a", h, plumbing.ZeroHash))
	gitIn(t, origin, "fsck", "--strict", "--no-dangling")
	after := gitIn(t, origin, "ls-tree", "-r", "gpu-rightsizing/a")
	require.Equal(t, "gpu: 0.25\n", gitIn(t, origin, "show", "gpu-rightsizing/a:app/a.yaml"))
	require.Equal(t, "gpu: 0.1\n", gitIn(t, origin, "show", "gpu-rightsizing/a:new/deep/c.yaml"))
	require.Regexp(t, `(?m)^100755 blob [0-9a-f]+\tbin/run.sh$`, after, "an executable stays executable")
	require.Regexp(t, `(?m)^120000 blob [0-9a-f]+\tlink$`, after)
	for _, kept := range []string{"\tapp/b.yaml\n", "\tREADME.md\n", "\tapp.yaml\n"} {
		line := func(s string) string {
			for l := range strings.Lines(s) {
				if strings.HasSuffix(l, kept) {
					return l
				}
			}
			return ""
		}
		require.NotEmpty(t, line(before), kept)
		require.Equal(t, line(before), line(after), "untouched: %s", kept)
	}
	require.Equal(t, "change\n", gitIn(t, origin, "log", "-1", "--format=%B", "gpu-rightsizing/a"))

	for _, tt := range []struct{ name, path, err string }{
		{name: "through a symlink", path: "link/a.yaml", err: "link is not a directory"},
		{name: "onto a symlink", path: "link", err: "link is not a regular file"},
		{name: "onto a directory", path: "app", err: "app is not a regular file"},
		{name: "out of the checkout", path: "../x.yaml", err: "is not a path inside the checkout"},
		{name: "not clean", path: "app/./a.yaml", err: "is not a path inside the checkout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Commit([]scm.File{{Path: tt.path, Data: []byte("x\n")}}, "bad", who, time.Unix(1_800_000_000, 0))
			require.ErrorContains(t, err, tt.err)
		})
	}
}
