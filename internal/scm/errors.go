package scm

import (
	"errors"
	"strings"
)

// What a forge's or a remote's failure means for the person running the
// tool, classified once here so that a caller can tell a credential to
// fix from a forge to wait for. GitHub and GitLab return the same one for
// the same failure (forge_errors_test.go runs each against both).
var (
	// ErrRateLimited: the forge's rate limit lasts longer than the run is
	// willing to wait.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnauthorized: the token (or the App's installation token) is
	// invalid or expired.
	ErrUnauthorized = errors.New("the token is invalid or expired")
	// ErrForbidden: the token is valid but lacks a permission.
	ErrForbidden = errors.New("the token lacks a permission")
	// ErrNotFound: the repository does not exist, or the token cannot see
	// it (GitHub answers 404 for both, so as not to reveal private ones).
	ErrNotFound = errors.New("repository not found, or the token cannot see it")
	// ErrUnavailable: the forge kept answering server errors (or the
	// network kept failing) through every try.
	ErrUnavailable = errors.New("the forge kept failing")
	// ErrConflict: the forge refuses a second pull request for a branch,
	// yet lists none open to update instead.
	ErrConflict = errors.New("a pull request is open for the branch, but none is listed")
	// ErrLeaseBroken says a branch moved since it was read: someone else
	// pushed to it, and the push was refused rather than overwrite their
	// work.
	ErrLeaseBroken = errors.New("the branch moved since it was read; not overwritten")

	// errAnswerTooLong is an answer over maxResponseBytes.
	errAnswerTooLong = errors.New("answer too long")
)

// classed is err, told as it is, that errors.Is also finds to be class:
// for a failure whose message already says what happened, so that the
// class joins without changing what the person reads.
type classed struct{ err, class error }

func (e *classed) Error() string   { return e.err.Error() }
func (e *classed) Unwrap() []error { return []error{e.err, e.class} }

func withClass(err, class error) error { return &classed{err: err, class: class} }

// scrub removes every secret from err's text, keeping errors.Is for what
// it wraps (but not Unwrap, which would hand out the unscrubbed text):
// transports and servers may quote what they were given, and a token in
// an error ends up in logs and pull-request comments.
func scrub(err error, secrets ...string) error {
	msg := err.Error()
	clean := msg
	for _, s := range secrets {
		if s != "" {
			clean = strings.ReplaceAll(clean, s, "***")
		}
	}
	if clean == msg {
		return err
	}
	return &scrubbed{msg: clean, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string        { return e.msg }
func (e *scrubbed) Is(target error) bool { return errors.Is(e.err, target) }

// leaseRefused tells, from git-receive-pack's status for one branch, a
// branch that was not where the command said it was: the compare-and-set
// of its update failed (git 2.39 says "failed to update ref", later ones
// "incorrect old value provided" or "reference already exists").
func leaseRefused(status string) bool {
	for _, s := range []string{"failed to update ref", "incorrect old value", "reference already exists", "stale info"} {
		if strings.Contains(status, s) {
			return true
		}
	}
	return false
}
