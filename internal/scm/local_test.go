package scm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// TestLocalForge: pull requests kept as files, numbered past any record
// deleted by hand (seen by the next run's Local: a Local reads the
// directory once), found by branch newest first, one open per branch.
func TestLocalForge(t *testing.T) {
	ctx := context.Background()
	l, err := scm.NewLocal(filepath.Join(t.TempDir(), "pulls"))
	require.NoError(t, err)
	open := func(branch string) scm.PullRequest {
		pr, err := l.Open(ctx, scm.NewPullRequest{Branch: branch, Base: "main", Title: "t " + branch, Body: "b"})
		require.NoError(t, err)
		return pr
	}
	one, two := open("a"), open("b")
	require.Equal(t, []int{1, 2}, []int{one.Number, two.Number})
	_, err = l.Open(ctx, scm.NewPullRequest{Branch: "a"})
	require.ErrorContains(t, err, "already open (#1)")

	// A person deletes #1's record between runs; the next run's number is
	// still new.
	require.NoError(t, os.Remove(filepath.Join(l.Dir(), "0001.json")))
	l, err = scm.NewLocal(l.Dir())
	require.NoError(t, err)
	three := open("c")
	require.Equal(t, 3, three.Number)
	got, err := l.Get(2)
	require.NoError(t, err)
	require.Equal(t, "t b", got.Title, "#2 is untouched")

	require.NoError(t, l.Close(ctx, 2, "fits now"))
	four := open("b")
	prs, err := l.Find(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, []int{four.Number, 2}, []int{prs[0].Number, prs[1].Number}, "newest first")
	require.Equal(t, scm.Closed, prs[1].State)
	require.Contains(t, prs[1].Body, "fits now")
	openPRs, err := l.ListOpen(ctx, "")
	require.NoError(t, err)
	require.Len(t, openPRs, 2)
}

// TestLocalRecovers: a record a killed run (or a crash of the machine)
// left half-written is no reason to fail every later run. One whose
// Markdown beside it is whole is written again from it; one with nothing
// to rebuild it from is set aside, its number never given again; the
// temporary file a killed write leaves is ignored, and removed once stale.
func TestLocalRecovers(t *testing.T) {
	ctx := context.Background()
	l, err := scm.NewLocal(filepath.Join(t.TempDir(), "pulls"))
	require.NoError(t, err)
	for _, b := range []string{"a", "b", "c"} {
		_, err := l.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/" + b, Base: "main", Title: "t " + b, Body: "body " + b + "\n<!-- marker -->\n"})
		require.NoError(t, err)
	}
	require.NoError(t, l.Close(ctx, 2, "fits now"))
	dir := l.Dir()
	half := func(name string) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b[:len(b)/2], 0o644))
	}
	half("0002.json")
	// #3: killed between claiming the number and writing the record, as
	// the version before this one could be.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "0003.json"), nil, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "0003.md")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".tmp-0004.json-123"), []byte(`{"number":`), 0o644))

	l, err = scm.NewLocal(dir)
	require.NoError(t, err)
	all, err := l.All()
	require.NoError(t, err, "no \"unexpected end of JSON input\"")
	require.Len(t, all, 2)
	two := all[1]
	require.Equal(t, scm.PullRequest{Number: 2, URL: two.URL, Branch: "gpu-rightsizing/b", Base: "main", Title: "t b",
		Body: "body b\n<!-- marker -->\n\n\n---\nfits now\n", State: scm.Closed}, two, "rebuilt from its Markdown")
	got, err := l.Get(2)
	require.NoError(t, err)
	require.Equal(t, two, got, "and written again")
	require.FileExists(t, filepath.Join(dir, "0003.json.broken"))
	require.NoFileExists(t, filepath.Join(dir, "0003.json"))

	next, err := l.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/c", Base: "main", Title: "t c", Body: "again"})
	require.NoError(t, err)
	require.Equal(t, 4, next.Number, "the number set aside is not given again")
	got, err = l.Get(4)
	require.NoError(t, err)
	require.Equal(t, "again", got.Body, "a temporary file never stands for a record")
}

// TestLocalFindByBranch: Find and Open look at one branch's records
// (an index kept as records are read and written), and answer as a scan
// of All would: newest first, across records this Local wrote, records
// it read from the directory (numbered past 9999, whose names do not sort
// as numbers), and records closed or reopened since.
func TestLocalFindByBranch(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "pulls")
	// A record before 10000: the names of the later ones sort before it.
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "9999.json"),
		[]byte(`{"number":9999,"state":"closed","branch":"b1","base":"main","title":"old"}`), 0o644))
	branches := []string{"b0", "b1", "b2"}
	check := func(l *scm.Local) {
		t.Helper()
		all, err := l.All()
		require.NoError(t, err)
		for _, b := range branches {
			var want []int
			for i := len(all) - 1; i >= 0; i-- {
				if all[i].Branch == b {
					want = append(want, all[i].Number)
				}
			}
			prs, err := l.Find(ctx, b)
			require.NoError(t, err)
			got := []int{}
			for _, pr := range prs {
				got = append(got, pr.Number)
			}
			require.Equal(t, append([]int{}, want...), got, "branch %s", b)
		}
	}
	l, err := scm.NewLocal(dir)
	require.NoError(t, err)
	var opened []scm.PullRequest
	for i := range 9 {
		b := branches[i%3]
		if i >= 3 {
			// The previous one of this branch is closed first: one open
			// a branch.
			require.NoError(t, l.Close(ctx, opened[i-3].Number, "superseded"))
		}
		pr, err := l.Open(ctx, scm.NewPullRequest{Branch: b, Base: "main", Title: "t", Body: "b"})
		require.NoError(t, err)
		require.Equal(t, 10000+i, pr.Number, "one past the highest record")
		opened = append(opened, pr)
		check(l)
	}
	_, err = l.Open(ctx, scm.NewPullRequest{Branch: "b2"})
	require.ErrorContains(t, err, "already open (#10008)")

	// A new Local reads them back from the directory.
	l, err = scm.NewLocal(dir)
	require.NoError(t, err)
	check(l)
	prs, err := l.Find(ctx, "b1")
	require.NoError(t, err)
	require.Equal(t, []int{10007, 10004, 10001, 9999}, []int{prs[0].Number, prs[1].Number, prs[2].Number, prs[3].Number})
	require.Equal(t, scm.Open, prs[0].State)
	require.Equal(t, scm.Closed, prs[1].State)

	// Reopened by a person: Open refuses the branch again.
	require.NoError(t, l.SetState(10004, scm.Open, ""))
	require.NoError(t, l.Close(ctx, 10007, ""))
	_, err = l.Open(ctx, scm.NewPullRequest{Branch: "b1"})
	require.ErrorContains(t, err, "already open (#10004)")
	check(l)
	prs, err = l.Find(ctx, "none")
	require.NoError(t, err)
	require.Empty(t, prs)
}
