// Package forge holds fake forges for tests: a fake GitHub REST API
// (FakeGitHub) over the bare repositories of a testenv.GitServer, and a
// fake GitLab REST v4 API (FakeGitLab) over a bare repository. Both answer
// as their forge documents it (status codes, error bodies, pagination,
// rate-limit headers, injected faults), and both merge with git's real
// merge machinery.
package forge

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// mergeBranch makes a merge commit of head onto base in a bare repository
// with git's merge machinery (no work tree), and moves base to it only if
// base still holds what was read: what pressing Merge does on either fake
// forge. git runs a git command in the repository.
func mergeBranch(git func(args ...string) (string, error), base, head, msg string) (string, error) {
	rev := func(branch string) (string, error) {
		out, err := git("rev-parse", "--verify", "refs/heads/"+branch+"^{commit}")
		if err != nil {
			return "", fmt.Errorf("branch %s: %w", branch, err)
		}
		return strings.TrimSpace(out), nil
	}
	b, err := rev(base)
	if err != nil {
		return "", err
	}
	h, err := rev(head)
	if err != nil {
		return "", err
	}
	tree, err := git("merge-tree", "--write-tree", b, h)
	if err != nil {
		return "", fmt.Errorf("%s does not merge cleanly into %s: %w", head, base, err)
	}
	tree = strings.SplitN(strings.TrimSpace(tree), "\n", 2)[0]
	commit, err := git("commit-tree", tree, "-p", b, "-p", h, "-m", msg)
	if err != nil {
		return "", fmt.Errorf("merge commit: %w", err)
	}
	commit = strings.TrimSpace(commit)
	if _, err := git("update-ref", "refs/heads/"+base, commit, b); err != nil {
		return "", fmt.Errorf("move %s: %w", base, err)
	}
	return commit, nil
}

// randomHex is n random bytes in hex: tokens that no other text contains
// by chance, so that a test can search for them.
func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random: %v", err)
	}
	return hex.EncodeToString(b)
}
