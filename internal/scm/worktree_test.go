package scm_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// gitTree runs git in dir with a fixed identity and no user config, and
// returns its output.
func gitTree(t *testing.T, dir string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(testenv.LookPath(t, "git"), args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.Output()
	require.NoError(t, err, "git %v", args)
	return strings.TrimSpace(string(out))
}

// TestCloneWritesTheTree: the clone's working tree is the base commit's
// tree as git writes it — files, an executable, a symlink, names with a
// control character (go-git refused the whole checkout for one, with
// "directory not found" and no name, so every run failed) — and a tree
// holding a name git refuses to check out (.git in another spelling) is
// refused, naming it.
func TestCloneWritesTheTree(t *testing.T) {
	work := t.TempDir()
	gitTree(t, work, "", "init", "-q", "-b", "main")
	files := map[string]string{
		"apps/chat.yaml":        "kind: Deployment\n",
		"apps/bad\x01name.yaml": "a: 1\n",
		"apps/d\x02ir/x.yaml":   "a: 2\n",
		"run.sh":                "#!/bin/sh\n",
	}
	for name, body := range files {
		p := filepath.Join(work, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	require.NoError(t, os.Chmod(filepath.Join(work, "run.sh"), 0o755))
	require.NoError(t, os.Symlink("apps/chat.yaml", filepath.Join(work, "link.yaml")))
	gitTree(t, work, "", "add", "-A")
	gitTree(t, work, "", "commit", "-qm", "base")

	g, err := scm.Clone(context.Background(), work, "main", filepath.Join(t.TempDir(), "c"), scm.Auth{})
	require.NoError(t, err)
	for name, body := range files {
		b, err := os.ReadFile(filepath.Join(g.Dir(), filepath.FromSlash(name)))
		require.NoError(t, err, name)
		require.Equal(t, body, string(b), name)
	}
	fi, err := os.Stat(filepath.Join(g.Dir(), "run.sh"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	target, err := os.Readlink(filepath.Join(g.Dir(), "link.yaml"))
	require.NoError(t, err)
	require.Equal(t, "apps/chat.yaml", target)

	t.Run("a name git refuses", func(t *testing.T) {
		blob := gitTree(t, work, "x\n", "hash-object", "-w", "--stdin")
		for _, name := range []string{".GIT", ".git.", "git~1"} {
			tree := gitTree(t, work, "100644 blob "+blob+"\t"+name+"\n", "mktree")
			commit := gitTree(t, work, "", "commit-tree", tree, "-m", "hostile")
			gitTree(t, work, "", "update-ref", "refs/heads/hostile", commit)
			_, err := scm.Clone(context.Background(), work, "hostile", filepath.Join(t.TempDir(), "c"), scm.Auth{})
			require.ErrorContains(t, err, `the base commit's path "`+name+`": a name git refuses to check out`)
		}
	})
}
