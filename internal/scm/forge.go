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
	// Author is who opened it: a GitHub login (user.login), a GitLab
	// username (author.username); "" on the local stand-in, whose records
	// are all the tool's.
	Author string
	// Fork is set when its head branch is not in the repository itself:
	// a fork's (GitHub's head.repo names another repository, or none;
	// GitLab's source_project_id is not the target's). The same branch
	// name in a fork is another branch.
	Fork bool
}

// NewPullRequest is what opening one takes.
type NewPullRequest struct {
	Branch, Base, Title, Body string
	Labels, Reviewers         []string
	Assignees                 []string
	Draft                     bool
}
