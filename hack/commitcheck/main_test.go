package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

func TestMessageProblem(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want string // "" when the message is fine
	}{
		{name: "area and body", msg: "changes: WriteAll checks each file once\n\nThe why, and the numbers.\n"},
		{name: "subject only", msg: "docs: a typo\n"},
		{name: "no final newline", msg: "docs: a typo"},
		{name: "a path", msg: "internal/patcher/changes: File.Diff quotes names\n"},
		{name: "a file name", msg: "BENCHMARKS.md: the plan rows\n"},
		{name: "upper-case file", msg: "README: the quickstart\n"},
		{name: "Makefile", msg: "Makefile: lint checks commit messages\n"},
		{name: "several areas", msg: "plan, run: one read of the checkout\n"},
		{name: "a command", msg: "policy validate: exit 3 on a problem\n"},
		{name: "a flag", msg: "plan --write: all or nothing\n"},
		{name: "72 characters", msg: "docs: " + strings.Repeat("x", 66) + "\n"},
		{name: "73 characters", msg: "docs: " + strings.Repeat("x", 67) + "\n", want: "the subject has 73 characters, more than 72"},
		{name: "characters, not bytes", msg: "docs: " + strings.Repeat("é", 66) + "\n"},
		{name: "no area", msg: "Fix the flaky test\n", want: "the subject does not start with `area: `"},
		{name: "a sentence before the colon", msg: "Fix the bug: it was wrong\n", want: "the subject does not start with `area: `"},
		{name: "a capitalised word", msg: "Update: docs\n", want: "the subject does not start with `area: `"},
		{name: "no space after the colon", msg: "docs:typo\n", want: "the subject does not start with `area: `"},
		{name: "nothing after the area", msg: "docs: \n", want: "the subject does not start with `area: `"},
		{name: "a second line", msg: "docs: a typo\nand more\n", want: "the second line is not blank"},
		{name: "everything wrong", msg: strings.Repeat("x", 80) + "\nmore\n",
			want: "the subject has 80 characters, more than 72; the subject does not start with `area: `; the second line is not blank"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, messageProblem(tt.msg))
		})
	}
}

// repo is a git repository in a temporary directory, with git kept from
// the user's and the system's configuration.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	testenv.LookPath(t, "git")
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com",
		"GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.com",
	} {
		t.Setenv(k, v)
	}
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	out, err := git(context.Background(), r.dir, args...)
	require.NoError(r.t, err)
	return strings.TrimSpace(out)
}

// commit writes file and commits it with msg, returning the commit.
func (r *repo) commit(file, msg string) string {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(file))
	require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(r.t, os.WriteFile(p, []byte(msg), 0o644))
	r.git("add", file)
	r.git("commit", "-q", "--cleanup=verbatim", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// TestCheck: from the commit that adds the check on, a bad message fails
// and names the commit; history before it, a branch begun before it and
// merge commits do not.
func TestCheck(t *testing.T) {
	r := newRepo(t)
	r.commit("a.txt", "Initial import, before there was a convention to follow at all\n")
	r.git("branch", "old-topic")
	r.commit(self, "hack: check commit messages\n\nThe convention starts here.\n")
	r.commit("b.txt", "docs: fine\n")
	tooLong := r.commit("c.txt", "docs: "+strings.Repeat("long ", 14)+"\n")
	r.git("checkout", "-q", "old-topic")
	r.commit("d.txt", "A branch begun before the convention, merged after it\n")
	r.git("checkout", "-q", "main")
	r.git("merge", "-q", "--no-ff", "-m", "Merge branch 'old-topic' into main, a subject longer than seventy-two characters", "old-topic")
	noArea := r.commit("e.txt", "Fix the bug\n")

	bad, err := check(context.Background(), r.dir, self)
	require.NoError(t, err)
	require.Equal(t, []string{
		noArea[:12] + ` "Fix the bug": the subject does not start with ` + "`area: `",
		tooLong[:12] + ` "docs: long long long long long long long long long long long long long long ": the subject has 76 characters, more than 72`,
	}, bad)

	var out bytes.Buffer
	require.Equal(t, 1, run(context.Background(), filepath.Join(r.dir, "hack"), &out))
	require.Contains(t, out.String(), "commitcheck: 2 commit(s) do not follow CONTRIBUTING.md's convention")
}

// TestCheckFirstCommit: the commit that adds the check is held to the
// convention too.
func TestCheckFirstCommit(t *testing.T) {
	r := newRepo(t)
	add := r.commit(self, "Add a check of commit messages\n")
	bad, err := check(context.Background(), r.dir, self)
	require.NoError(t, err)
	require.Equal(t, []string{add[:12] + ` "Add a check of commit messages": the subject does not start with ` + "`area: `"}, bad)
}

// TestCheckShallow: a shallow clone whose history begins after the check
// was added checks the commits it has.
func TestCheckShallow(t *testing.T) {
	r := newRepo(t)
	r.commit(self, "hack: check commit messages\n")
	r.commit("a.txt", "docs: fine\n")
	r.commit("b.txt", "docs: fine again\n")
	bad := r.commit("c.txt", "Not fine\n")

	clone := filepath.Join(t.TempDir(), "clone")
	r.git("clone", "-q", "--depth", "2", "file://"+r.dir, clone)
	shallow, err := git(context.Background(), clone, "rev-parse", "--is-shallow-repository")
	require.NoError(t, err)
	require.Equal(t, "true", strings.TrimSpace(shallow))

	got, err := check(context.Background(), clone, self)
	require.NoError(t, err)
	require.Equal(t, []string{bad[:12] + ` "Not fine": the subject does not start with ` + "`area: `"}, got)
}

// TestCheckWithoutHistory: outside a git checkout, or before the check is
// committed, nothing is checked and run passes.
func TestCheckWithoutHistory(t *testing.T) {
	r := newRepo(t)
	r.commit("a.txt", "Before the check\n")
	_, err := check(context.Background(), r.dir, self)
	require.ErrorIs(t, err, errNoHistory)

	outside := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(outside))
	_, err = check(context.Background(), outside, self)
	require.ErrorIs(t, err, errNoHistory)
	var out bytes.Buffer
	require.Equal(t, 0, run(context.Background(), outside, &out))
	require.Contains(t, out.String(), "not a git checkout: commit messages not checked")
}
