package scm

// State is where a pull request stands.
type State string

const (
	Open   State = "open"
	Closed State = "closed" // closed without merging: a person declined it
	Merged State = "merged"
)

// PullRequest is a pull request (GitHub) or merge request (GitLab), as
// the publisher sees it.
type PullRequest struct {
	Number int
	URL    string
	Branch string
	Base   string
	Title  string
	Body   string
	State  State
	Labels []string
	Draft  bool
}

// NewPullRequest is what opening one takes.
type NewPullRequest struct {
	Branch, Base, Title, Body string
	Labels, Reviewers         []string
	Assignees                 []string
	Draft                     bool
}
