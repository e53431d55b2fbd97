// Command commitcheck holds the repository's history to the commit
// convention of CONTRIBUTING.md: a subject `area: what changed` of at
// most 72 characters, then a blank line before any body. `make lint`
// runs it.
//
// It checks the commit that added this file and every commit that
// descends from it, merges left out: history before the convention is
// left as it is, and so are branches started before it. In a shallow
// clone it checks what is there. Outside a git checkout, or without
// git, it says so and passes: a source archive has no history to check.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"unicode/utf8"
)

// self is this file, relative to the repository's root: the commit that
// added it is where the convention starts.
const self = "hack/commitcheck/main.go"

// maxSubject is the most characters a subject may have.
const maxSubject = 72

// errNoHistory: there is no git history to check here.
var errNoHistory = errors.New("no git history")

func main() {
	os.Exit(run(context.Background(), ".", os.Stdout))
}

// run checks the history of the checkout that holds dir, reports on out
// and returns the exit code.
func run(ctx context.Context, dir string, out io.Writer) int {
	bad, err := check(ctx, dir, self)
	if errors.Is(err, errNoHistory) {
		fmt.Fprintf(out, "commitcheck: %v: commit messages not checked\n", err)
		return 0
	}
	if err != nil {
		fmt.Fprintf(out, "commitcheck: %v\n", err)
		return 2
	}
	for _, b := range bad {
		fmt.Fprintln(out, b)
	}
	if len(bad) > 0 {
		fmt.Fprintf(out, "commitcheck: %d commit(s) do not follow CONTRIBUTING.md's convention: `area: what changed`, at most %d characters, a blank second line\n", len(bad), maxSubject)
		return 1
	}
	return 0
}

// check returns one line for each commit from the one that added anchor
// on that breaks the convention.
func check(ctx context.Context, dir, anchor string) ([]string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("%w: git not found", errNoHistory)
	}
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%w: not a git checkout", errNoHistory)
	}
	top = strings.TrimSpace(top)
	// Oldest last. In a shallow clone whose history stops after the
	// convention began, the oldest commit there "adds" every file.
	added, err := git(ctx, top, "log", "--diff-filter=A", "--format=%H", "--", anchor)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(added)
	if len(fields) == 0 {
		return nil, fmt.Errorf("%w: %s is in no commit yet", errNoHistory, anchor)
	}
	start := fields[len(fields)-1]
	const format = "--format=%H%x00%P%x00%B%x00"
	first, err := git(ctx, top, "log", "-1", format, start)
	if err != nil {
		return nil, err
	}
	// Descendants only: a branch that began before the convention is not
	// held to it when it is merged after.
	after, err := git(ctx, top, "log", "--ancestry-path", format, start+"..HEAD")
	if err != nil {
		return nil, err
	}
	return append(badCommits(after), badCommits(first)...), nil
}

// badCommits reads git log's records (hash, parents, message, each ended
// by a NUL) and returns a line for each commit that breaks the convention.
func badCommits(log string) []string {
	parts := strings.Split(log, "\x00")
	var bad []string
	for i := 0; i+2 < len(parts); i += 3 {
		hash := strings.TrimSpace(parts[i])
		if len(strings.Fields(parts[i+1])) > 1 {
			continue // a merge
		}
		if why := messageProblem(parts[i+2]); why != "" {
			subject, _, _ := strings.Cut(parts[i+2], "\n")
			bad = append(bad, fmt.Sprintf("%.12s %q: %s", hash, subject, why))
		}
	}
	return bad
}

// areaRE is a subject's area: a package, path or file name, or a few of
// them separated by commas, each maybe with a command or a flag after it
// ("plan --write: …", "policy validate: …"). The first word of each is
// lower case, or a file name such as README, BENCHMARKS.md or Makefile,
// so that a sentence ("Fix the bug: …") does not pass for an area.
var areaRE = regexp.MustCompile(`^` + area + `(, ` + area + `)*: \S`)

const (
	areaWord = `([a-z0-9._][A-Za-z0-9._/-]*|[A-Z][A-Z0-9_]*(\.[a-z]+)?|[A-Z][A-Za-z0-9_-]*\.[a-z]+|[A-Z][a-z]*file)`
	area     = areaWord + `( ([a-z][a-z0-9-]*|--[a-z][a-z0-9-]*))?`
)

// messageProblem says what is wrong with a commit message, "" when
// nothing is.
func messageProblem(msg string) string {
	subject, rest, _ := strings.Cut(msg, "\n")
	var why []string
	if n := utf8.RuneCountInString(subject); n > maxSubject {
		why = append(why, fmt.Sprintf("the subject has %d characters, more than %d", n, maxSubject))
	}
	if !areaRE.MatchString(subject) {
		why = append(why, "the subject does not start with `area: `")
	}
	if second, _, _ := strings.Cut(rest, "\n"); strings.TrimSpace(second) != "" {
		why = append(why, "the second line is not blank")
	}
	return strings.Join(why, "; ")
}

// git runs git in dir and returns its output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
