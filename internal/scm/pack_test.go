package scm_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// TestPushManyBranchesToALocalRepository: a push of many branches to a
// repository on this machine writes their objects as one pack (no loose
// object), in which git finds every branch whole: fsck accepts it
// strictly, each branch's log is its one commit on the base, and each
// differs from the base by exactly the paths its commit changed, whether
// it replaced a file in a large directory, added one beside it, or made
// new directories.
func TestPushManyBranchesToALocalRepository(t *testing.T) {
	ctx := context.Background()
	origin := t.TempDir()
	gitIn(t, origin, "init", "-q", "-b", "main")
	const n = 600 // the apps tree is some 19 KB: its rewrites are deltas
	for i := range n {
		p := filepath.Join(origin, "apps", fmt.Sprintf("w%03d", i), "deployment.yaml")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, fmt.Appendf(nil, "name: w%03d\ngpu: 0.5\n", i), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(origin, "README.md"), []byte("hi\n"), 0o644))
	gitIn(t, origin, "add", "-A")
	gitIn(t, origin, "commit", "-q", "-m", "base")
	gitIn(t, origin, "gc", "-q")
	objects := func() (loose, packs string) {
		out := gitIn(t, origin, "count-objects", "-v")
		return regexp.MustCompile(`(?m)^count: (\d+)$`).FindStringSubmatch(out)[1], regexp.MustCompile(`(?m)^packs: (\d+)$`).FindStringSubmatch(out)[1]
	}
	loose, packs := objects()
	require.Equal(t, "0", loose)

	r, err := scm.Clone(ctx, origin, "main", filepath.Join(t.TempDir(), "clone"), scm.Auth{})
	require.NoError(t, err)
	changes := map[string][]scm.File{}
	for i := range n {
		p := fmt.Sprintf("apps/w%03d/deployment.yaml", i)
		changes[fmt.Sprintf("gpu-rightsizing/w%03d", i)] = []scm.File{{Path: p, Data: fmt.Appendf(nil, "name: w%03d\ngpu: 0.25\n", i)}}
	}
	changes["gpu-rightsizing/beside"] = []scm.File{{Path: "apps/w055.yaml", Data: []byte("beside: a directory of the same name\n")}}
	changes["gpu-rightsizing/new"] = []scm.File{{Path: "apps/new/deployment.yaml", Data: []byte("name: new\n")}, {Path: "zz/deep/c.yaml", Data: []byte("c: 1\n")}}
	changes["gpu-rightsizing/two"] = []scm.File{{Path: "apps/w000/deployment.yaml", Data: []byte("first\n")}, {Path: "apps/w599/deployment.yaml", Data: []byte("last\n")}, {Path: "README.md", Data: []byte("bye\n")}}
	var updates []scm.Update
	for _, branch := range slices.Sorted(maps.Keys(changes)) {
		h, err := r.Commit(changes[branch], "change "+branch+"\n", who, time.Unix(1_800_000_000, 0))
		require.NoError(t, err)
		updates = append(updates, scm.Update{Branch: branch, Commit: h})
	}
	for i, err := range r.PushAll(ctx, updates) {
		require.NoError(t, err, updates[i].Branch)
	}

	gitIn(t, origin, "fsck", "--strict", "--no-dangling")
	after, packsAfter := objects()
	require.Equal(t, "0", after, "no loose object")
	require.NotEqual(t, packs, packsAfter, "one pack more")
	for i, u := range updates {
		if i%50 != 0 && !strings.Contains(u.Branch, "e") && !strings.Contains(u.Branch, "two") {
			continue // fsck checked every object's hash; a sample is read back
		}
		require.Equal(t, u.Commit.String()+" change "+u.Branch+"\n", gitIn(t, origin, "log", "--format=%H %s", "main.."+u.Branch))
		var want []string
		for _, f := range changes[u.Branch] {
			want = append(want, f.Path)
			require.Equal(t, string(f.Data), gitIn(t, origin, "show", u.Branch+":"+f.Path))
		}
		slices.Sort(want)
		require.Equal(t, strings.Join(want, "\n")+"\n", gitIn(t, origin, "diff", "--name-only", "main", u.Branch), u.Branch)
	}
	require.Equal(t, fmt.Sprint(len(updates)+1), strings.TrimSpace(gitIn(t, origin, "rev-list", "--count", "--all")))
}
