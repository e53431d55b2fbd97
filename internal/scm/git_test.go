package scm_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

var who = scm.Signature{Name: "gpu-rightsizing", Email: "bot@example.com"}

// head is the commit a branch of the bare repository points at, zero
// when it does not exist.
func head(t *testing.T, srv *testenv.GitServer, repo, branch string) plumbing.Hash {
	t.Helper()
	out, err := srv.GitErr(repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(strings.TrimSpace(out))
}

func commit(t *testing.T, r *scm.Repo, content string) plumbing.Hash {
	t.Helper()
	h, err := r.Commit([]scm.File{{Path: "app/a.yaml", Data: []byte(content)}}, "change a", who, time.Unix(1_800_000_000, 0))
	require.NoError(t, err)
	return h
}

func TestCloneAndPushOverSmartHTTP(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewGitServer(t)
	url := srv.NewRepo(t, "acme/gitops", map[string]string{"app/a.yaml": "gpu: 0.5\n", "README.md": "hi\n"})
	auth := scm.Auth{Token: srv.Token}

	r1, err := scm.Clone(ctx, url, "main", filepath.Join(t.TempDir(), "one"), auth)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(r1.Dir(), "app", "a.yaml"))
	require.NoError(t, err)
	require.Equal(t, "gpu: 0.5\n", string(b))
	require.Equal(t, head(t, srv, "acme/gitops", "main"), r1.Base())
	require.Equal(t, "Initial commit\n", r1.Message())

	// A new branch is created.
	c1 := commit(t, r1, "gpu: 0.25\n")
	require.NoError(t, r1.Push(ctx, "gpu-rightsizing/a", c1, plumbing.ZeroHash))
	require.Equal(t, c1, head(t, srv, "acme/gitops", "gpu-rightsizing/a"))
	require.Equal(t, "gpu: 0.25\n", srv.Git(t, "acme/gitops", "show", "gpu-rightsizing/a:app/a.yaml"))

	branches, err := r1.Branches(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	require.Equal(t, map[string]plumbing.Hash{"gpu-rightsizing/a": c1}, branches)

	// It is force-updated with a lease on what it held: the new commit
	// is a sibling, not a descendant.
	c2 := commit(t, r1, "gpu: 0.3\n")
	require.NoError(t, r1.Push(ctx, "gpu-rightsizing/a", c2, c1))
	require.Equal(t, c2, head(t, srv, "acme/gitops", "gpu-rightsizing/a"))
	// The same push again is nothing to do.
	require.NoError(t, r1.Push(ctx, "gpu-rightsizing/a", c2, c2))

	// Someone else moves the branch from a second clone: the lease on c2
	// refuses to overwrite their commit.
	r2, err := scm.Clone(ctx, url, "main", filepath.Join(t.TempDir(), "two"), auth)
	require.NoError(t, err)
	theirs := commit(t, r2, "gpu: 1\n")
	require.NoError(t, r2.Push(ctx, "gpu-rightsizing/a", theirs, c2))
	c3 := commit(t, r1, "gpu: 0.35\n")
	err = r1.Push(ctx, "gpu-rightsizing/a", c3, c2)
	require.ErrorIs(t, err, scm.ErrLeaseBroken)
	require.Equal(t, theirs, head(t, srv, "acme/gitops", "gpu-rightsizing/a"))

	// A branch someone created meanwhile is not overwritten either.
	require.NoError(t, r2.Push(ctx, "gpu-rightsizing/b", theirs, plumbing.ZeroHash))
	err = r1.Push(ctx, "gpu-rightsizing/b", c3, plumbing.ZeroHash)
	require.ErrorIs(t, err, scm.ErrLeaseBroken)
	require.Equal(t, theirs, head(t, srv, "acme/gitops", "gpu-rightsizing/b"))
}

func TestCloneWithoutTheToken(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewGitServer(t)
	url := srv.NewRepo(t, "acme/gitops", map[string]string{"a.yaml": "x: 1\n"})

	tests := []struct {
		name string
		auth scm.Auth
	}{
		{name: "wrong token", auth: scm.Auth{Token: "wrong-" + srv.Token[len(srv.Token)-8:] + "-secret"}},
		{name: "wrong token, another user", auth: scm.Auth{Token: "ghp_notTheRightOne123", TokenUser: "oauth2"}},
		{name: "no token", auth: scm.Auth{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scm.Clone(ctx, url, "main", filepath.Join(t.TempDir(), "c"), tt.auth)
			require.Error(t, err)
			if tt.auth.Token != "" {
				require.NotContains(t, err.Error(), tt.auth.Token)
			}
			require.NotContains(t, err.Error(), srv.Token)
		})
	}
	_, denied := srv.Requests()
	require.Positive(t, denied)
}

func TestGitServerAsksForBasicAuth(t *testing.T) {
	srv := testenv.NewGitServer(t)
	url := srv.NewRepo(t, "acme/gitops", nil)
	tests := []struct {
		name       string
		user, pass string
		want       int
	}{
		{name: "missing", want: http.StatusUnauthorized},
		{name: "wrong", user: "x-access-token", pass: "nope", want: http.StatusUnauthorized},
		{name: "right", user: "x-access-token", pass: srv.Token, want: http.StatusOK},
		{name: "right, any user", user: "oauth2", pass: srv.Token, want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, url+"/info/refs?service=git-upload-pack", nil)
			require.NoError(t, err)
			if tt.user != "" {
				req.SetBasicAuth(tt.user, tt.pass)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tt.want, resp.StatusCode)
			if tt.want == http.StatusUnauthorized {
				require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Basic")
			} else {
				require.Equal(t, "application/x-git-upload-pack-advertisement", resp.Header.Get("Content-Type"))
			}
		})
	}
}

// TestSignedCommits: with a signing key, the tool's commits carry an
// OpenPGP signature that the key's public half verifies; an encrypted or
// public-only key is refused with a reason.
func TestSignedCommits(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewGitServer(t)
	url := srv.NewRepo(t, "acme/gitops", map[string]string{"app/a.yaml": "gpu: 0.5\n"})
	dir := t.TempDir()

	entity, err := openpgp.NewEntity("gpu-rightsizing", "", "bot@example.com", nil)
	require.NoError(t, err)
	var priv, pub bytes.Buffer
	w, err := armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	require.NoError(t, err)
	require.NoError(t, entity.SerializePrivate(w, nil))
	require.NoError(t, w.Close())
	w, err = armor.Encode(&pub, openpgp.PublicKeyType, nil)
	require.NoError(t, err)
	require.NoError(t, entity.Serialize(w))
	require.NoError(t, w.Close())
	keyFile := filepath.Join(dir, "key.asc")
	require.NoError(t, os.WriteFile(keyFile, priv.Bytes(), 0o600))

	key, err := scm.ReadSigningKey(keyFile)
	require.NoError(t, err)
	r, err := scm.Clone(ctx, url, "main", filepath.Join(dir, "clone"), scm.Auth{Token: srv.Token})
	require.NoError(t, err)
	signer := who
	signer.Key = key
	h, err := r.Commit([]scm.File{{Path: "app/a.yaml", Data: []byte("gpu: 0.25\n")}}, "change a", signer, time.Unix(1_800_000_000, 0))
	require.NoError(t, err)

	repo, err := git.PlainOpen(filepath.Join(dir, "clone"))
	require.NoError(t, err)
	c, err := repo.CommitObject(h)
	require.NoError(t, err)
	require.NotEmpty(t, c.PGPSignature)
	_, err = c.Verify(pub.String())
	require.NoError(t, err, "the signature verifies with the public key")

	pubFile := filepath.Join(dir, "pub.asc")
	require.NoError(t, os.WriteFile(pubFile, pub.Bytes(), 0o600))
	_, err = scm.ReadSigningKey(pubFile)
	require.ErrorContains(t, err, "want one private key")
}

// TestCloneAndPushOverSSH: a clone, a new branch, a push with a lease and
// a refused push, over SSH to the real sshd with a deploy key, the server
// checked against a known_hosts file.
func TestCloneAndPushOverSSH(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewGitServer(t)
	sshd := testenv.NewSSHServer(t, srv)
	srv.NewRepo(t, "acme/gitops", map[string]string{"app/a.yaml": "gpu: 0.5\n"})
	url := sshd.RepoURL("acme/gitops")
	auth := scm.Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: sshd.KnownHostsFile}

	r1, err := scm.Clone(ctx, url, "main", filepath.Join(t.TempDir(), "one"), auth)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(r1.Dir(), "app", "a.yaml"))
	require.NoError(t, err)
	require.Equal(t, "gpu: 0.5\n", string(b))
	require.Equal(t, head(t, srv, "acme/gitops", "main"), r1.Base())

	c1 := commit(t, r1, "gpu: 0.25\n")
	require.NoError(t, r1.Push(ctx, "gpu-rightsizing/a", c1, plumbing.ZeroHash))
	require.Equal(t, c1, head(t, srv, "acme/gitops", "gpu-rightsizing/a"))
	branches, err := r1.Branches(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	require.Equal(t, map[string]plumbing.Hash{"gpu-rightsizing/a": c1}, branches)

	c2 := commit(t, r1, "gpu: 0.3\n")
	require.NoError(t, r1.Push(ctx, "gpu-rightsizing/a", c2, c1), "a push with a lease")
	require.Equal(t, c2, head(t, srv, "acme/gitops", "gpu-rightsizing/a"))
	got, err := r1.Head(ctx, "gpu-rightsizing/a")
	require.NoError(t, err)
	require.Equal(t, "change a", got.Message)

	c3 := commit(t, r1, "gpu: 0.4\n")
	err = r1.Push(ctx, "gpu-rightsizing/a", c3, c1)
	require.ErrorIs(t, err, scm.ErrLeaseBroken, "the branch moved since c1")
	require.Equal(t, c2, head(t, srv, "acme/gitops", "gpu-rightsizing/a"))
}

// TestSSHRefuses: the server's host key is always checked, and a key the
// server does not know gets nothing; each failure says what is wrong.
func TestSSHRefuses(t *testing.T) {
	ctx := context.Background()
	srv := testenv.NewGitServer(t)
	sshd := testenv.NewSSHServer(t, srv)
	srv.NewRepo(t, "acme/gitops", map[string]string{"a.yaml": "x\n"})
	dir := t.TempDir()
	other := testenv.WriteSSHKey(t, filepath.Join(dir, "other"))
	knownHosts := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	hostLine := func(key ssh.PublicKey) string {
		return fmt.Sprintf("[127.0.0.1]:%d %s", sshd.Port, ssh.MarshalAuthorizedKey(key))
	}
	tests := []struct {
		name string
		url  string
		auth scm.Auth
		err  string
	}{
		{
			name: "another host key for the server",
			auth: scm.Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: knownHosts("changed", hostLine(other))},
			err:  "knownhosts: key mismatch: the server's ssh-ed25519 host key is not the one " + filepath.Join(dir, "changed") + " holds for 127.0.0.1:",
		},
		{
			name: "the server is not in known_hosts",
			auth: scm.Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: knownHosts("other-host", "[127.0.0.1]:1 "+string(ssh.MarshalAuthorizedKey(sshd.HostKey)))},
			err:  "knownhosts: key is unknown",
		},
		{
			name: "an empty known_hosts",
			auth: scm.Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: knownHosts("empty", "")},
			err:  "knownhosts: key is unknown",
		},
		{
			name: "a key the server does not authorize",
			auth: scm.Auth{SSHKeyFile: filepath.Join(dir, "other"), KnownHostsFile: sshd.KnownHostsFile},
			err:  "unable to authenticate",
		},
		{
			name: "no known_hosts",
			auth: scm.Auth{SSHKeyFile: sshd.KeyFile},
			err:  "an SSH key needs a known_hosts file to check the server against",
		},
		{
			name: "a known_hosts file that is not there",
			auth: scm.Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: filepath.Join(dir, "absent")},
			err:  "known_hosts: read " + filepath.Join(dir, "absent") + ": no such file or directory",
		},
		{
			name: "a known_hosts that is a device",
			auth: scm.Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: "/dev/zero"},
			err:  "known_hosts: read /dev/zero: not a regular file",
		},
		{
			name: "a key file that is a device",
			auth: scm.Auth{SSHKeyFile: "/dev/zero", KnownHostsFile: sshd.KnownHostsFile},
			err:  "SSH key: read /dev/zero: not a regular file",
		},
		{
			name: "a key file that is not a key",
			auth: scm.Auth{SSHKeyFile: knownHosts("not-a-key", "hello\n"), KnownHostsFile: sshd.KnownHostsFile},
			err:  "read SSH key " + filepath.Join(dir, "not-a-key"),
		},
		{
			name: "an HTTPS URL with an SSH key",
			url:  srv.RepoURL("acme/gitops"),
			auth: scm.Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: sshd.KnownHostsFile},
			err:  "an SSH key needs an SSH URL (ssh://user@host/path or user@host:path), got \"" + srv.RepoURL("acme/gitops") + "\"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := cmp.Or(tt.url, sshd.RepoURL("acme/gitops"))
			_, err := scm.Clone(ctx, url, "main", filepath.Join(t.TempDir(), "c"), tt.auth)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestIsSSHURL(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"ssh://git@github.com/acme/gitops.git", true},
		{"ssh://git@127.0.0.1:2222/srv/git/gitops.git", true},
		{"git@github.com:acme/gitops.git", true},
		{"https://github.com/acme/gitops.git", false},
		{"/srv/git/gitops.git", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			require.Equal(t, tt.want, scm.IsSSHURL(tt.url))
		})
	}
}

// TestPushToALocalRepositoryRunsNoHook: pushing to a repository on the
// local disk (`--scm local`, a file path) writes its objects and branch
// in-process, so none of the repository's server-side hooks runs —
// neither in .git/hooks nor where core.hooksPath points — and the lease
// still holds.
func TestPushToALocalRepositoryRunsNoHook(t *testing.T) {
	ctx := context.Background()
	gitBin := testenv.LookPath(t, "git")
	for _, bare := range []bool{false, true} {
		t.Run(fmt.Sprintf("bare=%t", bare), func(t *testing.T) {
			dir := t.TempDir()
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command(gitBin, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
					"GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com")
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
				return strings.TrimSpace(string(out))
			}
			if bare {
				run("init", "-q", "--bare", "-b", "main", ".")
				work := t.TempDir()
				require.NoError(t, os.MkdirAll(filepath.Join(work, "app"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(work, "app", "a.yaml"), []byte("gpu: 0.5\n"), 0o644))
				run("--work-tree="+work, "add", "-A")
				run("--work-tree="+work, "commit", "-q", "-m", "init")
			} else {
				run("init", "-q", "-b", "main")
				require.NoError(t, os.MkdirAll(filepath.Join(dir, "app"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "app", "a.yaml"), []byte("gpu: 0.5\n"), 0o644))
				run("add", "-A")
				run("commit", "-q", "-m", "init")
			}
			gitDir := run("rev-parse", "--absolute-git-dir")
			fired := filepath.Join(t.TempDir(), "fired")
			hooks := []string{"pre-receive", "update", "post-receive", "post-update", "reference-transaction", "proc-receive", "push-to-checkout"}
			elsewhere := t.TempDir()
			for _, d := range []string{filepath.Join(gitDir, "hooks"), elsewhere} {
				require.NoError(t, os.MkdirAll(d, 0o755))
				for _, h := range hooks {
					require.NoError(t, os.WriteFile(filepath.Join(d, h), []byte("#!/bin/sh\necho "+h+" >> "+fired+"\n"), 0o755))
				}
			}
			clone := filepath.Join(t.TempDir(), "c")
			r, err := scm.Clone(ctx, dir, "main", clone, scm.Auth{})
			require.NoError(t, err)
			h := commit(t, r, "gpu: 0.7\n")
			require.NoError(t, r.Push(ctx, "gpu-rightsizing/a", h, plumbing.ZeroHash))
			// The commit's objects are one pack, written in the clone and
			// linked.
			packs := func(root string) []string {
				p, err := filepath.Glob(filepath.Join(root, "objects", "pack", "*.pack"))
				require.NoError(t, err)
				return p
			}
			linked := false
			for _, a := range packs(filepath.Join(clone, ".git")) {
				for _, b := range packs(gitDir) {
					fa, errA := os.Stat(a)
					fb, errB := os.Stat(b)
					linked = linked || errA == nil && errB == nil && os.SameFile(fa, fb)
				}
			}
			require.True(t, linked, "the commit's pack is linked from the clone")
			require.Contains(t, run("cat-file", "-t", h.String()), "commit")
			run("config", "core.hooksPath", elsewhere)
			h2 := commit(t, r, "gpu: 0.8\n")
			require.NoError(t, r.Push(ctx, "gpu-rightsizing/a", h2, h), "the lease holds: the branch is where it was read")
			require.ErrorIs(t, r.Push(ctx, "gpu-rightsizing/a", h, h), scm.ErrLeaseBroken, "the branch moved since")
			require.ErrorIs(t, r.Push(ctx, "gpu-rightsizing/a", h, plumbing.ZeroHash), scm.ErrLeaseBroken, "it exists now")

			require.Equal(t, h2.String(), run("rev-parse", "refs/heads/gpu-rightsizing/a"))
			require.Equal(t, "gpu: 0.8", run("show", "gpu-rightsizing/a:app/a.yaml"))
			run("fsck", "--strict")
			b, _ := os.ReadFile(fired)
			require.Empty(t, string(b), "hooks ran")
		})
	}
}
