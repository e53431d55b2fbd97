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
