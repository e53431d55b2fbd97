package testenv

import (
	"fmt"
	"strings"
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
