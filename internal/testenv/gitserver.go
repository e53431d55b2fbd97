package testenv

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// GitServer serves bare repositories over smart HTTP on 127.0.0.1 through
// the real `git http-backend`, behind HTTP basic auth with a token, the way
// a forge serves them: clones, fetches and pushes are the real protocol,
// so a go-git client is tested against git itself.
type GitServer struct {
	// URL is http://127.0.0.1:PORT; a repository named "o/r" is at URL+"/o/r.git".
	URL string
	// Token is the password the server accepts, with any user name.
	Token string
	// CAFile is the PEM certificate that verifies the server, when it
	// serves HTTPS (NewGitServerTLS); "" otherwise.
	CAFile string

	root    string
	git     string
	env     []string
	backend http.Handler

	mu       sync.Mutex
	extra    []string
	requests int
	denied   int
}

// AddToken makes the server accept tok as well as Token: a GitHub App's
// installation token, issued by a fake forge, reaches git with it.
func (s *GitServer) AddToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra = append(s.extra, tok)
}

func (s *GitServer) accepts(pass string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := subtle.ConstantTimeCompare([]byte(pass), []byte(s.Token)) == 1
	for _, tok := range s.extra {
		ok = ok || subtle.ConstantTimeCompare([]byte(pass), []byte(tok)) == 1
	}
	return ok
}

// NewGitServer starts a server that stops when the test ends. It needs the
// git CLI (and its http-backend), and skips the test without it (see
// LookPath).
func NewGitServer(t testing.TB) *GitServer {
	t.Helper()
	return newGitServer(t, false)
}

// NewGitServerTLS is NewGitServer over HTTPS, its URL https://127.0.0.1:PORT,
// with a certificate no system trusts: CAFile verifies it.
func NewGitServerTLS(t testing.TB) *GitServer {
	t.Helper()
	return newGitServer(t, true)
}

func newGitServer(t testing.TB, tls bool) *GitServer {
	t.Helper()
	gitBin := LookPath(t, "git")
	if gitBin == "" {
		return nil
	}
	out, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
		return nil
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend: %v", err)
		return nil
	}
	home := t.TempDir()
	s := &GitServer{
		Token: "test-token-" + randomHex(t, 8),
		root:  t.TempDir(),
		git:   gitBin,
		// The user's and system's git configuration must not change what
		// the tests see (signing, hooks, default branch names).
		env: []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=Test Person", "GIT_AUTHOR_EMAIL=person@example.com",
			"GIT_COMMITTER_NAME=Test Person", "GIT_COMMITTER_EMAIL=person@example.com",
			"PATH=" + os.Getenv("PATH")},
	}
	s.backend = &cgi.Handler{
		Path: backend,
		Dir:  s.root,
		// Receive-pack is enabled per repository (http.receivepack in its
		// config): net/http/cgi sets no REMOTE_USER, which would
		// otherwise be what enables it.
		Env: append([]string{"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1"}, s.env...),
	}
	srv := Serve(t, http.HandlerFunc(s.serveHTTP), tls)
	s.URL = srv.URL
	if tls {
		s.CAFile = CAFile(t, srv)
	}
	return s
}

func (s *GitServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	_, pass, ok := r.BasicAuth()
	if !ok || !s.accepts(pass) {
		s.mu.Lock()
		s.denied++
		s.mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	s.backend.ServeHTTP(w, r)
}

// Requests is how many requests the server received, and how many of
// them it refused for want of the token.
func (s *GitServer) Requests() (all, denied int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.denied
}

// Dir is the path of the bare repository name ("o/r" or "o/r.git").
func (s *GitServer) Dir(name string) string {
	return filepath.Join(s.root, filepath.FromSlash(repoPath(name)))
}

// RepoURL is the clone URL of the repository name.
func (s *GitServer) RepoURL(name string) string {
	return s.URL + "/" + repoPath(name)
}

func repoPath(name string) string {
	name = strings.Trim(name, "/")
	if !strings.HasSuffix(name, ".git") {
		name += ".git"
	}
	return name
}

// NewRepo creates the bare repository name holding one commit on main
// with files (slash-separated path → content), and returns its URL.
func (s *GitServer) NewRepo(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	dir := s.Dir(name)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatalf("new repository %s: %v", name, err)
	}
	s.run(t, s.root, "init", "--quiet", "--bare", "--initial-branch=main", dir)
	s.Git(t, name, "config", "http.receivepack", "true")
	work := t.TempDir()
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatalf("new repository %s: %v", name, err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatalf("new repository %s: %v", name, err)
		}
	}
	s.Git(t, name, "--work-tree="+work, "add", "--all")
	s.Git(t, name, "--work-tree="+work, "commit", "--quiet", "--allow-empty", "-m", "Initial commit")
	return s.RepoURL(name)
}

// DirFiles reads every regular file below dir into the map NewRepo and
// Commit take (slash-separated path → content), leaving out those whose
// name ends in one of without: a directory of the repository as a test
// puts it on the server.
func DirFiles(t testing.TB, dir string, without ...string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || slices.ContainsFunc(without, func(s string) bool { return strings.HasSuffix(path, s) }) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatalf("files of %s: %v", dir, err)
	}
	return files
}

// Commit commits files (slash-separated path → content) on top of branch
// of the repository name, as a person pushing would, and returns the new
// commit's hash. Files not named stay as they are.
func (s *GitServer) Commit(t testing.TB, name, branch string, files map[string]string, message string) string {
	t.Helper()
	dir := s.Dir(name)
	index := filepath.Join(t.TempDir(), "index")
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(s.git, args...)
		cmd.Dir = dir
		cmd.Env = append(slices.Clone(s.env), "GIT_INDEX_FILE="+index)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	parent := git("", "rev-parse", "--verify", "refs/heads/"+branch)
	git("", "read-tree", parent)
	for p, content := range files {
		blob := git(content, "hash-object", "-w", "--stdin")
		git("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+p)
	}
	tree := git("", "write-tree")
	commit := git("", "commit-tree", tree, "-p", parent, "-m", message)
	git("", "update-ref", "refs/heads/"+branch, commit, parent)
	return commit
}

// Git runs the git CLI in the bare repository name and returns its
// standard output; a failure fails the test.
func (s *GitServer) Git(t testing.TB, name string, args ...string) string {
	t.Helper()
	return s.run(t, s.Dir(name), args...)
}

// GitErr is Git for commands that may fail (a branch that may be absent).
func (s *GitServer) GitErr(name string, args ...string) (string, error) {
	return s.exec(s.Dir(name), args...)
}

func (s *GitServer) run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := s.exec(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (s *GitServer) exec(dir string, args ...string) (string, error) {
	cmd := exec.Command(s.git, args...)
	cmd.Dir = dir
	cmd.Env = s.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &gitError{err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.String(), nil
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + e.stderr }
func (e *gitError) Unwrap() error { return e.err }

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
